"""ACP (Agent Client Protocol) client side: an agent's own words about its state, as `Report`s.

`session/request_permission` is the agent asking the user — a fact, not a screen guess — so it is
reported `blocked` with the request's options, and stays blocked until `answer(option_id)` or
`cancel()` resolves it (then `working`: the agent goes on). Session updates while no request is
pending report `working`; the end of a prompt turn reports `done` (combine() shows it as idle).

    client = AcpClient(on_report=pane.report)          # or AcpState().update
    async with spawn_agent_process(client, "claude-agent-acp", env=...) as (conn, proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=..., mcp_servers=[])
        turn = asyncio.create_task(client.prompt(conn, session.session_id, "do it"))
        request = await client.next_request()           # a PendingPermission, with its options
        client.answer(request.option("allow_once"))     # or client.cancel(request)

Needs the `agent-client-protocol` package (the `acp` extra), imported on first use only.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from panewatch.core.classify import Verdict
from panewatch.core.combine import PaneState, Report, combine
from panewatch.core.states import ReportState

if TYPE_CHECKING:
    from acp.interfaces import Agent
    from acp.schema import RequestPermissionResponse

OnReport = Callable[[Report], None]


@dataclass(frozen=True)
class AcpOption:
    option_id: str
    name: str
    kind: str  # allow_once | allow_always | reject_once | reject_always


@dataclass
class PendingPermission:
    """One `session/request_permission` waiting for the user."""

    number: int
    session_id: str
    title: str  # the tool call's title, e.g. "`touch /tmp/x`"
    options: list[AcpOption]
    asked_at: float
    future: asyncio.Future[str | None] = field(repr=False)  # option id, or None for cancelled

    def option(self, choice: str) -> AcpOption | None:
        """An option by id, kind or name (any case)."""
        for opt in self.options:
            if choice in (opt.option_id, opt.kind) or opt.name.casefold() == choice.casefold():
                return opt
        return None

    def detail(self) -> str:
        names = " / ".join(f"{o.name} [{o.kind}]" for o in self.options)
        return f"request_permission {self.title}: {names}"[:200]


class AcpClient:
    """An ACP `Client` that reports state; file and terminal capabilities are not offered."""

    def __init__(self, on_report: OnReport, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.on_report = on_report
        self.clock = clock
        self.pending: dict[int, PendingPermission] = {}
        self.requests: list[PendingPermission] = []  # every request seen, answered or not
        self.outcomes: list[tuple[int, str | None]] = []  # (request number, option id or None)
        self.updates: list[Any] = []
        self._numbers = itertools.count(1)
        self._asked: asyncio.Queue[PendingPermission] = asyncio.Queue()
        self._last: str | None = None

    # -- reporting -----------------------------------------------------------------------------

    def _report(self, state: ReportState, detail: str) -> None:
        self._last = state
        self.on_report(Report(state, self.clock(), "acp", detail))

    # -- the Client protocol -------------------------------------------------------------------

    def on_connect(self, conn: Agent) -> None:
        self.conn = conn

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        loop = asyncio.get_running_loop()
        request = PendingPermission(
            next(self._numbers), session_id, str(getattr(tool_call, "title", None) or "tool call"),
            [AcpOption(o.option_id, o.name, o.kind) for o in options], self.clock(), loop.create_future())
        self.pending[request.number] = request
        self.requests.append(request)
        self._report("blocked", request.detail())
        self._asked.put_nowait(request)
        try:
            chosen = await request.future
        finally:
            self.pending.pop(request.number, None)
        self.outcomes.append((request.number, chosen))
        if not self.pending:  # answered: the agent goes on (or winds the turn down after a cancel)
            self._report("working", f"request_permission answered: {chosen or 'cancelled'}")
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        kind = str(getattr(update, "session_update", ""))
        # Only turn activity means working; mode and command lists arrive at session start too.
        if not self.pending and self._last != "working" and kind in _ACTIVITY:
            self._report("working", f"session/update {kind}")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- driving -------------------------------------------------------------------------------

    async def prompt(self, conn: Agent, session_id: str, text: str) -> str:
        """Run one prompt turn; reports working, then done when it ends. Returns the stop reason."""
        from acp import text_block

        self._report("working", "session/prompt")
        response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
        reason = str(response.stop_reason)
        self._report("done", f"session/prompt ended: {reason}")
        return reason

    async def next_request(self, timeout: float | None = None) -> PendingPermission:
        """The next permission request (already pending or yet to come)."""
        return await asyncio.wait_for(self._asked.get(), timeout)

    def answer(self, option: AcpOption | str, request: PendingPermission | None = None) -> None:
        """Choose `option` (an AcpOption or its id) for `request` (default: the oldest pending)."""
        target = request or self._oldest()
        option_id = option.option_id if isinstance(option, AcpOption) else option
        if target.option(option_id) is None:
            raise ValueError(f"{option_id!r} is not an option of request {target.number}: {target.options}")
        if not target.future.done():
            target.future.set_result(option_id)

    def cancel(self, request: PendingPermission | None = None) -> None:
        """Answer `cancelled` (the user dismissed the request without choosing)."""
        target = request or self._oldest()
        if not target.future.done():
            target.future.set_result(None)

    def _oldest(self) -> PendingPermission:
        if not self.pending:
            raise LookupError("no permission request is pending")
        return self.pending[min(self.pending)]


_ACTIVITY = {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}

# A session without a screen: the screen's own verdict would be "no rule matched".
_NO_SCREEN = Verdict("idle", None)


class AcpState:
    """The combined state of an ACP session that has no terminal screen (combine() decides)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.report: Report | None = None
        self.history: list[PaneState] = []

    def update(self, report: Report) -> None:
        self.report = report
        state = self.state()
        if not self.history or self.history[-1] != state:
            self.history.append(state)

    def state(self) -> PaneState:
        return combine(_NO_SCREEN, 0.0, self.report, None, self.clock())
