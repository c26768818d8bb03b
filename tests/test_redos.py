"""Issue 10, defect 3: a catastrophic-backtracking rule and a pane printing a long line of `a`s froze
the daemon; `classify` and `agents check` hung too. Each of these ran forever before the fix (under
`re`, `^(a+)+$` on a row of 80 `a` and a `!` is 2^80 steps); the failure signal is a subprocess
timeout or the test's own timeout, never a measured duration."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fake_claude import write_fake
from panewatch.core.classify import Quarantine, explain
from panewatch.core.detector import PaneDetector
from panewatch.core.manifest import bundled_texts, load_manifest_text
from panewatch.core.screen import Screen
from panewatch.runtime.live import LivePane, ManifestWatcher

CLASSIC = [r"^(a+)+$", r"(a|a)*$", r"(\w+\s?)+$"]
AS = "a" * 5000 + "!"  # wraps at 120 columns: the bottom row is 80 `a` and the `!`
CLAUDE = dict(bundled_texts())["panewatch/agents/claude.toml"]
TIMEOUT = 60  # seconds: each command takes a second or two; before the fix they never ended


def bad_rule(pattern: str, state: str = "blocked") -> str:
    return (f"[[rules]]\nid = \"aaa\"\nstate = \"{state}\"\nregion = \"bottom:1\"\nany = ['{pattern}']\n"
            "note = \"a user's rule that backtracks catastrophically under re\"\n")


def claude_with(pattern: str) -> str:
    """The bundled Claude manifest with the bad rule first (a user's copy in the config dir)."""
    head, sep, rest = CLAUDE.partition("[[rules]]")
    return head + bad_rule(pattern) + "\n" + sep + rest


def panewatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "panewatch", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=os.environ.copy())


def user_agents() -> Path:
    folder = Path(os.environ["PANEWATCH_CONFIG_DIR"]) / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("pattern", CLASSIC)
def test_classify_of_a_line_of_as_finishes(tmp_path: Path, pattern: str) -> None:
    (user_agents() / "claude.toml").write_text(claude_with(pattern), encoding="utf-8")
    raw = tmp_path / "aaa.raw"
    raw.write_text(AS)
    out = panewatch("classify", "--json", str(raw))
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["error"] is None and out.stderr == ""
    # `(a|a)*$` matches the empty string at the end of the row, as it does under re (eventually).
    expected = ("blocked", "claude/aaa") if pattern == "(a|a)*$" else ("idle", None)
    assert (verdict["state"], verdict["rule"]) == expected


@pytest.mark.parametrize("pattern", CLASSIC)
def test_agents_check_runs_such_a_rule_over_the_corpus_and_finishes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    pattern: str) -> None:
    case = tmp_path / "corpus" / "toy" / "1" / "aaa"
    case.mkdir(parents=True)
    (case / "truth.json").write_text(json.dumps({"agent": "toy", "agent_version": "1",
                                                 "timeline": [{"t": 0.0, "state": "idle"}]}))
    (case / "session.cast").write_text(json.dumps({"version": 2, "width": 120, "height": 32}) + "\n"
                                       + json.dumps([0.5, "o", AS]) + "\n")
    monkeypatch.setenv("PANEWATCH_CORPUS", str(tmp_path / "corpus"))
    manifest = tmp_path / "toy.toml"
    manifest.write_text("[agent]\nid = \"toy\"\n" + bad_rule(pattern), encoding="utf-8")
    out = panewatch("agents", "check", str(manifest))
    assert "valid manifest for agent 'toy' (1 rules)" in out.stdout, out.stdout + out.stderr
    assert "toy/1/aaa" in out.stdout and "1 corpus cases pass" in out.stdout


@pytest.mark.parametrize(("pattern", "reason"), [(r"(?=a)a", "lookahead"), (r"(a)\1", "backreference"),
                                                 (r"\ba", r"\b or \B")])
def test_agents_check_refuses_what_re2_cannot_run_naming_rule_and_pattern(tmp_path: Path, pattern: str,
                                                                          reason: str) -> None:
    manifest = tmp_path / "toy.toml"
    manifest.write_text("[agent]\nid = \"toy\"\n" + bad_rule(pattern), encoding="utf-8")
    out = panewatch("agents", "check", str(manifest))
    assert out.returncode == 1
    assert f"{manifest}: 1 problem(s)" in out.stdout
    assert f"rule #1 'aaa': `any` pattern {pattern!r} is not supported: " in out.stdout and reason in out.stdout


def test_the_watcher_keeps_the_last_good_manifest_when_an_edit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "toy.toml"
    path.write_text("[agent]\nid = \"toy\"\n" + bad_rule("^(a+)+$"), encoding="utf-8")
    errors: list[str] = []
    watcher = ManifestWatcher(tmp_path, on_error=errors.append)
    assert watcher.get("toy") is not None and errors == []
    path.write_text("[agent]\nid = \"toy\"\n" + bad_rule(r"(?<=b)a+"), encoding="utf-8")
    os.utime(path, ns=(2_000_000_000_000_000_000,) * 2)
    assert watcher.check()
    [error] = errors
    assert str(path) in error and "rule #1 'aaa'" in error and "'(?<=b)a+'" in error and "lookbehind" in error
    assert "keeping the last good 'toy' manifest" in error
    assert watcher.get("toy").rules[0].any[0].pattern == "^(a+)+$"  # type: ignore[union-attr]


