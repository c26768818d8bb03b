"""ACP end to end: the pinned ACP agents under the Python ACP SDK against the mock model servers.

    claude-agent-acp 0.23.1        Claude Code under ACP (Anthropic mock)
    gemini --acp                   Gemini CLI 0.61.0's own ACP mode (Gemini mock; `--experimental-acp`
                                   is the deprecated spelling of the same flag)
    codex-acp 0.16.0               @zed-industries/codex-acp, Codex under ACP (OpenAI Responses mock)

A real `session/request_permission` makes the session blocked (combine() over the ACP report) with
the request's options; each answer — allow, reject, cancel — resolves it, and the agent's next
model request carries the matching tool result (or, where the agent ends the turn on a refusal,
none). Needs the pinned CLIs (PANEWATCH_SKIP=agents opts out).

codex-acp's npm wrapper starts the native adapter as a child that outlives the wrapper when the SDK
stops it: every agent here runs as the leader of its own process group (`setsid`), and the group is
ended after the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import acp
import pytest

from panewatch.runtime.acp import AcpClient, AcpState
from panewatch.testing.homes import ACP_COMMANDS, MOCK_KIND, find_agents_bin, prepare
from panewatch.testing.mock import MockServer

BIN = find_agents_bin()
pytestmark = pytest.mark.needs("agents")  # tests/components.py: fails without them unless PANEWATCH_SKIP=agents
AGENTS = ("claude-agent-acp", "gemini", "codex-acp")
CHOICES = ("allow_once", "reject_once", "cancel")

# What each agent sends back to the model for each answer: (is an error, text in it); None: no tool
# result at all (the agent ends the turn instead). Observed with the pinned versions.
RESULTS: dict[str, dict[str, tuple[bool, str] | None]] = {
    "claude-agent-acp": {"allow_once": (False, "Bash completed"), "reject_once": (True, "refused permission"),
                         "cancel": (True, "aborted")},
    "gemini": {"allow_once": (False, "Output"), "reject_once": (True, "canceled by the user"),
               "cancel": (True, "canceled by the user")},
    # A refusal ("abort") ends Codex's turn: nothing goes back to the model.
    "codex-acp": {"allow_once": (False, "Process exited with code 0"), "reject_once": None, "cancel": None},
}


def _tool_results(kind: str, events: list[dict[str, Any]]) -> list[tuple[bool, str]]:
    """(is an error, text) of every tool result in the model requests, in the mock's API flavour."""
    out: list[tuple[bool, str]] = []
    for event in events:
        body = event.get("body")
        if event["event"] != "body" or not isinstance(body, dict):
            continue
        if kind == "anthropic" and body.get("tools"):
            for message in body.get("messages", []):
                content = message.get("content")
                out += [(bool(b.get("is_error")), str(b.get("content"))) for b in content
                        if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(content, list) else []
        elif kind == "openai" and body.get("tools"):
            out += [(False, str(i.get("output"))) for i in body.get("input") or []
                    if isinstance(i, dict) and i.get("type") == "function_call_output"]
        elif kind == "gemini":
            for content in body.get("contents", []):
                for part in content.get("parts", []) if isinstance(content, dict) else []:
                    if isinstance(part, dict) and "functionResponse" in part:
                        response = part["functionResponse"].get("response", {})
                        out.append(("error" in response, str(response)))
    return out


async def _session(agent: str, choice: str, root: Path) -> tuple[AcpState, AcpClient, list[dict[str, Any]]]:
    assert BIN is not None
    state = AcpState()
    client = AcpClient(state.update)
    kind = MOCK_KIND[agent]
    with MockServer(kind, clock=time.monotonic, dump_bodies=True) as mock:
        launch = prepare(agent, root, mock.url, bin_dir=BIN)
        program, *args = ACP_COMMANDS[agent]
        setsid = shutil.which("setsid") or "setsid"
        # The SDK passes the agent only a few variables plus env=: ours carries HOME and the API settings.
        async with acp.spawn_agent_process(client, setsid, str(BIN / program), *args, env=launch.env,
                                           cwd=launch.cwd) as (conn, proc):
            drain = asyncio.create_task(_drain(proc.stderr))  # an unread stderr pipe can block the agent
            try:
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                session = await conn.new_session(cwd=launch.cwd, mcp_servers=[])
                turn = asyncio.create_task(client.prompt(conn, session.session_id,
                                                         "SCN=bash DELAY=0.2 run the scripted scenario"))
                request = await client.next_request(60)
                blocked = state.state()
                assert blocked.state == "blocked" and blocked.source == "acp", blocked
                assert request.title and "touch" in request.title, request
                kinds = {o.kind for o in request.options}
                assert {"allow_once", "reject_once"} <= kinds, request.options
                for option in request.options:  # the user sees every option the agent offered
                    assert option.name in blocked.detail or len(blocked.detail) == 200
                if choice == "cancel":
                    client.cancel(request)
                else:
                    option = request.option(choice)
                    assert option is not None
                    client.answer(option)
                assert await asyncio.wait_for(turn, 60) in ("end_turn", "cancelled")
            finally:
                drain.cancel()
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the adapter's children too
        return state, client, mock.events


async def _drain(stream: asyncio.StreamReader | None) -> None:
    while stream is not None and await stream.readline():
        pass


@pytest.mark.parametrize("choice", CHOICES)
@pytest.mark.parametrize("agent", AGENTS)
def test_acp_permission_request_blocks_until_answered(agent: str, choice: str, tmp_path: Path) -> None:
    assert BIN is not None and (BIN / ACP_COMMANDS[agent][0]).exists(), f"{agent} not in {BIN} (scripts/install-agents)"
    state, client, events = asyncio.run(asyncio.wait_for(_session(agent, choice, tmp_path), 150))
    assert [s.state for s in state.history] == ["working", "blocked", "working", "idle"]
    assert state.state().state == "idle" and not client.pending
    chosen = None if choice == "cancel" else client.requests[0].option(choice)
    assert client.outcomes == [(1, None if chosen is None else chosen.option_id)]
    results = _tool_results(MOCK_KIND[agent], events)
    expected = RESULTS[agent][choice]
    if expected is None:
        assert results == [], results
        return
    assert results, f"{agent} never sent the tool's result back"
    is_error, text = expected
    assert results[-1][0] is is_error and text in results[-1][1], results[-1]
