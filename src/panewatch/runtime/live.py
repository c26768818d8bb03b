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
import logging
import os
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from panewatch.core.cast import CastWriter
from panewatch.core.history import HISTORY_BYTES
from panewatch.core.manifest import Manifest, ManifestError, ManifestSet, load_all
from panewatch.core.policy import PolicyConfig, Schedule
from panewatch.runtime import paths
from panewatch.runtime.driver import PaneDriver
from panewatch.runtime.pty import PtySession

log = logging.getLogger("panewatch.runtime.live")

FOREGROUND_POLL = 0.5  # seconds; output also has it looked at before the check it leads to
SWEEP_SLICES = 10  # the foreground sweep's round in this many ticks (ForegroundSweep)
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


class ForegroundSweep:
    """One timer per event loop polls the foreground of every live pane on it each FOREGROUND_POLL:
    with a timer per pane, 1000 panes cost 2000 timer callbacks a second (a handle each, the heap,
    a loop turn) for what is one cheap `tcgetpgrp` per pane. Each round is cut into SWEEP_SLICES
    slices, one per tick (a 1000-pane round in one callback held the loop for 15-30 ms, a latency
    spike for every pane behind it): each pane is still polled once a round. A pane that fails is
    logged; the sweep goes on to the others."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._panes: dict[int, LivePane] = {}  # by id(): insertion order is the polling order
        self._handle: asyncio.TimerHandle | None = None
        self._round: list[LivePane] = []  # this round's panes, taken as it began
        self._slice = 0  # the next slice of the round
        self.sweeps = 0  # slices that polled panes

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> ForegroundSweep:
        sweep = _SWEEPS.get(loop)
        if sweep is None:
            sweep = _SWEEPS[loop] = cls(loop)
        return sweep

    def add(self, pane: LivePane) -> None:
        self._panes[id(pane)] = pane
        if self._handle is None:
            self._handle = self._loop.call_later(FOREGROUND_POLL / SWEEP_SLICES, self._sweep)

    def remove(self, pane: LivePane) -> None:
        self._panes.pop(id(pane), None)
        if not self._panes and self._handle is not None:
            self._handle.cancel()
            self._handle = None
            self._round, self._slice = [], 0

    def __len__(self) -> int:
        return len(self._panes)

    def _sweep(self) -> None:
        self._handle = None
        if self._slice == 0:
            self._round = list(self._panes.values())
        size = -(-len(self._round) // SWEEP_SLICES)  # ceil: the last slices may be empty
        part = self._round[self._slice * size:(self._slice + 1) * size]
        self._slice = (self._slice + 1) % SWEEP_SLICES
        if part:
            self.sweeps += 1
        for pane in part:
            if id(pane) not in self._panes:
                continue  # removed during the round
            try:
                pane._poll_foreground()
            except Exception:  # one pane's failure must not stop the others' polls
                log.exception("foreground poll of pane %s failed", pane.pane_id)
        if self._panes and self._handle is None:
            self._handle = self._loop.call_later(FOREGROUND_POLL / SWEEP_SLICES, self._sweep)


_SWEEPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ForegroundSweep] = weakref.WeakKeyDictionary()


class LivePane(PaneDriver):
    """One agent pane on the real clock. Create, then `start()` from inside the running loop.

    `history`: bytes of recent output its machine keeps (core/history.py) for `report-wrong`; 0: none."""

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
        history: int = HISTORY_BYTES,
        program_status: bool = True,
    ) -> None:
        super().__init__(manifests or ManifestWatcher(), pane_id=pane_id, cols=cols, rows=rows, agent=agent,
                         policy=policy, schedule=schedule, events=events, on_error=on_error, wall=wall,
                         history=history)
        self.argv = list(argv)
        self.program_status = program_status  # a headless pane answers OSC 7501 probes (core/termstatus.py)
        self.headless = headless
        self.on_output = on_output
        self._env, self._cwd, self._tcattrs = env, cwd, tcattrs
        self._cols, self._rows = cols, rows
        self.exit_code: int | None = None
        self._record_fh = record
        self._cast: CastWriter | None = None
        self._decoders = {k: codecs.getincrementaldecoder("utf-8")("replace") for k in ("o", "i")}
        self._session: PtySession | None = None
        self._fg_first: asyncio.Handle | None = None
        self._fg_stale = False  # output arrived since the foreground was last looked at
        self._fg_sweep: ForegroundSweep | None = None
        self._exit_task: asyncio.Task[None] | None = None
        self._done: asyncio.Event | None = None

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
        self._start_driving(loop, now)  # one time axis with the recording (LiveAgent.t0)
        self._fg_first = loop.call_soon(self._first_poll)  # then every FOREGROUND_POLL with the others
        self._fg_sweep = ForegroundSweep.of(loop)
        self._fg_sweep.add(self)
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
        if self._fg_first is not None:
            self._fg_first.cancel()
        self._fg_first = None
        if self._fg_sweep is not None:
            self._fg_sweep.remove(self)
        self._fg_sweep = None
        self._stop_driving()

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
        self._fg_stale = True  # looked at before the check this output leads to (`_before_check`)
        self._feed(now, data)
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

    def resize(self, cols: int, rows: int) -> None:
        if (cols, rows) == (self._cols, self._rows) or self._loop is None:
            return
        self._cols, self._rows = cols, rows
        now = self._loop.time()
        if self._session is not None:
            self._session.resize(cols, rows)
        self._resize_machine(now, cols, rows)
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

    def _before_check(self, now: float) -> None:
        # Output may come from a job that just took the pane (an agent started from the shell, the
        # shell back after it): the screen is judged with who holds the pane now. Once per check, not
        # per read: a streaming pane's 30-100 reads a second each cost a tcgetpgrp and a tracker poll.
        if self._fg_stale:
            self._poll_foreground()

    def _first_poll(self) -> None:
        self._fg_first = None
        self._poll_foreground()

    def _poll_foreground(self) -> None:
        assert self._loop is not None
        self._fg_stale = False
        if self._session is None or self.exit_code is not None:
            return
        self._foreground_changed(self._loop.time(), self._session.foreground_pgid())

    def _foreground_changed(self, now: float, pgid: int | None) -> None:
        assert self._session is not None
        if self.tracker.poll(now, pgid, self._session.pid, self.watcher.current()):
            self._set_foreground(now, self.tracker.current)
        elif self.tracker.read:  # the same group holds it, read just now (not a poll skipped as too soon)
            self.machine.looked(now)

    def _refresh_foreground(self, now: float) -> None:
        if self._session is not None:
            self._foreground_changed(now, self._session.foreground_pgid())

    def _look_again(self, now: float) -> bool:
        if self._session is None or self.exit_code is not None:
            return False
        self._fg_stale = False
        return self.tracker.poll(now, self._session.foreground_pgid(), self._session.pid, self.watcher.current())
