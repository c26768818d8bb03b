"""The pinned OpenCode, GitHub Copilot CLI and Aider under panewatch's live runtime (issue 14, item 4).

Like test_live_real.py (which runs Claude Code, Codex, Gemini CLI and Qwen Code): a headless LivePane
against the mock model server, the live state timeline scored against the scenario's truth (derived
from the recording: literals + mock events, never our classifier); the prose trap never turns blocked.
Own file for the slower start-ups (OpenCode 1.18: 30-50 s on a loaded machine) and per-agent budgets.

Skipped without the CLIs (scripts/install-agents). Every wait polls with a deadline; no latency is
asserted (`panewatch bench agents` measures them).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from livecheck import check_against_truth

from panewatch.core.prompt import RIGHT
from panewatch.errors import PaneBlockedError
from panewatch.runtime.guard import InputGuard
from panewatch.testing.agents import LiveAgent
from panewatch.testing.capture import final_literal
from panewatch.testing.homes import Launch, find_agents_bin

BIN = find_agents_bin()
pytestmark = pytest.mark.skipif(BIN is None, reason="pinned agent CLIs not installed: run scripts/install-agents "
                                                    "(or set PANEWATCH_AGENTS_BIN to their bin dir)")
SLOW = {"opencode": 4.0, "copilot": 2.0, "aider": 2.0}  # OpenCode: 30-50 s to start, 10-25 s per step at load 15
AGENTS = [pytest.param(a, marks=pytest.mark.timeout(int(150 * f))) for a, f in SLOW.items()]
STARTUP, STEP = 60.0, 45.0


def _need(agent: str) -> None:
    assert BIN is not None
    if not (BIN / agent).exists():
        pytest.skip(f"{agent} not in {BIN}")


def _run(agent: str, make: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(make(), 130 * SLOW[agent]))


async def _answer(agent: LiveAgent, guard: InputGuard, kind: str = "allow_once") -> None:
    """Answer through the guard by option: Copilot's numbered list, Aider's lettered question, OpenCode's
    options on one row (arrows from the first option, then Enter)."""
    prompt = guard.prompt()
    allow = prompt.option(kind)
    assert allow is not None, (prompt.question, prompt.options)
    for attempt in range(1, 4):
        result = await guard.answer(allow.number, guard.prompt().fingerprint, timeout=10)
        if result.cleared:
            return
        print(f"\n{agent.agent}: answer #{attempt} not taken; the prompt is still up")
    raise AssertionError(agent.text())


@pytest.mark.parametrize("name", AGENTS)
def test_live_pane_bash_blocked_answered_and_idle(name: str, tmp_path: Path) -> None:
    _need(name)
    agent = LiveAgent(name, tmp_path)
    factor = SLOW[name]

    async def go() -> None:
        async with agent:
            assert await agent.ready(STARTUP * factor), agent.text()
            dialog = agent.profile.dialogs["bash"][0]
            await agent.submit("SCN=bash DELAY=1 run the scripted scenario", timeout=10 * factor)
            blocked = await agent.wait_state("blocked", STEP * factor)
            assert blocked is not None, agent.text()
            assert await agent.until(lambda: dialog in agent.text(), 10), agent.text()
            guard = InputGuard(agent.pane, pane_id=agent.pane_id)
            with pytest.raises(PaneBlockedError):
                await guard.send("this must not land in the dialog")
            answered_at = len(agent.changes)
            await _answer(agent, guard)
            assert await agent.turn_over(STEP * factor), agent.text()
            assert any(c.new.state == "working" for c in agent.changes[answered_at:])
    _run(name, go)
    blocked = [c for c in agent.changes if c.new.state == "blocked"]
    assert len(blocked) == 1 and blocked[0].new.source == "screen", blocked
    assert {c.agent for c in agent.changes if c.agent} == {name}
    check_against_truth(agent)


@pytest.mark.parametrize("name", AGENTS)
def test_live_pane_prose_trap_stays_idle(name: str, tmp_path: Path) -> None:
    _need(name)
    agent = LiveAgent(name, tmp_path)
    factor = SLOW[name]

    async def go() -> None:
        async with agent:
            assert await agent.ready(STARTUP * factor), agent.text()
            await agent.submit("SCN=trap DELAY=1 explain the dialog", timeout=10 * factor)
            assert await agent.turn_over(STEP * factor), agent.text()
    _run(name, go)
    assert "blocked" not in {c.new.state for c in agent.changes}
    assert "working" in {c.new.state for c in agent.changes}
    check_against_truth(agent)


@pytest.mark.timeout(int(150 * SLOW["opencode"]))
@pytest.mark.parametrize("moved", [False, True], ids=["as-opened", "user-moved-the-selection"])
def test_opencode_dialog_rejected_by_option_through_the_guard(tmp_path: Path, moved: bool) -> None:
    """OpenCode's options sit on one row; 'Reject' is two to the right of the first: the guard types →→⏎
    and the tool call is refused (OpenCode tells the model so), not run. OpenCode shows the selection only
    as a colour: when the user moved it (→, to 'Allow always') before answering, the guard reads where it
    is from the row's cells and types → ⏎, not a →→⏎ that would wrap round to 'Allow once'."""
    _need("opencode")
    agent = LiveAgent("opencode", tmp_path)
    factor = SLOW["opencode"]

    async def go() -> None:
        async with agent:
            assert await agent.ready(STARTUP * factor), agent.text()
            await agent.submit("SCN=bash DELAY=1 run the scripted scenario", timeout=10 * factor)
            assert await agent.wait_state("blocked", STEP * factor) is not None, agent.text()
            assert await agent.until(lambda: agent.profile.dialogs["bash"][0] in agent.text(), 10), agent.text()
            guard = InputGuard(agent.pane, pane_id=agent.pane_id)
            if moved:  # the user's own key at their terminal, not through the guard
                agent.pane.write(RIGHT.encode())
                assert await agent.until(lambda: guard.prompt().options[1].selected, 10 * factor), agent.text()
            prompt = guard.prompt()
            assert prompt.selection_seen and prompt.options[1 if moved else 0].selected, prompt.options
            reject = prompt.option("reject")
            assert reject is not None and reject.key == RIGHT * (1 if moved else 2) + "\r", prompt.options
            result = await guard.answer("reject", prompt.fingerprint, timeout=10 * factor)
            assert result.cleared, agent.text()
            # The refusal ends the turn there (no final reply): the composer back without its busy row.
            profile = agent.profile

            def composer_back() -> bool:
                text = agent.text()
                return any(r in text for r in profile.ready) and not any(b in text for b in profile.busy)
            assert await agent.until(lambda: composer_back() and agent.pane.state.state == "idle", STEP * factor), \
                agent.text()
            # Not 'Allow once' (the `touch` runs: '(no output)' under it, then the final reply), nor 'Allow
            # always' (a second, 'Always allow' confirmation would be up).
            text = agent.text()
            assert "(no output)" not in text and final_literal("bash") not in text, text
            assert "Always allow" not in text and not agent.mock_reply_sent("end_turn"), text
    _run("opencode", go)


