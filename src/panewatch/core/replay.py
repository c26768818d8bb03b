"""Play a recording through a PaneMachine in virtual time: exact, repeatable latencies.

The cast's output and resize events (and its exit, if recorded), the hook reports recorded with it
and any foreground changes go into one PaneMachine at their times; every check the timing policy
schedules runs at its due time. What comes out is the pane's *combined* state, as live, so a golden
case with recorded hooks scores screen + hooks together.

`screens_at()` gives the visible screen at given times, for the frame goldens (an engine upgrade
shows up as "the screen changed" before it shows up as "a rule broke").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from panewatch.core.cast import Cast, CastEvent
from panewatch.core.classify import Verdict
from panewatch.core.combine import PaneState, Report
from panewatch.core.detector import PaneDetector
from panewatch.core.machine import Foreground, PaneMachine, StateChange
from panewatch.core.manifest import Manifest
from panewatch.core.policy import ChangeDrivenSchedule, Schedule
from panewatch.core.screen import Screen, Snapshot

# Agents go silent when idle or blocked; keep the clock running so pending checks still happen.
TAIL_SECONDS = 3.0


@dataclass(frozen=True, slots=True)
class Change:
    """One change of the combined state: when, the state, the screen's own verdict and screen then."""

    t: float
    pane: PaneState
    verdict: Verdict
    snapshot: Snapshot | None = None  # the screen that was judged (for `agents explain`)

    @property
    def state(self) -> str:
        return self.pane.state

    def as_json(self) -> dict[str, object]:
        v = self.verdict
        out: dict[str, object] = {"t": round(self.t, 6), "state": self.pane.state, "rule": self.pane.rule,
                                  "agent": v.agent or None, "region": v.region or None, "row": v.row,
                                  "matched": v.matched or None, "error": v.error or None}
        if self.pane.source != "screen":  # a report or the process decided, not a rule
            out["source"] = self.pane.source
            out["detail"] = self.pane.detail or None
        return out


@dataclass
class ReplayResult:
    changes: list[Change]
    checks: int
    classifications: int
    duration: float
    final: Snapshot
    machine: PaneMachine

    @property
    def detector(self) -> PaneDetector:
        return self.machine.detector


def _feed(machine: PaneMachine, event: CastEvent) -> list[StateChange]:
    """Apply one cast event (o, r or x) to the machine; other kinds are not the pane's."""
    if event.kind == "o":
        return machine.output(event.t, event.data.encode("utf-8", "surrogateescape"))
    if event.kind == "r" and (size := event.size) is not None:
        return machine.resize(event.t, *size)
    if event.kind == "x":
        return machine.exited(event.t, int(event.data) if event.data.lstrip("-").isdigit() else None)
    return []


def replay(
    cast: Cast,
    manifests: list[Manifest],
    *,
    agent: str | None = None,
    schedule: Callable[[], Schedule] = ChangeDrivenSchedule,
    tail: float = TAIL_SECONDS,
    reports: Iterable[Report] = (),
    foreground: Iterable[tuple[float, Foreground | None]] = (),
    on_check: Callable[[float, PaneDetector], None] | None = None,
) -> ReplayResult:
    """Feed the cast's events, `reports` (at their `t`) and `foreground` changes in time order (cast
    events first at equal times); run every scheduled check at its due time."""
    machine = PaneMachine(lambda: manifests, cast.header.width, cast.header.height, agent=agent,
                          schedule=schedule())
    machine.check(0.0)
    changes = [Change(0.0, machine.state, machine.verdict, machine.screen.snapshot())]

    def record(new: list[StateChange]) -> None:
        changes.extend(Change(c.t, c.new, machine.verdict, machine.screen.snapshot()) for c in new)

    def run_checks_until(limit: float) -> None:
        while (due := machine.next_due()) <= limit:
            record(machine.tick(due))
            if on_check is not None:
                on_check(due, machine.detector)

    timeline: list[tuple[float, int, CastEvent | Report | Foreground | None]] = [
        (e.t, 0, e) for e in cast.events if e.kind in ("o", "r", "x")]
    timeline += [(r.t, 1, r) for r in reports]
    timeline += [(t, 2, fg) for t, fg in foreground]
    timeline.sort(key=lambda item: (item[0], item[1]))
    last = 0.0
    for t, _, item in timeline:
        run_checks_until(t - 1e-9)
        if isinstance(item, CastEvent):
            record(_feed(machine, item))
        elif isinstance(item, Report):
            record(machine.report(t, item))
        else:
            record(machine.foreground(t, item))
        last = max(last, t)
    end = last + tail
    run_checks_until(end)
    stats = machine.detector.stats
    return ReplayResult(changes, stats.checks, stats.classifications, end, machine.screen.snapshot(), machine)


def state_at(changes: Sequence[Change], t: float) -> str:
    state = changes[0].state if changes else "idle"
    for change in changes:
        if change.t > t:
            break
        state = change.state
    return state


def screens_at(cast: Cast, times: Iterable[float]) -> list[Snapshot]:
    """The visible screen after every o/r event at or before each of `times` (sorted or not)."""
    wanted = sorted(set(times))
    out: dict[float, Snapshot] = {}
    screen = Screen(cast.header.width, cast.header.height)
    events = iter(e for e in cast.events if e.kind in ("o", "r"))
    pending = next(events, None)
    for t in wanted:
        while pending is not None and pending.t <= t:
            if pending.kind == "o":
                screen.feed(pending.data.encode("utf-8", "surrogateescape"))
            elif (size := pending.size) is not None:
                screen.resize(*size)
            pending = next(events, None)
        out[t] = screen.snapshot()
    screen.close()
    return [out[t] for t in times]
