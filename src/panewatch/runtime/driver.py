"""PaneDriver: a PaneMachine on the real clock, whatever the pane's bytes come from.

The part of a live pane that is the same for every source (a PTY we spawned: runtime/live.py
`LivePane`; a tmux pane seen through control mode: runtime/tmux_watch.py `TmuxPane`): one timer
re-armed to the machine's next due time, reports and manifest reloads passed on, the state changes
the machine returns published (stamped with unix time) to subscribers and the events log. A source
subclasses it, moves bytes in with `_feed`, tells it about the foreground, and writes input its own way.
Everything runs on one asyncio loop; what the state is is decided in core.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import logging
import math
import time
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import IO, Protocol

from panewatch.core.classify import Verdict
from panewatch.core.combine import PaneState, Report
from panewatch.core.detector import TIMER_SLACK, PaneDetector
from panewatch.core.history import HISTORY_BYTES
from panewatch.core.machine import Foreground, PaneMachine, StateChange, collapse
from panewatch.core.manifest import DEFAULT_SUBMIT_GAP, Manifest
from panewatch.core.panekind import PaneKind
from panewatch.core.policy import ChangeDrivenSchedule, PolicyConfig, Schedule
from panewatch.core.screen import CellStyle, Screen, Snapshot
from panewatch.runtime.process import ForegroundTracker
from panewatch.runtime.version import ProcessVersions

log = logging.getLogger("panewatch.runtime.live")

Subscriber = Callable[[StateChange], None]


class Manifests(Protocol):
    """What a driver needs of the manifests in force (runtime/live.py `ManifestWatcher`)."""

    def current(self) -> list[Manifest]: ...
    def get(self, agent_id: str) -> Manifest | None: ...
    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...


class DueTimers:
    """Every pane's detection time on one loop in one heap, behind one asyncio timer: asyncio's own
    heap compares its TimerHandles in Python (`__lt__`, ~12 calls per push or pop among 1000 panes'
    timers) and a re-armed pane leaves a cancelled handle behind; here the heap holds plain tuples and
    a superseded entry is skipped when its time comes. Times are offered up to `grain` early (the
    detector's TIMER_SLACK: a check that early has come), and the one timer is set on a grid of
    `grain` seconds, so the panes due in one grain are checked in one turn, not one turn each. An
    `exact` time (one offered early that had not come: a report's settling time counts exactly) is
    run when it comes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, grain: float = TIMER_SLACK) -> None:
        self._loop = loop
        self.grain = grain
        self._heap: list[tuple[float, int, PaneDriver, bool]] = []
        self._tokens = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._handle_at = float("inf")
        self._resolution = time.get_clock_info("monotonic").resolution

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> DueTimers:
        timers = _TIMERS.get(loop)
        if timers is None:
            timers = _TIMERS[loop] = cls(loop)
        return timers

    def arm(self, when: float, driver: PaneDriver, exact: bool = False) -> int:
        """Call `driver._on_due(token)` at `when` (loop time; up to `grain` early unless `exact`);
        returns the token."""
        token = next(self._tokens)
        heapq.heappush(self._heap, (when, token, driver, exact))
        self._schedule(when, exact)
        return token

    def _schedule(self, when: float, exact: bool) -> None:
        at = when if exact or self.grain <= 0 else math.floor(when / self.grain) * self.grain
        if at >= self._handle_at:
            return  # the timer already set comes first
        if self._handle is not None:
            self._handle.cancel()
        self._handle, self._handle_at = self._loop.call_at(at, self._fire), at

    def _fire(self) -> None:
        self._handle, self._handle_at = None, float("inf")
        now = self._loop.time()
        early, come = now + max(self.grain, self._resolution), now + self._resolution  # what asyncio counts as come
        heap, due = self._heap, []
        while heap and heap[0][0] < (come if heap[0][3] else early):
            due.append(heapq.heappop(heap))  # popped first: a time armed by one of them waits for the next turn
        for _, token, driver, _exact in due:
            try:
                driver._on_due(token)
            except Exception:  # one pane's failure must not stop the others' detection
                log.exception("detection of pane %s failed", driver.pane_id)
        if heap:
            self._schedule(heap[0][0], heap[0][3])


class PaneDriver:
    """The machine, its timer and its subscribers. `_loop` is set by the source's `start()`."""

    def __init__(self, watcher: Manifests, *, pane_id: str, cols: int, rows: int, agent: str | None = None,
                 policy: PolicyConfig | None = None, schedule: Callable[[float], Schedule] | None = None,
                 events: IO[str] | None = None, on_error: Callable[[str], None] | None = None,
                 wall: Callable[[], float] = time.time, history: int = HISTORY_BYTES) -> None:
        self.pane_id = pane_id
        self.pinned_agent = agent
        self.watcher = watcher
        # A recording or events log that failed: one message each; the pane itself goes on.
        self.on_error = on_error or (lambda message: log.warning("%s", message))
        self._wall = wall
        # On the clock the loop will run (asyncio's is time.monotonic): a pane is made just before it starts.
        # The timing policy: ours with `policy` by default, or e.g. a benchmark's FixedSweepSchedule.
        made = time.monotonic()
        self.machine = PaneMachine(watcher.current, cols, rows, pane_id=pane_id, agent=agent, start=made,
                                   cost_clock=time.perf_counter, history=history,
                                   schedule=(schedule or (lambda t: ChangeDrivenSchedule(policy, start=t)))(made))
        self.tracker = ForegroundTracker()
        self.versions = ProcessVersions()  # the agent's version, learnt off the loop (runtime/version.py)
        self.on_foreground: Callable[[], None] | None = None  # who holds the pane changed (the board's card)
        self.changes = 0
        self._events_fh = events
        self._subscribers: list[Subscriber] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._due: int | None = None  # our entry in the loop's DueTimers (its token)
        self._due_at = float("inf")
        self._timers: DueTimers | None = None
        self._unwatch: Callable[[], None] | None = None
        self._last_input = float("-inf")

    # -- lifetime (for the source) -------------------------------------------------------------

    def _start_driving(self, loop: asyncio.AbstractEventLoop, now: float | None = None) -> None:
        """Watch the manifests, publish the first state (stamped `now`: when the pane started, the
        time its recording starts from), arm the timer."""
        self._loop = loop
        self._timers = DueTimers.of(loop)
        self.watcher.start()
        self._unwatch = self.watcher.subscribe(self._on_manifests)
        self._emit(StateChange(loop.time() if now is None else now, self.pane_id, None, self.state, self.agent))
        self._arm()

    def _stop_driving(self) -> None:
        self._due = None  # our entry, if any, is skipped when its time comes
        self._due_at = float("inf")
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
            self.watcher.stop()

    def _feed(self, now: float, data: bytes) -> None:
        """Bytes the pane's program wrote, into the machine (then the timer follows its due time)."""
        self._publish(self.machine.output(now, data))
        self._arm()

    def _resize_machine(self, now: float, cols: int, rows: int) -> None:
        self._publish(self.machine.resize(now, cols, rows))
        self._arm()

    def _refresh_foreground(self, now: float) -> None:
        """Look at who holds the pane now (the source knows how); called before an input check."""

    # -- detection: the machine's, on this loop's timers ------------------------------------------

    def _arm(self, *, now: float | None = None) -> None:
        """(Re)arm the one detection timer at the machine's next due time (`now`: the time of a turn
        that found nothing due; a due time within its grain was offered early and is armed exactly)."""
        if self._timers is None or self.machine.has_exited:
            return
        due = self.machine.next_due()
        if self._due is not None and due >= self._due_at:
            return  # the armed time comes first: the tick then finds nothing due and re-arms
        self._due_at = due
        exact = now is not None and due < now + self._timers.grain
        self._due = None if due == float("inf") else self._timers.arm(due, self, exact)

    def _on_due(self, token: int) -> None:
        if token != self._due or self._loop is None:
            return  # superseded by an earlier time, or the pane stopped
        self._due, self._due_at = None, float("inf")
        now = self._loop.time()
        due = self.machine.is_due(now)
        if due:
            self._before_check(now)
        changes = self.machine.tick(now)
        if any(change.new.state == "blocked" for change in changes):
            changes = self._confirm_blocked(now, changes)
        self._publish(changes)
        self._arm(now=None if due else now)

    def _before_check(self, now: float) -> None:
        """A scheduled check is about to classify the screen (the source may look at who holds it first)."""

    def _confirm_blocked(self, now: float, changes: list[StateChange]) -> list[StateChange]:
        """A check would make the pane blocked: look at who holds it NOW before that is published (the last
        look may be a second old: a `cat` of a transcript right after the agent exited is judged by the
        agent's rules until the shell is seen in front). The changes that look causes are folded in, so a
        block that was never true is never published (nor notified, nor counted)."""
        if not self._look_again(now):
            return changes
        fg = self.foreground
        changes = collapse(changes + self.machine.foreground(now, fg))
        self._after_foreground(fg)
        return changes

    def _look_again(self, now: float) -> bool:
        """Look at who holds the pane now (into `foreground`, not yet told to the machine); True if that
        changed. A source that cannot look (a remote pane: tmux tells it) says False."""
        return False

    def classify_now(self) -> PaneState:
        """Re-classify the screen now, whatever the schedule says, and return the combined state: the
        input guard checks this way (a prompt a hook reported before it was drawn, or an agent that
        exited, must refuse input too). The screen's own verdict is then `self.verdict`."""
        now = self.clock()
        self._refresh_foreground(now)
        self._publish(self.machine.check(now))
        return self.state

    def mid_frame(self) -> bool:
        """Its program is inside a synchronized update: the screen is a frame half drawn (the guard waits)."""
        return self.machine.detector.mid_frame(self.clock())

    def _set_foreground(self, now: float, fg: Foreground | None) -> None:
        self._publish(self.machine.foreground(now, fg))
        self._after_foreground(fg)

    def _after_foreground(self, fg: Foreground | None) -> None:
        self._foreground_news()
        if self._loop is not None and fg is not None and self.versions.wanted(fg):
            self.versions.probe(self._loop, fg, self.watcher.current(), self._version_learnt)

    def _version_learnt(self, pid: int, version: str | None) -> None:
        if self._loop is None or self.machine.has_exited:
            return
        if self.tracker.learn_version(pid, version):
            self._publish(self.machine.foreground(self._loop.time(), self.tracker.current))
            self._foreground_news()

    def _foreground_news(self) -> None:
        if self.on_foreground is not None:
            try:
                self.on_foreground()
            except Exception:  # a listener's bug must not stop the foreground poll
                log.exception("foreground listener failed")

    def _on_manifests(self) -> None:
        if self._loop is not None and not self.machine.has_exited:
            self._publish(self.machine.manifests_changed(self._loop.time()))

    def report(self, report: Report) -> None:
        """A hook or ACP report about this pane (on this loop's clock, else taken as arriving now)."""
        if self._loop is not None:
            self._publish(self.machine.report(self._loop.time(), report))

    # -- queries -------------------------------------------------------------------------------

    def clock(self) -> float:
        """The pane's clock: its loop's (`last_output`, `last_input` and state changes' `t` are on it)."""
        return self._loop.time() if self._loop is not None else time.monotonic()

    @property
    def last_output(self) -> float:
        """When output was last fed to the screen (a resize counts: the agent redraws after it)."""
        return self.machine.last_output

    @property
    def last_input(self) -> float:
        """When bytes were last written to the pane as input (the guard's, or `run`'s key pump)."""
        return self._last_input

    @property
    def state(self) -> PaneState:
        return self.machine.state

    @property
    def verdict(self) -> Verdict:
        return self.machine.verdict

    @property
    def agent(self) -> str | None:
        return self.machine.agent

    def submit_gap(self) -> float:
        """Seconds the agent needs between typed text and its Enter (its manifest's `submit_gap`): the guard's."""
        manifest = self.watcher.get(self.agent) if self.agent else None
        return manifest.submit_gap if manifest is not None else DEFAULT_SUBMIT_GAP

    @property
    def kind(self) -> PaneKind:
        """What the pane is (core/panekind.py): agent, view, other or unknown."""
        return self.machine.kind

    @property
    def screen(self) -> Screen:
        return self.machine.screen

    @property
    def detector(self) -> PaneDetector:
        return self.machine.detector

    @property
    def report_in_force(self) -> Report | None:
        return self.machine.report_in_force

    @property
    def foreground(self) -> Foreground | None:
        return self.tracker.current

    def snapshot(self) -> Snapshot:
        return self.screen.snapshot()

    def row_styles(self, row: int) -> list[CellStyle]:
        """The cells' looks on one visible row (core/screen.py): what the guard reads a selection from."""
        return self.screen.row_styles(row)

    # -- publishing ------------------------------------------------------------------------------

    def _publish(self, changes: list[StateChange]) -> None:
        for change in changes:
            self._emit(change)

    def _emit(self, change: StateChange) -> None:
        self.changes += 1
        change = replace(change, wall=self._wall())
        for callback in list(self._subscribers):
            try:
                callback(change)
            except Exception:  # one bad subscriber must not stop detection or the others
                log.exception("state subscriber failed")
        if self._events_fh is not None:  # last, like the recording
            try:
                self._events_fh.write(json.dumps(change.as_json(), ensure_ascii=False) + "\n")
                self._events_fh.flush()
            except (OSError, ValueError) as exc:
                fh, self._events_fh = self._events_fh, None
                self._file_failed("the events log", fh, exc)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """`callback(change)` on every state change; returns the function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def _file_failed(self, what: str, fh: IO[str] | None, exc: Exception) -> None:
        name = getattr(fh, "name", None)
        where = f" ({name})" if isinstance(name, str) else ""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.on_error(f"panewatch: {what}{where} stopped: {reason}; the pane and its detection went on")


_TIMERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, DueTimers] = weakref.WeakKeyDictionary()
