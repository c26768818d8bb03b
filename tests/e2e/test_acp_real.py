"""ACP end to end: the pinned `claude-agent-acp` under the Python ACP SDK against the Anthropic mock.

A real `session/request_permission` makes the session blocked (combine() over the ACP report) with
the request's options; each answer — allow, reject, cancel — resolves it, and the agent's next
model request carries the matching tool result. Needs the pinned CLIs (PANEWATCH_SKIP=agents opts out).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import acp
import pytest

from panewatch.runtime.acp import AcpClient, AcpState
from panewatch.testing.homes import find_agents_bin, prepare
from panewatch.testing.mock import MockServer

BIN = find_agents_bin()
pytestmark = pytest.mark.needs("agents")  # tests/components.py: fails without them unless PANEWATCH_SKIP=agents

# What the agent sends back to the model for each answer (observed with claude-agent-acp 0.23.1).
RESULTS = {
    "allow_once": (False, "Bash completed"),
    "reject_once": (True, "refused permission"),
    "cancel": (True, "aborted"),
}


def _tool_results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for event in events:
        body = event.get("body")
        if event["event"] != "body" or not isinstance(body, dict) or not body.get("tools"):
            continue
        for message in body.get("messages", []):
            content = message.get("content")
            out += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
                if isinstance(content, list) else []
    return out


async def _session(choice: str, root: Path) -> tuple[AcpState, AcpClient, list[dict[str, Any]]]:
    assert BIN is not None
    state = AcpState()
    client = AcpClient(state.update)
    with MockServer("anthropic", clock=time.monotonic, dump_bodies=True) as mock:
        launch = prepare("claude-agent-acp", root, mock.url, bin_dir=BIN)
        # The SDK passes the agent only a few variables plus env=: ours carries HOME and ANTHROPIC_*.
        async with acp.spawn_agent_process(client, launch.argv[0], *launch.argv[1:], env=launch.env,
                                           cwd=launch.cwd) as (conn, proc):
            drain = asyncio.create_task(_drain(proc.stderr))  # an unread stderr pipe can block the agent
            try:
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                session = await conn.new_session(cwd=launch.cwd, mcp_servers=[])
                turn = asyncio.create_task(client.prompt(conn, session.session_id,
                                                         "SCN=bash DELAY=0.2 run the scripted scenario"))
                request = await client.next_request(45)
                blocked = state.state()
                assert blocked.state == "blocked" and blocked.source == "acp", blocked
                assert request.title and "touch" in request.title
                kinds = {o.kind for o in request.options}
                assert {"allow_once", "reject_once"} <= kinds, request.options
                for option in request.options:  # the user sees every option the agent offered
                    assert option.name in blocked.detail
                if choice == "cancel":
                    client.cancel(request)
                else:
                    option = request.option(choice)
                    assert option is not None
                    client.answer(option)
                assert await asyncio.wait_for(turn, 45) == "end_turn"
            finally:
                drain.cancel()
        return state, client, mock.events


async def _drain(stream: asyncio.StreamReader | None) -> None:
    while stream is not None and await stream.readline():
        pass


@pytest.mark.parametrize("choice", sorted(RESULTS))
def test_acp_permission_request_blocks_until_answered(choice: str, tmp_path: Path) -> None:
    state, client, events = asyncio.run(asyncio.wait_for(_session(choice, tmp_path), 110))
    assert [s.state for s in state.history] == ["working", "blocked", "working", "idle"]
    assert state.state().state == "idle" and not client.pending
    chosen = None if choice == "cancel" else client.requests[0].option(choice)
    assert client.outcomes == [(1, None if chosen is None else chosen.option_id)]
    results = _tool_results(events)
    assert results, "the agent never sent the tool's result back"
    is_error, text = RESULTS[choice]
    assert results[-1]["is_error"] is is_error and text in str(results[-1]["content"]), results[-1]
