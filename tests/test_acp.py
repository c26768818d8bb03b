"""AcpClient maps ACP requests and updates to Reports; AcpState combines them (no agent needed)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import acp  # noqa: F401  (part of '.[test]': a missing SDK is a broken install, not a reason to skip)
import pytest

from panewatch.core.combine import Report
from panewatch.runtime.acp import AcpClient, AcpState

OPTIONS = [SimpleNamespace(option_id="allow", name="Allow", kind="allow_once"),
           SimpleNamespace(option_id="reject", name="Reject", kind="reject_once")]


def _run(choice: str | None) -> tuple[list[Report], AcpState, object]:
    reports: list[Report] = []
    state = AcpState()

    async def go() -> object:
        client = AcpClient(lambda r: (reports.append(r), state.update(r)))
        await client.session_update("s1", SimpleNamespace(session_update="available_commands_update"))
        assert not reports  # session set-up is not a turn
        await client.session_update("s1", SimpleNamespace(session_update="agent_message_chunk"))
        asked = asyncio.create_task(client.request_permission("s1", SimpleNamespace(title="touch x"), OPTIONS))
        request = await client.next_request(5)
        assert state.state().state == "blocked" and "Allow [allow_once] / Reject [reject_once]" in request.detail()
        await client.session_update("s1", SimpleNamespace(session_update="tool_call_update"))
        assert state.state().state == "blocked"  # updates do not end a pending request
        with pytest.raises(ValueError):
            client.answer("nope")
        if choice is None:
            client.cancel()
        else:
            client.answer(choice)
        return await asyncio.wait_for(asked, 5)

    response = asyncio.run(go())
    return reports, state, response


@pytest.mark.parametrize("choice", ["allow", "reject", None])
def test_request_permission_blocks_until_answered(choice: str | None) -> None:
    reports, state, response = _run(choice)
    assert [r.state for r in reports] == ["working", "blocked", "working"]
    assert all(r.source == "acp" for r in reports)
    assert [s.state for s in state.history] == ["working", "blocked", "working"]
    outcome = response.outcome  # type: ignore[attr-defined]
    if choice is None:
        assert outcome.outcome == "cancelled"
    else:
        assert (outcome.outcome, outcome.option_id) == ("selected", choice)


def test_no_pending_request_to_answer() -> None:
    client = AcpClient(lambda r: None)
    with pytest.raises(LookupError):
        client.cancel()
