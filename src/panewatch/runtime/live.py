"""A live pane: a PTY and a PaneMachine on the real clock.

LivePane is the thin driver of core/machine.py's PaneMachine, the same object `panewatch replay` and
the golden tests drive in virtual time: it moves the pty's bytes in, keeps one timer re-armed to the
machine's next due time, polls the foreground process (psutil, runtime/process.py) and tells the
machine when it changed, passes reports and the exit on, and publishes the state changes the machine
returns (stamped with unix time), to subscribers and the events log. Everything runs on one asyncio
loop and never busy-waits. What the state is — staleness, priority, identity — is decided in core.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from panewatch.core.cast import CastWriter
from panewatch.core.classify import Verdict
from panewatch.core.combine import PaneState, Report
from panewatch.core.detector import PaneDetector
from panewatch.core.machine import Foreground, PaneMachine, StateChange
from panewatch.core.manifest import Manifest, ManifestError, ManifestSet, load_all
from panewatch.core.policy import ChangeDrivenSchedule, PolicyConfig, Schedule
from panewatch.core.screen import Screen, Snapshot
from panewatch.runtime import paths
from panewatch.runtime.process import ForegroundTracker
from panewatch.runtime.pty import PtySession

log = logging.getLogger("panewatch.runtime.live")

FOREGROUND_POLL = 0.5  # seconds; output also triggers a (cheap) check
MANIFEST_POLL = 1.0
EXIT_DRAIN = 0.5  # after the child exits, wait this long at most for its last output


class ManifestWatcher:
    """The manifests in force, reloaded when files in the user's agents dir change (mtime poll).

    A file that fails to load is reported and the last good manifest from that file stays in force.
    Several panes may share one watcher.
    """

    def __init__(self, user_dir: Path | None = None, *, interval: float = MANIFEST_POLL,
                 on_error: Callable[[str], None] | None = None) -> None:
        self.user_dir = paths.user_agents_dir() if user_dir is None else user_dir
        self.interval = interval
        self.on_error = on_error or (lambda message: log.warning("%s", message))
        self.reloads = 0
        self._signature = self._scan()
        self._set: ManifestSet = ManifestSet()
        self._list: list[Manifest] = []
        self._reported: set[str] = set()
        self._subscribers: list[Callable[[], None]] = []
        self._handle: asyncio.TimerHandle | None = None
        self._users = 0
        self._load()

    def current(self) -> list[Manifest]:
        return self._list

    def get(self, agent_id: str) -> Manifest | None:
        return self._set.get(agent_id)

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """`callback()` after every reload; returns the function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def _scan(self) -> tuple[tuple[str, int, int], ...]:
        try:
            entries = sorted(os.scandir(self.user_dir), key=lambda e: e.name)
        except OSError:
            return ()
        out = []
        for entry in entries:
            if entry.name.endswith(".toml"):
                with contextlib.suppress(OSError):
                    st = entry.stat()
                    out.append((entry.name, st.st_mtime_ns, st.st_size))
        return tuple(out)

    def _load(self) -> None:
        new = load_all(self.user_dir)
        previous = {m.source: m for m in self._list}
        messages: set[str] = set()
        for error in new.errors:
            kept = previous.get(error.path)
            if kept is not None:  # a bad edit: the last good version of that file stays in force
                new.manifests[kept.id] = kept
            messages.add(self._describe(error, kept))
        for message in sorted(messages - self._reported):
            self.on_error(message)
        self._reported = messages
        self._set = new
        self._list = new.list()

    @staticmethod
    def _describe(error: ManifestError, kept: Manifest | None) -> str:
        tail = f" (keeping the last good '{kept.id}' manifest)" if kept is not None else ""
        return f"panewatch: manifest not loaded: {error}{tail}"

    def check(self) -> bool:
        """Reload if a user manifest changed on disk; True if a reload happened."""
        signature = self._scan()
        if signature == self._signature:
            return False
        self._signature = signature
        self._load()
        self.reloads += 1
        for callback in list(self._subscribers):
            callback()
        return True

    def start(self) -> None:
        """Poll from the running loop (reference-counted: one timer for all panes sharing the watcher)."""
        self._users += 1
        if self._handle is None:
            self._handle = asyncio.get_running_loop().call_later(self.interval, self._tick)

    def stop(self) -> None:
        self._users = max(0, self._users - 1)
        if self._users == 0 and self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _tick(self) -> None:
        try:
            self.check()
        except Exception:  # a watcher that dies silently would freeze the rules: log and go on
            log.exception("manifest reload failed")
        self._handle = asyncio.get_running_loop().call_later(self.interval, self._tick)


Subscriber = Callable[[StateChange], None]


