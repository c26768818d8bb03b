"""The pinned real Claude Code, Codex, Gemini CLI and Qwen Code CLIs under panewatch's live runtime.

* a headless LivePane (live_agents.LiveAgent): the live state timeline scored against the
  scenario's truth (derived from the recording like a capture's: literals + mock tool windows,
  not our classifier); the answer goes through the input guard and the agent carries on;
* the prose trap never turns blocked;
* each CLI with panewatch's hooks (Claude `--settings`, Codex `-c` with their trust, Gemini and Qwen a
  per-launch settings file): real hook calls reach the runtime's socket and move the state, and the
  user's own hooks keep running;
* `panewatch run` inside an outer pty we own, as a user would run it.

Needs the pinned CLIs (scripts/install-agents; PANEWATCH_SKIP=agents opts out). Every wait polls
with a deadline. Live changes may lead (hooks) or lag (detection) the screen a little, so segments
are scored with LIVE_GRACE; no latency is asserted (`panewatch bench agents` measures them).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from livecheck import check_against_truth

from panewatch.errors import PaneBlockedError
from panewatch.runtime.guard import InputGuard
from panewatch.runtime.hookinject import codex_trust_hash
from panewatch.testing.agents import LiveAgent
from panewatch.testing.drive import PtyAgent
from panewatch.testing.homes import MOCK_KIND, Launch, find_agents_bin, prepare
from panewatch.testing.mock import MockServer

BIN = find_agents_bin()
pytestmark = pytest.mark.needs("agents")  # tests/components.py: fails without them unless PANEWATCH_SKIP=agents
AGENTS = ("claude", "codex", "gemini", "qwen")
HOOK_AGENTS = ("claude", "codex", "gemini", "qwen")  # the agents panewatch injects hooks into (runtime/hookinject.py)
STARTUP, STEP = 60.0, 45.0


def _run(make: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(make(), 110))


async def _bash_turn(agent: LiveAgent) -> None:
    """Prompt → blocked → answer 'allow once' through the input guard → working → idle."""
    assert await agent.ready(STARTUP), agent.text()
    dialog = agent.profile.dialogs["bash"][0]
    agent.watch(dialog)
    await agent.submit("SCN=bash DELAY=1 run the scripted scenario")
    blocked = await agent.wait_state("blocked", STEP)
    assert blocked is not None, agent.text()
    # Hooks can say blocked before the dialog is drawn: a user answers what they see (the whole dialog,
    # options included: Gemini CLI draws its question a moment before its options).
    assert await agent.until(lambda: dialog in agent.first_seen and agent.pane.verdict.state == "blocked",
                             10), agent.text()
    guard = InputGuard(agent.pane, pane_id=agent.pane_id)
    with pytest.raises(PaneBlockedError):
        await guard.send("this must not land in the dialog")
    answered_at = len(agent.changes)
    for attempt in range(1, 4):
        prompt = guard.prompt()
        assert dialog in prompt.question or dialog in prompt.body, prompt
        allow = prompt.option("allow_once")
        assert allow is not None, prompt.options
        result = await guard.answer(allow.number, prompt.fingerprint, timeout=5)
        if result.cleared:
            break
        # Seen with Codex 0.171.0 under load: the first key press on a fresh approval is dropped.
        # The guard says so (cleared=False, same prompt); a user presses again.
        print(f"\n{agent.agent}: answer #{attempt} not taken; the prompt is still up")
    assert result.cleared, agent.text()
    assert await agent.turn_over(STEP), agent.text()
    # The agent carried on: the tool's result went back to the model, then the final reply.
    steps = [(e["step"], e["stop_reason"]) for e in agent.mock.events if e["event"] == "reply_sent"]
    assert steps == [(0, "tool_use"), (1, "end_turn")]
    # Working across the quiet tool call and the model's thinking: never idle before the final reply.
    final = agent.mock_reply_sent("end_turn")[0]
    after = [c for c in agent.changes[answered_at:] if c.t < final]
    assert "idle" not in {c.new.state for c in after}, [(c.new.state, c.new.source) for c in after]
    assert any(c.new.state == "working" for c in agent.changes[answered_at:])


@pytest.mark.parametrize("name", AGENTS)
def test_live_pane_bash_answered_through_the_guard(name: str, tmp_path: Path) -> None:
    agent = LiveAgent(name, tmp_path)

    async def go() -> None:
        async with agent:
            await _bash_turn(agent)
    _run(go)
    blocked = [c for c in agent.changes if c.new.state == "blocked"]
    # Without hooks: the screen, or the agent's own OSC 7501 status a moment before it (Claude, Codex).
    assert len(blocked) == 1 and blocked[0].new.source in ("screen", "terminal"), blocked
    check_against_truth(agent)


@pytest.mark.parametrize("name", AGENTS)
def test_live_pane_prose_trap_stays_idle(name: str, tmp_path: Path) -> None:
    agent = LiveAgent(name, tmp_path)

    async def go() -> None:
        async with agent:
            assert await agent.ready(STARTUP), agent.text()
            await agent.submit("SCN=trap DELAY=1 explain the dialog")
            assert await agent.turn_over(STEP), agent.text()
    _run(go)
    assert "blocked" not in {c.new.state for c in agent.changes}
    assert "working" in {c.new.state for c in agent.changes}
    check_against_truth(agent)


@pytest.mark.parametrize("name", ("claude", "codex"))
def test_live_pane_program_status_osc_7501(name: str, tmp_path: Path) -> None:
    """Claude Code reports its state in OSC 7501 once the headless pane answers its probe; Codex does
    unasked. The statuses arrive with the screen they describe and decide the pane (combine row 3)."""
    agent = LiveAgent(name, tmp_path)

    async def go() -> None:
        async with agent:
            await _bash_turn(agent)
    _run(go)
    statuses = [(s.state, s.kind) for _, s in agent.pane.machine.program_status]
    assert ("blocked", "permission") in statuses, statuses
    first_blocked = statuses.index(("blocked", "permission"))
    assert "working" in [state for state, _ in statuses[first_blocked:]], statuses  # re-sent at the grant
    assert statuses[-1][0] in ("done", "clear"), statuses
    sources = {c.new.source for c in agent.changes}
    assert "terminal" in sources, [(c.new.state, c.new.source) for c in agent.changes]
    if name == "claude":  # answering the probe turned Claude's title spinner off (agents/SIGNALS.md)
        assert all(not c.new.rule or not c.new.rule.startswith("title") for c in agent.changes)
    check_against_truth(agent)


# The first events each agent's hooks report in the bash scenario (the dialog's report third), and its last.
# Qwen Code asks before PreToolUse (which fires once granted), and its Notification says permission_prompt.
HOOK_EVENTS = {
    "claude": (["UserPromptSubmit", "PreToolUse", "PermissionRequest"], "Stop"),
    "codex": (["UserPromptSubmit", "PreToolUse", "PermissionRequest"], "Stop"),
    "gemini": (["BeforeAgent", "BeforeTool", "Notification"], "AfterAgent"),
    "qwen": (["UserPromptSubmit", "PermissionRequest", "PreToolUse"], "Stop"),  # PreToolUse after the grant
}
BLOCKED_BY = {"gemini": "Notification"}  # the event whose report is the permission request (else PermissionRequest)


def _users_own_hook(launch: Launch, marker: Path) -> None:
    """A hook of the user's in their own settings: it must keep running next to panewatch's."""
    command = f"touch {marker}"
    if launch.agent == "claude":
        settings_file = Path(launch.home) / ".claude" / "settings.json"
        settings = json.loads(settings_file.read_text())
        settings["hooks"] = {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]}
        settings_file.write_text(json.dumps(settings))
    elif launch.agent == "codex":  # in config.toml, trusted there (as Codex's review screen would store it)
        config = Path(launch.extra["config"])
        key = f"{config}:pre_tool_use:0:0"
        config.write_text(config.read_text() + f"\n[[hooks.PreToolUse]]\nhooks = [{{type = \"command\", command = "
                          f"{json.dumps(command)}, timeout = 5}}]\n\n[hooks.state.{json.dumps(key)}]\n"
                          f"trusted_hash = {json.dumps(codex_trust_hash('PreToolUse', command, 5))}\n")
    elif launch.agent == "qwen":
        settings_file = Path(launch.home) / ".qwen" / "settings.json"
        settings = json.loads(settings_file.read_text())
        settings["hooks"] = {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}
        settings_file.write_text(json.dumps(settings))
    else:
        settings_file = Path(launch.home) / ".gemini" / "settings.json"
        settings = json.loads(settings_file.read_text())
        settings["hooks"] = {"BeforeTool": [{"hooks": [{"type": "command", "command": command}]}]}
        settings_file.write_text(json.dumps(settings))


@pytest.mark.parametrize("name", HOOK_AGENTS)
def test_live_pane_hooks_move_the_state_and_the_users_hooks_still_run(name: str, tmp_path: Path) -> None:
    if name == "gemini" and os.geteuid() != 0:
        pytest.skip("Gemini CLI reads a per-launch settings file only when it belongs to root")
    marker = tmp_path / "user-hook-ran"
    # Claude's probe unanswered: its OSC 7501 status would decide instead of the hooks (combine row 3).
    agent = LiveAgent(name, tmp_path, hooks=True, setup=lambda launch: _users_own_hook(launch, marker),
                      program_status=False)

    async def go() -> None:
        async with agent:
            await _bash_turn(agent)
    _run(go)
    assert agent.report_server is not None
    assert agent.report_server.accepted >= 4 and not agent.report_server.rejected
    got = [(r.detail.split()[0], r.state, after.state, after.source) for r, after in agent.reports]
    events = [event for event, *_ in got]
    first, last = HOOK_EVENTS[name]
    assert events[:3] == first and events[-1] == last, got
    asked = events.index(BLOCKED_BY.get(name, "PermissionRequest"))
    assert got[asked][1] == "blocked", got  # the permission request itself
    for _event, reported, state, source in got:
        # Each report moved the pane to what it says, unless a blocked screen held it (combine row 2) or
        # the agent's own status did (row 3: Codex writes OSC 7501 unasked).
        assert (source, state) in (("hook", "idle" if reported == "done" else reported), ("screen", "blocked")) \
            or source == "terminal", got
    # No hook fires for a granted permission: the screen moving on ended the dialog's 'blocked'.
    states = [c.new.state for c in agent.changes if c.new.state != "exited"]
    assert states[-1] == "idle"
    assert states.count("blocked") == 1, [(c.new.state, c.new.source, c.new.rule) for c in agent.changes]
    assert marker.exists()  # ours were added next to the user's settings, not instead of them
    check_against_truth(agent, early=frozenset({"blocked"}))


# -- `panewatch run` in an outer pty -------------------------------------------------------------

def _events(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("name", AGENTS)
def test_panewatch_run_bash(name: str, tmp_path: Path) -> None:
    from panewatch.testing.capture import PROFILES

    profile = PROFILES[name]
    dialog, _ = profile.dialogs["bash"]
    events, record = tmp_path / "events.jsonl", tmp_path / "session.cast"
    with MockServer(MOCK_KIND[name], clock=time.time) as mock:
        launch = prepare(name, tmp_path / "agent", mock.url, bin_dir=BIN)
        env = launch.env | {k: os.environ[k] for k in ("PANEWATCH_CONFIG_DIR", "PANEWATCH_RUNTIME_DIR",
                                                        "PANEWATCH_BOARD") if k in os.environ}
        config = Path(env.get("PANEWATCH_CONFIG_DIR", tmp_path / "config"))
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.toml").write_text("[notify]\nbackends = []\n")  # no desktop popups from tests
        argv = [sys.executable, "-m", "panewatch", "run", "--agent", name, "--pane-id", "e2e",
                "--events", str(events), "--record", str(record), "--", *launch.argv]
        outer = PtyAgent(argv, env=env, cwd=launch.cwd, cols=120, rows=32)
        outer.start()
        try:
            assert outer.wait_for(lambda s: any(r in s.text() for r in profile.ready), STARTUP), outer.text()
            outer.type("SCN=bash DELAY=1 run the scripted scenario")
            assert _wait(lambda: any(e["state"] == "blocked" for e in _events(events)), STEP), outer.text()
            assert outer.wait_for(dialog, 10) is not None, outer.text()
            answered = time.time()
            assert outer.answer(PROFILES[name].answer, dialog, timeout=15) is not None, outer.text()
            assert _wait(lambda: any(e["event"] == "reply_sent" and e["stop_reason"] == "end_turn"
                                     for e in mock.events) and _events(events)[-1]["state"] == "idle",
                         STEP), outer.text()
            final = next(e["t"] for e in mock.events if e["event"] == "reply_sent" and e["stop_reason"] == "end_turn")
        finally:
            outer.close()
    got = _events(events)
    states = [e["state"] for e in got]
    first_blocked = states.index("blocked")
    assert "working" in states[:first_blocked], states
    assert states[first_blocked + 1:].count("blocked") == 0, states
    between = [e["state"] for e in got if answered < float(str(e["t"])) < final]
    assert "idle" not in between, got
    assert states[-1] in ("idle", "exited") and "idle" in states[first_blocked:], states
    if name in HOOK_AGENTS and (name != "gemini" or os.geteuid() == 0):  # `run` injected hooks; they reported
        assert any(e["source"] == "hook" for e in got), got
    assert record.stat().st_size > 0
