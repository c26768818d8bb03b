""""This state is wrong": `panewatch report-wrong` on live panes saves a golden case that
`panewatch agents check` runs and that replays to the states the pane went through; no secret
typed into the pane reaches the folder."""

from __future__ import annotations

import asyncio
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from boardutil import AGENT, ServeProcess, cli, wait_state
from panewatch.board.daemon import Daemon
from panewatch.board.link import BoardLink
from panewatch.board.panes import RemotePane
from panewatch.core.manifest import load_all
from panewatch.golden.cases import GoldenCase, bundled_root
from panewatch.golden.run import run_case
from panewatch.runtime.live import LivePane

SECRET = "sk-ant-api03-" + "Zq7Xw9" * 6
CLAUDE_MANIFEST = Path(str(resources.files("panewatch") / "agents" / "claude.toml"))
FILES = {"session.cast", "truth.json", "frames.json", "screen.txt", "trace.txt", "report.md"}


def saved(out: str) -> Path:
    line = next(line for line in out.splitlines() if line.startswith("saved: "))
    return Path(line.removeprefix("saved: "))


def load(folder: Path) -> GoldenCase:
    return GoldenCase(folder, json.loads((folder / "truth.json").read_text(encoding="utf-8")))


def no_secret_in(folder: Path) -> None:
    for path in folder.iterdir():
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        assert SECRET[13:25] not in text, path.name
        assert (path.stat().st_mode & 0o777) == 0o600, path.name
    assert (folder.stat().st_mode & 0o777) == 0o700


def collapsed(states: list[str]) -> list[str]:
    return [s for i, s in enumerate(states) if i == 0 or states[i - 1] != s]


def replays_to_the_recorded_states(case: GoldenCase) -> None:
    """The replay goes through the states the live pane published while its history was kept."""
    outcome = run_case(case, load_all().list(), agent=case.agent)
    recorded = [r["state"] for r in case.truth["recorded"]]
    replayed = [c.state for c in outcome.result.changes]
    assert collapsed(replayed)[-len(collapsed(recorded)):] == collapsed(recorded), (replayed, recorded)
    assert replayed[-1] == case.truth["reported"]["detected"]


def test_report_wrong_on_a_live_fake_agent_checks_and_replays(serve: ServeProcess, tmp_path: Path) -> None:
    out = cli("new", "--name", "fake", "--agent", "claude", "--", sys.executable, "-m", "panewatch.lab.fakeagent",
              "--seed", "7", "--tasks", "1", check=True)
    pane = out.stdout.strip()
    wait_state(pane, "idle")
    cli("send", pane, f"deploy with ANTHROPIC_API_KEY={SECRET} please", check=True)  # working ~0.5 s, then asks
    blocked = wait_state(pane, "blocked")

    # The user agrees with the verdict: the case passes, as `agents check` says.
    out = cli("report-wrong", pane, "--expected", "blocked", check=True)
    folder = saved(out.stdout)
    assert folder.parent == tmp_path / "data" / "corpus" / "claude" / "unknown"
    assert folder.name.startswith("wrong-") and folder.name.endswith("-fake")
    assert {p.name for p in folder.iterdir()} == FILES
    assert "panewatch agents check" in out.stdout and str(CLAUDE_MANIFEST) in out.stdout
    no_secret_in(folder)
    case = load(folder)
    assert case.truth["reported"]["detected"] == "blocked" and case.truth["reported"]["expected"] == "blocked"
    assert case.timeline[-1][1] == "blocked"
    assert "ANTHROPIC_API_KEY=" in case.cast().output_bytes().decode("utf-8", "replace")  # masked, not cut
    assert "Do you want to proceed?" in (folder / "screen.txt").read_text(encoding="utf-8")
    assert "matched on row" in (folder / "trace.txt").read_text(encoding="utf-8")
    assert run_case(case, load_all().list(), agent="claude").ok
    replays_to_the_recorded_states(case)

    # Answered, and now idle; the user says it is still blocked: the case fails, as it should.
    cli("answer", pane, "1", "--yes", "--fingerprint", blocked["prompt"]["fingerprint"], check=True)
    wait_state(pane, "idle")
    wrong = load(saved(cli("report-wrong", pane, "--expected", "blocked", check=True).stdout))
    assert wrong.truth["reported"]["detected"] == "idle"
    assert not run_case(wrong, load_all().list(), agent="claude").ok
    replays_to_the_recorded_states(wrong)
    no_secret_in(wrong.path)

    check = cli("agents", "check", str(CLAUDE_MANIFEST), timeout=300)
    assert f"ok   claude/unknown/{case.path.name}" in check.stdout, check.stdout
    assert f"FAIL claude/unknown/{wrong.path.name}" in check.stdout, check.stdout
    assert check.returncode == 1  # the user's report is a failing case until a manifest fixes it
    bundled = len(list(bundled_root().joinpath("claude-code").rglob("truth.json")))
    assert f"{bundled + 1}/{bundled + 2} corpus cases pass" in check.stdout

    # Not said: nothing is scored, the note says so, and the command says where it is.
    unsaid = load(saved(cli("report-wrong", pane, check=True).stdout))
    assert unsaid.timeline[-1][1] == "ignore" and "not which is right" in unsaid.truth["timeline"][-1]["note"]
    assert cli("report-wrong", pane, "--expected", "sleepy").returncode == 2
    assert "no pane '99'" in cli("report-wrong", "99").stderr


def test_a_run_pane_saves_its_case_in_its_own_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PANEWATCH_BOARD", "connect")

    async def body() -> None:
        pane = LivePane([sys.executable, str(AGENT), str(tmp_path / "log")], pane_id="run-7", agent="claude")
        link = BoardLink(pane)
        pane.start()
        daemon = Daemon()
        await daemon.start()
        try:
            link.start()
            handle: Any = None

            async def registered() -> Any:
                while not (found := next((h for h in daemon.hub.panes.values() if isinstance(h, RemotePane)), None)):
                    await asyncio.sleep(0.02)
                return found

            handle = await asyncio.wait_for(registered(), 15)
            while handle.card["state"] != "idle" or pane.verdict.rule != "shortcuts-footer":
                await asyncio.sleep(0.02)
            pane.write(b"b")
            while handle.card["state"] != "blocked":
                await asyncio.sleep(0.02)
            reply = await handle.report_wrong("idle")
            folder = Path(reply["path"])
            assert reply["state"] == "blocked" and reply["expected"] == "idle" and reply["agent"] == "claude"
            assert folder.parent == tmp_path / "data" / "corpus" / "claude" / "unknown"
            case = load(folder)
            assert not run_case(case, load_all().list(), agent="claude").ok  # blocked, the user says idle
            replays_to_the_recorded_states(case)
        finally:
            await link.close()
            await pane.close()
            await daemon.close()

    asyncio.run(asyncio.wait_for(body(), 60))