TOY = """
[agent]
id = "toy"
[[rules]]
id = "dialog"
state = "blocked"
any = ['DIALOG']
note = "x"
[[rules]]
id = "spin"
state = "working"
any = ['SPIN']
note = "x"
[[rules]]
id = "ready"
state = "idle"
any = ['READY']
note = "x"
"""


def test_a_rule_over_budget_is_quarantined_on_its_pane_only() -> None:
    manifests = [load_manifest_text(TOY, "toy.toml")]
    readings = iter([0.0, 0.0, 0.2] + [0.2] * 100)  # cost clock: start, after `dialog`, after `spin` (200 ms)
    slow_pane = PaneDetector(lambda: manifests, Screen(40, 5), agent_id="toy",
                             quarantine=Quarantine(clock=lambda: next(readings)))
    other_pane = PaneDetector(lambda: manifests, Screen(40, 5), agent_id="toy")
    for pane in (slow_pane, other_pane):
        pane.feed(0.0, b"READY")
    first = slow_pane.classify_now()
    assert (first.state, first.rule) == ("idle", "ready")  # RE2 finished: this verdict stands ...
    assert "rule toy/spin quarantined on this pane: it took 200 ms (budget 50 ms)" in first.error
    assert "'SPIN'" in first.error  # ... and names the rule and its pattern
    for pane in (slow_pane, other_pane):
        pane.feed(1.0, b"\r\nSPIN")
    skipped = slow_pane.classify_now()
    assert (skipped.state, skipped.rule) == ("idle", "ready") and "toy/spin quarantined" in skipped.error
    other_pane.classify_now()
    assert (other_pane.verdict.state, other_pane.verdict.rule, other_pane.verdict.error) == ("working", "spin", "")
    slow_pane.feed(2.0, b"\r\nDIALOG")  # rules before the quarantined one still decide, without an error
    assert (slow_pane.classify_now().state, slow_pane.verdict.error) == ("blocked", "")
    reloaded = [load_manifest_text(TOY, "toy.toml")]  # a reload (a new list) gives every rule a fresh chance
    slow_pane.manifests = lambda: reloaded
    slow_pane.feed(3.0, b"\x1b[2J\x1b[HSPIN")
    assert (slow_pane.classify_now().state, slow_pane.verdict.error) == ("working", "")


def test_explain_marks_a_quarantined_rule() -> None:
    manifest = load_manifest_text(TOY, "toy.toml")
    quarantine = Quarantine()
    quarantine.add("toy", manifest.rules[1], 0.3)
    screen = Screen(40, 5)
    screen.feed(b"SPIN READY")
    verdict, trace = explain(screen.snapshot(), manifest, quarantine)
    assert [(t.rule.id, t.matched, t.skipped) for t in trace] == [("dialog", False, False), ("spin", False, True),
                                                                   ("ready", True, False)]
    assert verdict.state == "idle" and "toy/spin quarantined" in verdict.error


ASKS = r'''
import os, sys, tty
tty.setcbreak(0)
sys.stdout.write("a" * 5000 + "!"); sys.stdout.flush()
os.read(0, 1)
sys.stdout.write("\r\n Bash command\r\n   rm -rf build/\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No\r\n")
sys.stdout.flush()
os.read(0, 1)
'''


@pytest.mark.timeout(90)  # before the fix the loop never came back from the first classification
def test_live_panes_keep_detecting_with_the_bad_rule(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "claude.toml").write_text(claude_with("^(a+)+$"), encoding="utf-8")
    watcher = ManifestWatcher(agents, interval=0.05)
    asks, fake = tmp_path / "asks.py", write_fake(tmp_path)
    asks.write_text(ASKS, encoding="utf-8")
    env = {**os.environ, "TERM": "xterm-256color"}

    async def until(pred: object, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while not pred():  # type: ignore[operator]
            assert loop.time() < deadline, what
            await asyncio.sleep(0.01)

    async def main() -> None:
        a = LivePane([sys.executable, str(asks)], agent="claude", cols=120, rows=32, env=env, manifests=watcher)
        b = LivePane([sys.executable, str(fake)], agent="claude", cols=80, rows=32, env=env, manifests=watcher)
        a.start()
        b.start()
        await until(lambda: a.snapshot().rows[-1].endswith("a!") and a.detector.stats.classifications > 0
                    and a.classify_now().state == "idle", "pane a judged its row of a's")
        await until(lambda: b.state.state == "working", "the other pane working")
        a.write(b"x")
        await until(lambda: a.state.state == "blocked", "pane a blocked by another rule of the same manifest")
        assert a.detector.verdict.rule == "permission-question" and a.detector.verdict.error == ""
        b.write(b"x")
        await until(lambda: b.state.state == "blocked", "the other pane blocked")
        a.write(b"x")
        b.write(b"q")
        await a.close()
        await b.close()

    asyncio.run(asyncio.wait_for(main(), 60))
