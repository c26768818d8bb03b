"""`send` submits on every verified agent (issue 22): the text, then its Enter as a key of its own after the agent's
paste window (its manifest's `submit_gap`), and the turn starts. Codex 0.171.0 and Gemini CLI 0.61.0 took an Enter
that came with the text as a pasted newline: the text stayed in their input box (2 of 2 each, exit 0, no word).

The pinned real CLIs in a headless LivePane against the mock model server, typed through the input guard as
`panewatch send` types; no latency is asserted (`panewatch bench submit` measures each paste window).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from panewatch.runtime.guard import InputGuard
from panewatch.testing.agents import LiveAgent
from panewatch.testing.homes import find_agents_bin

pytestmark = pytest.mark.needs("agents")  # tests/components.py: fails without them unless PANEWATCH_SKIP=agents
SLOW = {"opencode": 4.0, "copilot": 2.0, "aider": 2.0}
AGENTS = [pytest.param(a, marks=pytest.mark.timeout(int(150 * SLOW.get(a, 1.0))))
          for a in ("claude", "codex", "gemini", "qwen", "opencode", "copilot", "aider")]


@pytest.mark.parametrize("name", AGENTS)
def test_send_submits_and_the_turn_starts(tmp_path: Path, name: str) -> None:
    bin_dir = find_agents_bin()
    assert bin_dir is not None and (bin_dir / name).exists(), f"{name} is not installed (scripts/install-agents)"
    factor = SLOW.get(name, 1.0)
    agent = LiveAgent(name, tmp_path, pane_id="send")

    async def go() -> None:
        async with agent:
            assert await agent.ready(60 * factor), agent.text()
            guard = InputGuard(agent.pane, pane_id="send")
            result = await guard.send("SCN=text DELAY=1 say hello from the send test")
            assert result.submitted is True and result.state in ("working", "blocked"), (result, agent.text())
            assert await agent.until(lambda: agent.mock_reply_sent("end_turn") != [], 45 * factor), agent.text()
            await agent.until(lambda: agent.pane.state.state == "idle", 45 * factor)
            again = await guard.send("SCN=text DELAY=1 and once more")  # a second task, after the first turn
            assert again.submitted is True, (again, agent.text())

    asyncio.run(asyncio.wait_for(go(), 140 * factor))
