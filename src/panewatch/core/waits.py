"""Minutes lost waiting: a pane's state changes in, the waits they close out. Pure (times are given).

Two kinds of wait, per pane:

* **blocked** — the agent asked (the pane entered `blocked`) until the user answered (it left
  `blocked` for `working` or `idle`: granted, or refused and the turn ended);
* **idle** — a turn ended (`working` or `blocked` → `idle`) until the next prompt (`idle` →
  `working` or `blocked`). A pane idle from its start waited for no one: no turn had ended.

A wait that ends because the pane exited (or left the board) was not answered: it is kept, with
`ended_by`, but not `counted` in the minutes lost (the user closed the agent, or was done with it).
`summarize()` turns waits into the figures `panewatch stats` and the board show.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

WaitKind = Literal["blocked", "idle"]
KINDS: tuple[WaitKind, ...] = ("blocked", "idle")
LONGEST = 10  # waits listed as the longest


@dataclass(frozen=True, slots=True)
class Wait:
    kind: WaitKind
    pane: str  # a key unique to one pane's life (its board id repeats across daemon restarts)
    pane_id: str  # its id on the board
    name: str
    agent: str | None
    start: float  # unix time
    end: float
    ended_by: str  # the state that ended it (working, idle, blocked, exited) or "gone" (left the board)

    @property
    def seconds(self) -> float:
        return max(0.0, self.end - self.start)

    @property
    def counted(self) -> bool:
        """Answered (blocked) or followed by a prompt (idle): minutes the user lost."""
        return self.ended_by not in ("exited", "gone")

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "pane": self.pane, "id": self.pane_id, "name": self.name, "agent": self.agent,
                "start": round(self.start, 3), "end": round(self.end, 3), "seconds": round(self.seconds, 3),
                "ended_by": self.ended_by}


@dataclass(frozen=True, slots=True)
class _Open:
    kind: WaitKind
    start: float
    pane_id: str
    name: str
    agent: str | None


class WaitTracker:
    """Every pane's open wait; `change()` returns the waits a state change closed."""

    def __init__(self) -> None:
        self._state: dict[str, str] = {}
        self._open: dict[str, _Open] = {}

    def change(self, pane: str, t: float, new: str, *, old: str | None = None, pane_id: str = "", name: str = "",
               agent: str | None = None) -> list[Wait]:
        """Pane `pane` is in state `new` from time `t` on (`old`: what it was, if the caller knows
        better than the last state seen here, e.g. its first change after a restart)."""
        before = self._state.get(pane, old)
        self._state[pane] = new
        closed: list[Wait] = []
        current = self._open.get(pane)
        if current is not None and new != current.kind:
            del self._open[pane]
            closed.append(Wait(current.kind, pane, current.pane_id, current.name, agent or current.agent,
                               current.start, max(t, current.start), new))
            current = None
        if current is None:
            if new == "blocked":
                self._open[pane] = _Open("blocked", t, pane_id, name, agent)
            elif new == "idle" and before in ("working", "blocked"):
                self._open[pane] = _Open("idle", t, pane_id, name, agent)
        return closed

    def gone(self, pane: str, t: float) -> list[Wait]:
        """The pane left (its card was removed): its open wait ends unanswered."""
        self._state.pop(pane, None)
        current = self._open.pop(pane, None)
        if current is None:
            return []
        return [Wait(current.kind, pane, current.pane_id, current.name, current.agent, current.start,
                     max(t, current.start), "gone")]

    def ongoing(self, now: float) -> list[Wait]:
        """The waits still open, as if they ended `now` (`ended_by` "open")."""
        return [Wait(o.kind, pane, o.pane_id, o.name, o.agent, o.start, max(now, o.start), "open")
                for pane, o in self._open.items()]


def _figure() -> dict[str, float | int]:
    return {"seconds": 0.0, "count": 0, "longest": 0.0}


def _add(figures: dict[str, dict[str, float | int]], wait: Wait) -> None:
    figure = figures[wait.kind]
    figure["seconds"] = round(float(figure["seconds"]) + wait.seconds, 3)
    figure["count"] = int(figure["count"]) + 1
    figure["longest"] = round(max(float(figure["longest"]), wait.seconds), 3)


def summarize(waits: Iterable[Wait], day_of: Callable[[float], str], *, since: float, until: float,
              ongoing: Iterable[Wait] = ()) -> dict[str, Any]:
    """Totals, per agent, per pane, per day (`day_of(start)`, e.g. the local date) and the longest of
    the counted waits; `ongoing` (still open) are listed apart and counted nowhere."""
    counted = sorted((w for w in waits if w.counted), key=lambda w: w.start)
    totals: dict[str, dict[str, float | int]] = {kind: _figure() for kind in KINDS}
    agents: dict[str, dict[str, dict[str, float | int]]] = defaultdict(lambda: {k: _figure() for k in KINDS})
    panes: dict[str, dict[str, Any]] = {}
    days: dict[str, dict[str, dict[str, float | int]]] = defaultdict(lambda: {k: _figure() for k in KINDS})
    for wait in counted:
        _add(totals, wait)
        _add(agents[wait.agent or "unknown"], wait)
        _add(days[day_of(wait.start)], wait)
        pane = panes.setdefault(wait.pane, {"pane": wait.pane, "id": wait.pane_id, "name": wait.name,
                                            "agent": wait.agent, **{k: _figure() for k in KINDS}})
        _add(pane, wait)
    longest = sorted(counted, key=lambda w: w.seconds, reverse=True)[:LONGEST]
    return {
        "since": round(since, 3), "until": round(until, 3), "totals": totals,
        "agents": [{"agent": agent, **figures} for agent, figures in sorted(agents.items())],
        "panes": sorted(panes.values(), key=lambda p: -(float(p["blocked"]["seconds"]) + float(p["idle"]["seconds"]))),
        "days": [{"day": day, **figures} for day, figures in sorted(days.items())],
        "longest": [w.as_json() for w in longest],
        "ongoing": [w.as_json() for w in sorted(ongoing, key=lambda w: w.start)],
    }