def _copilot_users_own_hook(launch: Launch, marker: Path) -> None:
    """A hooks file of the user's in Copilot's hooks folder: it must keep running next to panewatch's plugin."""
    folder = Path(launch.home) / ".copilot" / "hooks"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mine.json").write_text(json.dumps({"version": 1, "hooks": {"preToolUse": [
        {"type": "command", "bash": f"touch {marker}", "timeoutSec": 5}]}}))


@pytest.mark.timeout(int(150 * SLOW["copilot"]))
def test_copilot_hooks_move_the_state_and_the_users_hooks_still_run(tmp_path: Path) -> None:
    """Copilot CLI with panewatch's per-launch plugin (`--plugin-dir`, runtime/hookinject.py): its real hook
    calls reach the report socket in order (userPromptSubmitted, preToolUse, then the permission_prompt
    notification once the prompt is on screen, ..., agentStop), each moves the pane, the answer through the
    guard ends the block, and the user's own hooks file still runs."""
    _need("copilot")
    marker = tmp_path / "user-hook-ran"
    agent = LiveAgent("copilot", tmp_path, hooks=True, setup=lambda launch: _copilot_users_own_hook(launch, marker))
    factor = SLOW["copilot"]

    async def go() -> None:
        async with agent:
            assert await agent.ready(STARTUP * factor), agent.text()
            dialog = agent.profile.dialogs["bash"][0]
            await agent.submit("SCN=bash DELAY=1 run the scripted scenario", timeout=10 * factor)
            assert await agent.wait_state("blocked", STEP * factor) is not None, agent.text()
            assert await agent.until(lambda: dialog in agent.text(), 10), agent.text()
            await _answer(agent, InputGuard(agent.pane, pane_id=agent.pane_id))
            assert await agent.turn_over(STEP * factor), agent.text()
    _run("copilot", go)
    assert agent.report_server is not None
    assert agent.report_server.accepted >= 5 and not agent.report_server.rejected
    got = [(r.detail.split()[0], r.state, after.state, after.source) for r, after in agent.reports]
    events = [event for event, *_ in got]
    assert events[:3] == ["userPromptSubmitted", "preToolUse", "Notification"] and events[-1] == "agentStop", got
    assert "permissionRequest" not in events  # not subscribed: it fires before Copilot's own approval rules
    asked = events.index("Notification")
    assert got[asked][1] == "blocked", got  # the prompt on screen
    assert "postToolUse" in events[asked:], got  # the granted call ran
    for _event, reported, state, source in got:
        # Each report moved the pane to what it says, unless a blocked screen held it (combine row 2).
        assert (source, state) in (("hook", "idle" if reported == "done" else reported), ("screen", "blocked")), got
    states = [c.new.state for c in agent.changes if c.new.state != "exited"]
    assert states[-1] == "idle"
    assert states.count("blocked") == 1, [(c.new.state, c.new.source, c.new.rule) for c in agent.changes]
    assert marker.exists()  # the user's hooks run beside panewatch's plugin
    check_against_truth(agent, early=frozenset({"blocked"}))
