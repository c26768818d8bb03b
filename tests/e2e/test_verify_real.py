"""`panewatch agents verify` with the pinned real Claude Code: every scenario passes with the bundled
manifest, its captures go to the user's corpus with `--save` (where `agents check` finds them), and a
broken user manifest fails with the rule trace of the screen it misjudged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from panewatch.core.manifest import bundled_texts, load_all
from panewatch.testing.homes import find_agents_bin
from panewatch.testing.verify import SCENARIOS, table, verify

BIN = find_agents_bin()
pytestmark = pytest.mark.needs("agents")  # tests/components.py: fails without them unless PANEWATCH_SKIP=agents


def panewatch(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "panewatch", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, env={**os.environ})


@pytest.mark.timeout(600)
def test_every_scenario_passes_for_claude_and_saves_to_the_user_corpus(tmp_path: Path) -> None:
    corpus = Path(os.environ["PANEWATCH_DATA_DIR"]) / "corpus"
    results = verify("claude", load_all().list(), save_to=corpus, bin_dir=BIN)
    printed = "\n".join(table(results))
    assert [r.scenario.name for r in results] == [s.name for s in SCENARIOS]
    assert all(r.ok for r in results), printed
    states = {r.scenario.name: {state for _, state in r.case.timeline} for r in results if r.case}
    assert "blocked" in states["permission"] and "blocked" in states["edit"] and "blocked" in states["esc"]
    assert "blocked" not in states["trap"] and "blocked" not in states["working"]
    saved = sorted(p.parent.name for p in corpus.rglob("truth.json"))
    assert saved == sorted(f"verify_{s.name}_120x32" for s in SCENARIOS)

    bundled = next(text for source, text in bundled_texts() if source.endswith("/claude.toml"))
    candidate = tmp_path / "claude.toml"
    candidate.write_text(bundled, encoding="utf-8")
    check = panewatch("agents", "check", str(candidate))
    assert check.returncode == 0, check.stdout + check.stderr
    assert sum("verify_" in line and line.startswith("ok") for line in check.stdout.splitlines()) == len(SCENARIOS)


@pytest.mark.timeout(300)
def test_a_broken_user_manifest_fails_with_the_rule_trace(tmp_path: Path) -> None:
    bundled = next(text for source, text in bundled_texts() if source.endswith("/claude.toml"))
    # Break the dialog rules the way a CLI update would: the question and the footer reworded.
    broken = bundled.replace("Do you want to (?:proceed", "Do you wish to (?:proceed") \
        .replace("Esc to cancel · Tab to amend", "Esc to dismiss · Tab to amend") \
        .replace("all = ['^\\s*❯\\s*1\\.\\s+\\S', '^\\s*2\\.\\s+\\S']", "all = ['^\\s*❯\\s*1\\)\\s+\\S']")
    assert broken.count("wish") == 1 and "dismiss" in broken and "1\\)" in broken
    user_agents = Path(os.environ["PANEWATCH_CONFIG_DIR"]) / "agents"
    user_agents.mkdir(parents=True)
    (user_agents / "claude.toml").write_text(broken, encoding="utf-8")

    out = panewatch("agents", "verify", "claude", "--scenario", "permission,trap", "--quiet")
    lines = out.stdout.splitlines()
    assert out.returncode == 1, out.stdout + out.stderr
    assert "(user)" in lines[0]
    assert next(row for row in lines if row.startswith("permission ")).split()[1] == "FAIL"
    assert next(row for row in lines if row.startswith("trap ")).split()[1] == "pass"
    detail = out.stdout[out.stdout.index("permission: FAIL"):]
    assert "truth blocked" in detail
    # The trace of the misjudged dialog: each blocked rule that failed to match, and why.
    assert "· blocked  permission-question" in detail and "no `any` pattern matched" in detail
    assert "· blocked  cancel-amend-footer" in detail
    assert "1/2 scenarios pass" in out.stdout


@pytest.mark.timeout(900)
def test_verify_an_older_claude_code_installed_in_a_private_prefix() -> None:
    """`agents verify claude --version X.Y.Z`: that release from the npm registry, in a private prefix (reused
    once complete), driven through the scenarios with the manifests in force; the header names the release,
    not the pinned one, and says the manifest was not verified for it."""
    from panewatch.testing.versions import latest_releases, registry_versions

    older = next(v for v in reversed(latest_releases(registry_versions("claude"), 3))
                 if v not in load_all().get("claude").versions)  # type: ignore[union-attr]
    out = panewatch("agents", "verify", "claude", "--version", older, "--scenario", "permission,quote", "--quiet",
                    timeout=840)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"Claude Code {older} (") and "/versions/claude/" in lines[0], lines[0]
    assert f"not verified for {older}" in lines[0]
    assert next(row for row in lines if row.startswith("permission ")).split()[1].startswith("pass")
    assert next(row for row in lines if row.startswith("quote ")).split()[1].startswith("pass")
    assert f"2/2 scenarios pass for Claude Code {older}" in out.stdout
    refused = panewatch("agents", "verify", "aider", "--version", "0.86.1", "--quiet")
    assert refused.returncode == 2 and "Python package" in refused.stderr
