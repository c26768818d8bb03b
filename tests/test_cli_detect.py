"""The command-line contract of replay / classify / agents (run as real subprocesses)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from panewatch.golden.cases import bundled_root

FULL_BASH = bundled_root() / "claude-code/2.1.332/full_bash/session.cast"


def panewatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "panewatch", *args], capture_output=True, text=True, timeout=60)


def test_replay_json_prints_one_line_per_state_change() -> None:
    out = panewatch("replay", "--json", str(FULL_BASH))
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0]["t"] == 0.0  # the initial verdict
    assert [line["state"] for line in lines] == ["idle", "working", "blocked", "working", "idle"]
    blocked = lines[2]
    assert blocked["rule"] == "permission-question" and 9.1 <= blocked["t"] <= 9.4
    assert all({"t", "state", "rule"} <= line.keys() for line in lines)


def test_replay_rejects_unknown_agent_and_bad_file(tmp_path: Path) -> None:
    out = panewatch("replay", "--agent", "nope", str(FULL_BASH))
    assert out.returncode != 0 and "unknown agent 'nope'" in out.stderr and "claude" in out.stderr
    bad = tmp_path / "bad.cast"
    bad.write_text("not a cast\n")
    out = panewatch("replay", str(bad))
    assert out.returncode == 1 and "asciicast" in out.stderr


def test_classify_every_file_gets_a_verdict_and_unreadable_ones_an_error(tmp_path: Path, example: bytes) -> None:
    raw = tmp_path / "dialog.raw"
    raw.write_bytes(example)
    garbage = tmp_path / "garbage.raw"
    garbage.write_bytes(bytes(range(256)) * 40)
    missing = tmp_path / "missing.raw"
    out = panewatch("classify", "--json", str(raw), str(missing), str(garbage), str(FULL_BASH))
    assert out.returncode == 1
    assert "missing.raw: cannot read" in out.stderr
    verdicts = {Path(v["file"]).name: v for v in map(json.loads, out.stdout.splitlines())}
    assert verdicts["dialog.raw"]["state"] == "blocked"
    assert verdicts["garbage.raw"]["state"] in ("idle", "working", "blocked")
    assert verdicts["session.cast"]["state"] == "idle"  # the cast ends after claude exited


def test_classify_show_prints_the_judged_screen(example: bytes, tmp_path: Path) -> None:
    raw = tmp_path / "dialog.raw"
    raw.write_bytes(example)
    out = panewatch("classify", "--agent", "claude", "--show", str(raw))
    assert out.returncode == 0
    assert "blocked  claude/permission-question" in out.stdout
    assert "│ ❯ 1. Yes" in out.stdout and "title: ''" in out.stdout


def test_agents_check_reports_every_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[agent]\nid = "x"\n[[rules]]\nid = "a"\nstate = "nope"\nany = ["("]\n')
    out = panewatch("agents", "check", str(bad))
    assert out.returncode == 1
    assert "3 problem(s)" in out.stdout and "rule #1 'a'" in out.stdout and "does not compile" in out.stdout


def test_agents_check_runs_a_valid_manifest_over_the_corpus(tmp_path: Path) -> None:
    bundled = (bundled_root().parents[1] / "agents" / "codex.toml").read_text()
    out = panewatch("agents", "check", str(bundled_root().parents[1] / "agents" / "codex.toml"))
    assert out.returncode == 0 and re.search(r"^(\d+)/\1 corpus cases pass$", out.stdout, re.MULTILINE)
    # Blinding the three approval rules leaves the quiet Codex approval undetected: a regression.
    broken = tmp_path / "codex.toml"
    for evidence in ("Action Required", "Press enter to confirm", "run the following command"):
        bundled = bundled.replace(evidence, "Never shown")
    broken.write_text(bundled)
    out = panewatch("agents", "check", str(broken))
    assert out.returncode == 1 and "FAIL codex/0.171.0/altscreen" in out.stdout


def test_agents_list_and_explain() -> None:
    out = panewatch("agents", "list")
    assert out.returncode == 0 and "NOT verified" in out.stdout and "2.1.332" in out.stdout
    out = panewatch("agents", "explain", str(FULL_BASH))
    assert out.returncode == 0
    assert "✔ blocked  permission-question" in out.stdout and "matched on row 25" in out.stdout