class LivePane:
    """One agent pane on the real clock. Create, then `start()` from inside the running loop."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        pane_id: str = "1",
        cols: int = 120,
        rows: int = 32,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        agent: str | None = None,
        headless: bool = True,
        manifests: ManifestWatcher | None = None,
        policy: PolicyConfig | None = None,
        schedule: Callable[[float], Schedule] | None = None,
        record: IO[str] | None = None,
        events: IO[str] | None = None,
        on_output: Callable[[bytes], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        wall: Callable[[], float] = time.time,
        tcattrs: list[Any] | None = None,
        program_status: bool = True,
    ) -> None:
        self.argv = list(argv)
        self.program_status = program_status  # a headless pane answers OSC 7501 probes (core/termstatus.py)
        self.pane_id = pane_id
        self.pinned_agent = agent
        self.headless = headless
        self.watcher = manifests or ManifestWatcher()
        self.on_output = on_output
        # A recording or events log that failed: one message each; the pane itself goes on.
        self.on_error = on_error or (lambda message: log.warning("%s", message))
        self._wall = wall
        self._env, self._cwd, self._tcattrs = env, cwd, tcattrs
        self._cols, self._rows = cols, rows
        # On the clock the loop will run (asyncio's is time.monotonic): a pane is made just before it starts.
        # The timing policy: ours with `policy` by default, or e.g. a benchmark's FixedSweepSchedule.
        made = time.monotonic()
        self.machine = PaneMachine(self.watcher.current, cols, rows, pane_id=pane_id, agent=agent, start=made,
                                   cost_clock=time.perf_counter,
                                   schedule=(schedule or (lambda t: ChangeDrivenSchedule(policy, start=t)))(made))
        self.tracker = ForegroundTracker()
        self.exit_code: int | None = None
        self.changes = 0
        self._record_fh, self._events_fh = record, events
        self._cast: CastWriter | None = None
        self._decoders = {k: codecs.getincrementaldecoder("utf-8")("replace") for k in ("o", "i")}
        self._subscribers: list[Subscriber] = []
        self._session: PtySession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._due: asyncio.TimerHandle | None = None
        self._due_at = float("inf")
        self._fg_handle: asyncio.TimerHandle | None = None
        self._unwatch: Callable[[], None] | None = None
        self._exit_task: asyncio.Task[None] | None = None
        self._done: asyncio.Event | None = None
        self._last_input = float("-inf")

    # -- lifetime ----------------------------------------------------------------------------

    def start(self) -> None:
        """Spawn the command on a new pty and start watching it. Call from the running loop."""
        loop = self._loop = asyncio.get_running_loop()
        now = loop.time()
        self._session = PtySession(self.argv, cols=self._cols, rows=self._rows, env=self._env, cwd=self._cwd,
                                   on_output=self._on_output, tcattrs=self._tcattrs)
        if self.headless:  # no outer terminal answers DA1/DSR here; agents stall without the reply
            self.screen.on_reply(self._session.write)
            self.screen.answer_program_status = self.program_status
        if self._record_fh is not None:
            try:
                self._cast = CastWriter(self._record_fh, self._cols, self._rows, now, timestamp=int(self._wall()),
                                        command=" ".join(self.argv), env={"TERM": (self._env or os.environ).get(
                                            "TERM", "xterm-256color")})
            except (OSError, ValueError) as exc:
                self._file_failed("the recording", self._record_fh, exc)
        self._done = asyncio.Event()
        self._session.start_reading()
        self.watcher.start()
        self._unwatch = self.watcher.subscribe(self._on_manifests)
        self._emit(StateChange(now, self.pane_id, None, self.state, self.agent))
        self._arm()
        self._fg_handle = loop.call_later(0, self._poll_foreground)
        self._exit_task = loop.create_task(self._watch_exit())

    @property
    def pid(self) -> int | None:
        return None if self._session is None else self._session.pid

    @property
    def session(self) -> PtySession | None:
        return self._session

    @property
    def exited(self) -> bool:
        return self.exit_code is not None

    async def wait(self) -> int:
        """The command's exit status, once it exited, its last output was detected and its pty released."""
        if self._done is None:
            raise RuntimeError("LivePane.start() was not called")
        await self._done.wait()
        if self.exit_code is None:  # closed, but the child could not be reaped (stuck in the kernel)
            raise RuntimeError(f"pane {self.pane_id}: the command did not exit")
        return self.exit_code

    async def close(self) -> None:
        """Terminate the command's process group if it still runs, record its end ('exited' with the
        status, e.g. 129 after our hangup), stop watching."""
        if self._session is not None:
            await self._session.aclose()
        task = self._exit_task
        if task is not None and not task.done():
            try:  # the exit watcher sees the reaped child at once and records the final state
                await asyncio.wait_for(asyncio.shield(task), 2.0)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._stop_timers()
        if self.exit_code is None and self._session is not None:
            self.exit_code = self._session.returncode
        self.screen.close()
        if self._done is not None:
            self._done.set()

    def _stop_timers(self) -> None:
        for handle in (self._due, self._fg_handle):
            if handle is not None:
                handle.cancel()
        self._due = self._fg_handle = None
        self._due_at = float("inf")
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
            self.watcher.stop()

    async def _watch_exit(self) -> None:
        assert self._session is not None and self._loop is not None
        code = await self._session.wait()
        await self._session.wait_eof(EXIT_DRAIN)  # its last frame still counts
        self._publish(self.machine.exited(self._loop.time(), code))
        self.exit_code = code
        self._stop_timers()
        # An exited pane keeps only its last screen: its pty goes now (what is left in its session is
        # hung up, as a closed terminal does), not when its card leaves the board, and so does the
        # screen's engine (Screen.close keeps the snapshot and a repaint).
        await self._session.aclose()
        self.screen.close()
        assert self._done is not None
        self._done.set()

    # -- I/O ---------------------------------------------------------------------------------

    # The order of every path below: the user's terminal, the pane (machine, or the pty), and only
    # then the recording, so that a recording that fails or lags costs nothing else.

    def _on_output(self, data: bytes) -> None:
        assert self._loop is not None
        now = self._loop.time()
        if self.on_output is not None:
            self.on_output(data)  # the user's terminal first: detection must not add latency to it
        self._publish(self.machine.output(now, data))
        self._arm()
        if self._session is not None:
            self._foreground_changed(now, self._session.foreground_pgid())
        self._record(now, "o", data)

    def write(self, data: bytes) -> None:
        """Bytes to the pane as typed input. Callers: the input guard and `run`'s key pump only (and
        the screen's replies to terminal queries, wired in `start`)."""
        if self._session is None or not data:
            return
        self._session.write(data)
        if self._loop is not None:
            self._last_input = self._loop.time()
            self._record(self._last_input, "i", data)

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

    def resize(self, cols: int, rows: int) -> None:
        if (cols, rows) == (self._cols, self._rows) or self._loop is None:
            return
        self._cols, self._rows = cols, rows
        now = self._loop.time()
        if self._session is not None:
            self._session.resize(cols, rows)
        self._publish(self.machine.resize(now, cols, rows))
        self._arm()
        self._record(now, "r", f"{cols}x{rows}")

    def _record(self, now: float, kind: str, data: bytes | str) -> None:
        if self._cast is None:
            return
        # Incremental: a UTF-8 character split across reads stays whole.
        text = data if isinstance(data, str) else self._decoders[kind].decode(data)
        if not text:
            return
        try:
            self._cast.write(now, kind, text)
        except (OSError, ValueError) as exc:  # a full disk, a closed file: stop recording, nothing else
            self._cast = None
            self._file_failed("the recording", self._record_fh, exc)

    def _file_failed(self, what: str, fh: IO[str] | None, exc: Exception) -> None:
        name = getattr(fh, "name", None)
        where = f" ({name})" if isinstance(name, str) else ""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.on_error(f"panewatch: {what}{where} stopped: {reason}; the pane and its detection went on")

    # -- detection: the machine's, on this loop's timers --------------------------------------

    def _arm(self) -> None:
        """(Re)arm the one detection timer at the machine's next due time."""
        if self._loop is None or self.exit_code is not None:
            return
        due = self.machine.next_due()
        if self._due is not None and due >= self._due_at:
            return
        if self._due is not None:
            self._due.cancel()
        self._due_at = due
        self._due = self._loop.call_at(due, self._on_due)

    def _on_due(self) -> None:
        assert self._loop is not None
        self._due, self._due_at = None, float("inf")
        self._publish(self.machine.tick(self._loop.time()))
        self._arm()

    def classify_now(self) -> PaneState:
        """Re-classify the screen now, whatever the schedule says, and return the combined state: the
        input guard checks this way (a prompt a hook reported before it was drawn, or an agent that
        exited, must refuse input too). The screen's own verdict is then `self.verdict`."""
        now = self.clock()
        if self._session is not None:
            self._foreground_changed(now, self._session.foreground_pgid())
        self._publish(self.machine.check(now))
        return self.state

    @property
    def state(self) -> PaneState:
        return self.machine.state

    @property
    def verdict(self) -> Verdict:
        return self.machine.verdict

    @property
    def agent(self) -> str | None:
        return self.machine.agent

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

    def _on_manifests(self) -> None:
        if self._loop is not None and self.exit_code is None:
            self._publish(self.machine.manifests_changed(self._loop.time()))

    def _poll_foreground(self) -> None:
        assert self._loop is not None
        self._fg_handle = None
        if self._session is None or self.exit_code is not None:
            return
        self._foreground_changed(self._loop.time(), self._session.foreground_pgid())
        self._fg_handle = self._loop.call_later(FOREGROUND_POLL, self._poll_foreground)

    def _foreground_changed(self, now: float, pgid: int | None) -> None:
        assert self._session is not None
        if self.tracker.poll(now, pgid, self._session.pid, self.watcher.current()):
            self._publish(self.machine.foreground(now, self.tracker.current))

    def report(self, report: Report) -> None:
        """A hook or ACP report about this pane (on this loop's clock, else taken as arriving now)."""
        if self._loop is not None:
            self._publish(self.machine.report(self._loop.time(), report))

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
