"""When to classify a pane: pure timing decisions on an injected clock.

Classifying on every write wastes CPU (agents redraw spinners at 10 Hz and Gemini streams
~40 KB/s); sweeping every pane at a fixed period adds up to a period of latency. Our policy
classifies a pane only after its screen changed, as soon as output settles, never later than
`max_delay` after the change, never more often than `min_interval`, plus a slow safety sweep.
The same object drives replays (virtual time) and live panes (real time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Schedule(Protocol):
    def on_output(self, now: float) -> None: ...
    def next_due(self) -> float: ...
    def on_classified(self, now: float, changed: bool = False) -> None: ...


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    settle: float = 0.03  # output quiet this long = a frame is complete
    max_delay: float = 0.15  # bound on latency under continuous output
    min_interval: float = 0.10  # at most 10 classifications per second per pane
    # A spinner redraws at 10 Hz for minutes while the verdict stays "working": after
    # `steady_after` checks with the same verdict, check at most every `steady_interval`
    # (still within the 0.3 s latency target); a changed verdict or a pause in output resets.
    steady_after: int = 3
    steady_interval: float = 0.3
    burst_gap: float = 0.5  # output after this much silence starts a new burst
    # Safety net only: a screen that did not change cannot change its verdict (manifest reloads and
    # foreground changes trigger their own checks), so this can be slow and cost nothing at scale.
    sweep: float = 5.0


class ChangeDrivenSchedule:
    """Our policy. Worst-case detection latency = max_delay (+ min_interval right after a classification)."""

    def __init__(self, config: PolicyConfig | None = None, start: float = 0.0) -> None:
        self.config = config or PolicyConfig()
        self._dirty_since: float | None = start  # a new pane has an unclassified screen
        self._last_output = start
        self._last_classified = start - self.config.min_interval
        self._steady = 0  # consecutive checks that did not change the verdict

    def on_output(self, now: float) -> None:
        if now - self._last_output >= self.config.burst_gap:
            self._steady = 0
        if self._dirty_since is None:
            self._dirty_since = now
        self._last_output = now

    def next_due(self) -> float:
        c = self.config
        if self._dirty_since is None:
            return self._last_classified + c.sweep
        interval = c.steady_interval if self._steady >= c.steady_after else c.min_interval
        due = min(self._last_output + c.settle, self._dirty_since + c.max_delay)
        return max(due, self._last_classified + interval)

    def on_classified(self, now: float, changed: bool = False) -> None:
        self._steady = 0 if changed else self._steady + 1
        self._last_classified = now
        self._dirty_since = None


class FixedSweepSchedule:
    """The published design: classify every pane every `period` seconds, changed or not."""

    def __init__(self, period: float = 0.7, start: float = 0.0) -> None:
        self.period = period
        self._next = start

    def on_output(self, now: float) -> None:
        pass

    def next_due(self) -> float:
        return self._next

    def on_classified(self, now: float, changed: bool = False) -> None:
        while self._next <= now:
            self._next += self.period
