"""Play a recording through the real detection pipeline in virtual time: exact, repeatable latencies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from panewatch.cast import Cast
from panewatch.classify import Verdict
from panewatch.detector import PaneDetector
from panewatch.manifest import Manifest
from panewatch.policy import ChangeDrivenSchedule, Schedule
from panewatch.screen import Screen, Snapshot

# Agents go silent when idle or blocked; keep the clock running so pending checks still happen.
TAIL_SECONDS = 3.0


@dataclass(frozen=True, slots=True)
class Change:
    t: float
    verdict: Verdict
    snapshot: Snapshot | None = None  # the screen that was judged (for `agents explain`)

    @property
    def state(self) -> str:
        return self.verdict.state

    def as_json(self) -> dict[str, object]:
        v = self.verdict
        return {"t": round(self.t, 6), "state": v.state, "rule": v.rule, "agent": v.agent or None,
                "region": v.region or None, "row": v.row, "matched": v.matched or None, "error": v.error or None}


@dataclass
class ReplayResult:
    changes: list[Change]
    checks: int
    classifications: int
    duration: float
    final: Snapshot
    detector: PaneDetector


def replay(
    cast: Cast,
    manifests: list[Manifest],
    *,
    agent: str | None = None,
    schedule: Callable[[], Schedule] = ChangeDrivenSchedule,
    tail: float = TAIL_SECONDS,
    on_check: Callable[[float, PaneDetector], None] | None = None,
) -> ReplayResult:
    """Feed `o` and `r` events at their cast times; run every scheduled check at its due time."""
    detector = PaneDetector(lambda: manifests, Screen(cast.header.width, cast.header.height),
                            schedule=schedule(), agent_id=agent)
    changes = [Change(0.0, detector.classify_now(), detector.screen.snapshot())]

    def run_checks_until(limit: float) -> None:
        while (due := detector.next_due()) <= limit:
            changed = detector.tick(due)
            if on_check is not None:
                on_check(due, detector)
            if changed is not None:
                changes.append(Change(due, changed, detector.screen.snapshot()))

    last = 0.0
    for event in cast.events:
        if event.kind not in ("o", "r"):
            continue
        run_checks_until(event.t - 1e-9)
        if event.kind == "o":
            detector.feed(event.t, event.data.encode("utf-8", "surrogateescape"))
        elif (size := event.size) is not None:
            detector.resize(event.t, *size)
        last = event.t
    end = last + tail
    run_checks_until(end)
    return ReplayResult(changes, detector.stats.checks, detector.stats.classifications, end,
                        detector.screen.snapshot(), detector)


def state_at(changes: list[Change], t: float) -> str:
    state = changes[0].state if changes else "idle"
    for change in changes:
        if change.t > t:
            break
        state = change.state
    return state
