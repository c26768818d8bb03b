"""A pane with no screen: an agent started by hand outside any watched terminal, known only by the hooks
`panewatch hooks install` put in its own settings (board/hookonly.py is its shell). Pure: reports and the
agent's exit in, state changes out, times given by the caller.

Its state is the last report's (core/hookevents.py says which event of each agent reports what; `done`
shows as idle), with three rules the screen would otherwise enforce:

    order     the agent's hooks run as separate processes and can arrive out of order (PreToolUse and
              PermissionRequest ~50 ms apart): each report carries the time its hook started, and one older
              than the newest applied is stale, counted and never applied (an agent's later event always
              wins: its hooks are its heartbeat);
    exit      the agent's process ended: `exited`, whatever was reported before, and nothing after;
    no screen what no hook says stays unsaid: a permission granted fires no hook for Claude Code, so
              `blocked` holds until the agent's next event (the card says it is from a hook, and since when).
"""

from __future__ import annotations

from dataclasses import dataclass

from panewatch.core.states import ReportState, State


@dataclass(frozen=True, slots=True)
class HookState:
    """What a hook-only pane shows: its state, what said so, and when (wall time the state began)."""

    state: State
    source: str  # "hook" | "process"
    detail: str
    since: float


class HookPane:
    """One agent's state from its hooks. `report`/`exited` return the new HookState when it changed, else None."""

    def __init__(self, now: float) -> None:
        self.current: HookState | None = None
        self.last_hook = float("-inf")  # start time of the newest hook applied
        self.stale = 0  # reports that arrived after a newer one (never applied)
        self.reports = 0
        self.created = now

    @property
    def ended(self) -> bool:
        return self.current is not None and self.current.state == "exited"

    def report(self, state: ReportState, hook_time: float, detail: str, now: float) -> HookState | None:
        """A hook of this agent said `state`; its hook process started at `hook_time` (the agent's clock)."""
        if self.ended:
            return None
        if hook_time < self.last_hook:
            self.stale += 1
            return None
        self.last_hook = hook_time
        self.reports += 1
        shown: State = "idle" if state == "done" else state
        if self.current is not None and self.current.state == shown:
            if self.current.detail != detail:  # same state, newer evidence: the detail follows, `since` stays
                self.current = HookState(shown, "hook", detail, self.current.since)
            return None
        self.current = HookState(shown, "hook", detail, now)
        return self.current

    def exited(self, now: float, detail: str = "the agent's process ended") -> HookState | None:
        if self.ended:
            return None
        self.current = HookState("exited", "process", detail, now)
        return self.current
