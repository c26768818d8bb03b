"""When to classify a pane: pure timing decisions on an injected clock.

Classifying on every write wastes CPU (agents redraw spinners at 10-30 Hz and Gemini streams
~40 KB/s); sweeping every pane at a fixed period adds up to a period of latency. Our policy
classifies a pane only after its screen changed, and tells two kinds of output apart:

* a **burst** (something is being drawn) is judged on its settled frame: once output has been
  quiet for `settle`, at the latest `max_delay` after the burst began;
* an **animation** (a spinner, a title, a clock: the verdict survived `steady_after` checks) is
  judged only every `steady_interval`, unless its rhythm breaks. A frame much bigger than its
  usual frames is something new being drawn (a dialog, a reply, the idle screen): judged as a
  burst. A pause longer than its usual gap between frames means it stopped (an agent that
  waits for the user falls silent): judged at once.

Never more often than `min_interval` (at most 10 checks in any second, whatever the output), plus a
slow safety sweep. Where the 0.2-0.3 s detections of the previous policy (fixed steady interval
only) came from, and what each rule buys, is measured in notes/policy.md. The same object drives
replays (virtual time) and live panes (real time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Schedule(Protocol):
    def on_output(self, now: float, size: int = 0) -> None: ...  # size: bytes written (0: a resize)
    def on_news(self, now: float) -> None: ...  # the frame being written says something new (detector.py)
    def next_due(self) -> float: ...
    def on_classified(self, now: float, changed: bool = False) -> None: ...  # changed: state or rule


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    settle: float = 0.03  # output quiet this long = a frame is complete (its writes come 0-15 ms apart)
    max_delay: float = 0.15  # bound on latency under continuous output
    min_interval: float = 0.10  # the rate bound: at most 10 classifications in any second per pane
    # An animation redraws for minutes while the verdict stays put: after `steady_after` checks with
    # the same verdict, check it every `steady_interval` only (what keeps 1000 spinning panes cheap). It
    # bounds the latency of a change drawn in a frame the animation's rhythm takes for its own: 0.3 s let
    # Copilot's turn start (its footer's 128-byte frame inside a 55-byte idle tick) wait 0.24 s; 0.2 s keeps
    # every change within 0.2 s, for 20 % more checks at 200 spinning panes (bench scale: 271 vs 226 checks/s,
    # the watcher's CPU 9.2 vs 9.0 % of a core) and 5 % more over the corpus.
    steady_after: int = 3
    steady_interval: float = 0.2
    # Its rhythm, learned per pane as running averages (weight `learn` for the newest frame, i.e. the
    # last few frames). Corpus: spinner frames are 20-100 bytes (Claude Code, Codex) and its dialogs,
    # replies and idle screens 0.15-3 KB; Gemini redraws 1.6-2.3 KB every frame, so its dialog
    # (1.5x) breaks nothing and the pause after it does. Gaps: Codex 33 ms, Gemini 56 ms, Claude 110 ms.
    # 2x, not 3x: Copilot's footer turning to 'Working' (2.4x its idle tick) and Claude's last frame at 40x12
    # (2.5x its spinner's) are news; over the corpus 1 % more checks.
    big_frame: float = 2.0  # a frame this many times the usual size is not the animation's
    stopped: float = 1.5  # quiet this many times the usual gap: the animation stopped
    learn: float = 0.25
    burst_gap: float = 0.5  # output after this much silence starts a new burst (as after a stop)
    # Safety net only: a screen that did not change cannot change its verdict (manifest reloads and
    # foreground changes trigger their own checks), so this can be slow and cost nothing at scale.
    sweep: float = 5.0


def _average(mean: float | None, sample: float, weight: float) -> float:
    return sample if mean is None else mean + weight * (sample - mean)


class ChangeDrivenSchedule:
    """Our policy. Any output is judged within max(max_delay, steady_interval) = 0.2 s; a burst or a
    rhythm break once its frame settles (+ min_interval right after a check), within max_delay."""

    def __init__(self, config: PolicyConfig | None = None, start: float = 0.0) -> None:
        self.config = config or PolicyConfig()
        self._dirty_since: float | None = start  # a new pane has an unclassified screen
        self._last_output = start
        self._last_classified = start - self.config.min_interval
        self._steady = 0  # consecutive checks that did not change the verdict
        self._frame_start = start  # the frame being drawn: writes less than `settle` apart
        self._frame_bytes = 0
        self._usual_bytes: float | None = None  # the rhythm: bytes per frame, quiet between frames
        self._usual_gap: float | None = None

    def _animating(self) -> bool:
        return self._steady >= self.config.steady_after

    def on_output(self, now: float, size: int = 0) -> None:
        c = self.config
        quiet = now - self._last_output
        if quiet >= c.settle:  # the previous frame is complete: learn it, start the next one
            if self._frame_bytes:
                self._usual_bytes = _average(self._usual_bytes, self._frame_bytes, c.learn)
            if quiet >= c.burst_gap or (self._usual_gap is not None and quiet > c.stopped * self._usual_gap):
                self._steady = 0  # the animation had stopped: this is something new (Enter after typing)
            else:
                self._usual_gap = _average(self._usual_gap, quiet, c.learn)
            self._frame_start, self._frame_bytes = now, 0
        self._frame_bytes += size
        if self._dirty_since is None:
            self._dirty_since = now
        if (self._animating() and self._usual_bytes is not None
                and self._frame_bytes > c.big_frame * self._usual_bytes):
            self._news()
        self._last_output = now

    def _news(self) -> None:
        """This frame is not one of the animation's: judge it once it settles, and count max_delay from its
        first write (the animation's first unjudged frame may be long past: a check then would read this
        one half drawn), yet not past the check the animation was due for."""
        c = self.config
        self._steady = 0
        start = min(self._frame_start, self._last_classified + c.steady_interval - c.max_delay)
        self._dirty_since = start if self._dirty_since is None else max(self._dirty_since, start)

    def on_news(self, now: float) -> None:
        """The frame being written says something new however small it is (the window title's own verdict
        changed: the spinner left Claude's title as its turn ended): judge it as a burst, not at the
        animation's next check. Without it the idle waited for the animation's stop rule, 1.5 usual gaps
        (0.16 s at 40x12 where Claude's final frame was only 2.5x its spinner's), or its steady interval."""
        if self._dirty_since is None:
            self._dirty_since = now
        self._news()

    def next_due(self) -> float:
        c = self.config
        if self._dirty_since is None:
            return self._last_classified + c.sweep
        due = min(self._last_output + c.settle, self._dirty_since + c.max_delay)
        if self._animating():
            later = self._last_classified + c.steady_interval
            if self._usual_gap is not None:  # unless it stops first
                later = min(later, self._last_output + c.stopped * self._usual_gap)
            due = max(due, later)
        # Never before the output already seen: a rhythm break can move the due time back.
        return max(due, self._last_classified + c.min_interval, self._last_output)

    def on_classified(self, now: float, changed: bool = False) -> None:
        self._steady = 0 if changed else self._steady + 1
        self._last_classified = now
        self._dirty_since = None


class FixedSweepSchedule:
    """The published design: classify every pane every `period` seconds, changed or not."""

    def __init__(self, period: float = 0.7, start: float = 0.0) -> None:
        self.period = period
        self._next = start

    def on_output(self, now: float, size: int = 0) -> None:
        pass

    def on_news(self, now: float) -> None:
        pass

    def next_due(self) -> float:
        return self._next

    def on_classified(self, now: float, changed: bool = False) -> None:
        while self._next <= now:
            self._next += self.period
