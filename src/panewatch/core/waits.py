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

import heapq
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


class _Sums:
    """One figure being added up: seconds, count and the longest, per kind (rounded once, at the end)."""

    __slots__ = ("sums",)

    def __init__(self) -> None:
        self.sums: dict[str, list[float]] = {kind: [0.0, 0, 0.0] for kind in KINDS}

    def add(self, kind: str, seconds: float) -> None:
        figure = self.sums[kind]
        figure[0] += seconds
        figure[1] += 1
        if seconds > figure[2]:
            figure[2] = seconds

    def json(self) -> dict[str, dict[str, float | int]]:
        return {kind: {"seconds": round(f[0], 3), "count": int(f[1]), "longest": round(f[2], 3)}
                for kind, f in self.sums.items()}


def summarize(waits: Iterable[Wait], day_of: Callable[[float], str], *, since: float, until: float,
              ongoing: Iterable[Wait] = ()) -> dict[str, Any]:
    """Totals, per agent, per pane, per day (`day_of(start)`, e.g. the local date) and the longest of
    the counted waits; `ongoing` (still open) are listed apart and counted nowhere."""
    counted = [w for w in waits if w.counted]
    totals = _Sums()
    agents: defaultdict[str, _Sums] = defaultdict(_Sums)
    days: defaultdict[str, _Sums] = defaultdict(_Sums)
    panes: dict[str, tuple[Wait, _Sums]] = {}
    day_cache: dict[int, str] = {}  # a day starts on a quarter hour in every time zone
    for wait in counted:
        seconds = wait.seconds
        totals.add(wait.kind, seconds)
        agents[wait.agent or "unknown"].add(wait.kind, seconds)
        bucket = int(wait.start // 900)
        day = day_cache.get(bucket)
        if day is None:
            day = day_cache[bucket] = day_of(wait.start)
        days[day].add(wait.kind, seconds)
        if wait.pane not in panes:
            panes[wait.pane] = (wait, _Sums())
        panes[wait.pane][1].add(wait.kind, seconds)
    longest = heapq.nlargest(LONGEST, counted, key=lambda w: w.seconds)
    pane_rows = [{"pane": w.pane, "id": w.pane_id, "name": w.name, "agent": w.agent, **sums.json()}
                 for w, sums in panes.values()]
    return {
        "since": round(since, 3), "until": round(until, 3), "totals": totals.json(),
        "agents": [{"agent": agent, **sums.json()} for agent, sums in sorted(agents.items())],
        "panes": sorted(pane_rows, key=lambda p: -(p["blocked"]["seconds"] + p["idle"]["seconds"])),
        "days": [{"day": day, **sums.json()} for day, sums in sorted(days.items())],
        "longest": [w.as_json() for w in longest],
        "ongoing": [w.as_json() for w in sorted(ongoing, key=lambda w: w.start)],
    }
