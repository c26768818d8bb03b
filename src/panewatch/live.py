"""A live pane: a PTY, its screen, detection on the real clock, process identity, reports → PaneState.

Everything here runs on one asyncio loop and never busy-waits: one timer re-armed to the timing
policy's next due time, one slow timer for the foreground process and one for manifest edits. The
detection itself is the same pure pipeline `panewatch replay` uses (PaneDetector + ChangeDrivenSchedule);
signal priority is `combine()`'s alone.
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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from panewatch import paths
from panewatch.cast import CastWriter
from panewatch.classify import Verdict
from panewatch.combine import PaneState, Report, combine, screen_key
from panewatch.detector import PaneDetector
from panewatch.manifest import Manifest, ManifestError, ManifestSet, load_all
from panewatch.policy import ChangeDrivenSchedule, PolicyConfig, Schedule
from panewatch.procinfo import Foreground, ForegroundTracker
from panewatch.pty_session import PtySession
from panewatch.screen import Screen, Snapshot

log = logging.getLogger("panewatch.live")

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


@dataclass(frozen=True, slots=True)
class StateChange:
    """One change of a pane's combined state. `t` is unix time, `mono` the loop's clock."""

    t: float
    mono: float
    pane: str
    old: PaneState | None
    new: PaneState
    agent: str | None

    def as_json(self) -> dict[str, Any]:
        return {"t": round(self.t, 6), "pane": self.pane, "state": self.new.state, "rule": self.new.rule,
                "source": self.new.source, "agent": self.agent, "detail": self.new.detail or None}


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
        wall: Callable[[], float] = time.time,
        tcattrs: list[Any] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.pane_id = pane_id
        self.pinned_agent = agent
        self.headless = headless
        self.watcher = manifests or ManifestWatcher()
        self.on_output = on_output
        self._wall = wall
        self._env, self._cwd, self._tcattrs = env, cwd, tcattrs
        # The timing policy, built at start on the loop's clock (`schedule(start)`, e.g. a benchmark's
        # FixedSweepSchedule); by default ours with `policy`.
        self._schedule = schedule or (lambda start: ChangeDrivenSchedule(policy, start=start))
        self._cols, self._rows = cols, rows
        self.screen = Screen(cols, rows)
        self.detector = PaneDetector(self.watcher.current, self.screen, agent_id=agent)
        self.tracker = ForegroundTracker()
        self.state = PaneState("idle", "screen", None)
        self.report_in_force: Report | None = None
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
        self._last_output = 0.0
        self._last_input = float("-inf")
        self._screen_changed_at = 0.0
        self._last_snapshot: Snapshot | None = None
        self._report_key: tuple[str, ...] | None = None  # the screen a report arrived on, animations ignored
        self._agent_seen = False  # an agent held this pane (by process or by its screen)
        self._agent_by_process = False  # ... and we recognised its process

    # -- lifetime ----------------------------------------------------------------------------

    def start(self) -> None:
        """Spawn the command on a new pty and start watching it. Call from the running loop."""
        loop = self._loop = asyncio.get_running_loop()
        now = loop.time()
        self._last_output = self._screen_changed_at = now
        self.detector.schedule = self._schedule(now)
        self._session = PtySession(self.argv, cols=self._cols, rows=self._rows, env=self._env, cwd=self._cwd,
                                   on_output=self._on_output, tcattrs=self._tcattrs)
        if self.headless:  # no outer terminal answers DA1/DSR here; agents stall without the reply
            self.screen.on_reply(self._session.write)
        if self._record_fh is not None:
            self._cast = CastWriter(self._record_fh, self._cols, self._rows, now, timestamp=int(self._wall()),
                                    command=" ".join(self.argv), env={"TERM": (self._env or os.environ).get(
                                        "TERM", "xterm-256color")})
        self._done = asyncio.Event()
        self._session.start_reading()
        self.watcher.start()
        self._unwatch = self.watcher.subscribe(self._on_manifests)
        self._emit(now, None, self.state)
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
        """The command's exit status, once it exited and its last output was detected."""
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
        if self._done is not None:
            self._done.set()
        self.screen.on_reply(None)

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
        self._check(self._loop.time())
        self.exit_code = code
        self._stop_timers()
        self._set_state(self._loop.time(), PaneState("exited", "process", None, f"exit code {code}"))
        assert self._done is not None
        self._done.set()

    # -- I/O ---------------------------------------------------------------------------------

    def _on_output(self, data: bytes) -> None:
        assert self._loop is not None
        now = self._loop.time()
        if self.on_output is not None:
            self.on_output(data)  # the user's terminal first: detection must not add latency to it
        self._record(now, "o", data)
        self._last_output = now
        self.detector.feed(now, data)
        self._arm()
        if self._session is not None:
            self._foreground_changed(now, self._session.foreground_pgid())

    def write(self, data: bytes) -> None:
        """Bytes to the pane as typed input. Callers: the input guard and `run`'s key pump only."""
        if self._session is None or not data:
            return
        if self._loop is not None:
            self._last_input = self._loop.time()
            self._record(self._last_input, "i", data)
        self._session.write(data)

    def clock(self) -> float:
        """The pane's clock: its loop's (`last_output`, `last_input` and state changes' `mono` are on it)."""
        return self._loop.time() if self._loop is not None else time.monotonic()

    @property
    def last_output(self) -> float:
        """When output was last fed to the screen (a resize counts: the agent redraws after it)."""
        return self._last_output

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
        if self._cast is not None:
            self._cast.write(now, "r", f"{cols}x{rows}")
        self._last_output = now
        self.detector.resize(now, cols, rows)
        self._arm()

    def _record(self, now: float, kind: str, data: bytes) -> None:
        if self._cast is not None:
            text = self._decoders[kind].decode(data)  # incremental: a UTF-8 char split across reads stays whole
            if text:
                self._cast.write(now, kind, text)

    # -- detection ---------------------------------------------------------------------------

    def _arm(self) -> None:
        """(Re)arm the one detection timer at the policy's next due time."""
        if self._loop is None or self.exit_code is not None:
            return
        due = self.detector.next_due()
        if self._due is not None and due >= self._due_at:
            return
        if self._due is not None:
            self._due.cancel()
        self._due_at = due
        self._due = self._loop.call_at(due, self._on_due)

    def _on_due(self) -> None:
        assert self._loop is not None
        self._due, self._due_at = None, float("inf")
        now = self._loop.time()
        if self.detector.due(now):  # else output since arming moved the check later: wait for it
            self.detector.tick(now)
            self._observe_screen()
            self._update(now)
        self._arm()

    def _observe_screen(self) -> None:
        """Track when the screen last changed, which supersedes a report (combine.report_is_fresh).
        While a report is in force, animations (a blinking bullet, a spinner, the title) do not count:
        compared by `screen_key` against the screen the report arrived on. Without one, any change does."""
        snapshot = self.screen.snapshot()
        if snapshot is self._last_snapshot or snapshot == self._last_snapshot:
            return
        if self._last_snapshot is not None:
            if self.report_in_force is None or self._report_key is None:
                self._screen_changed_at = self._last_output  # the output that made the change
            elif screen_key(snapshot) != self._report_key:
                self._screen_changed_at = self._last_output
                self._report_key = None  # superseded for good: later changes need no comparison
        self._last_snapshot = snapshot

    def _check(self, now: float) -> Verdict:
        verdict = self.detector.classify_now()
        self._observe_screen()
        self._update(now)
        return verdict

    def classify_now(self) -> PaneState:
        """Re-classify the screen now, whatever the schedule says, and return the combined state: the
        input guard checks this way (a prompt a hook reported before it was drawn, or an agent that
        exited, must refuse input too). The screen's own verdict is then `self.verdict`."""
        now = self._loop.time() if self._loop is not None else 0.0
        if self._session is not None:
            self._foreground_changed(now, self._session.foreground_pgid())
        self._check(now)
        return self.state

    @property
    def verdict(self) -> Verdict:
        return self.detector.verdict

    @property
    def agent(self) -> str | None:
        fg = self.tracker.current
        return self.pinned_agent or (fg.agent_id if fg else None) or self.detector.verdict.agent or None

    @property
    def foreground(self) -> Foreground | None:
        return self.tracker.current

    def snapshot(self) -> Snapshot:
        return self.screen.snapshot()

    def _on_manifests(self) -> None:
        if self._loop is None or self.exit_code is not None:
            return
        # An edited rule must apply to the screen already shown, not only to the next output.
        self._refresh_agent()
        self._check(self._loop.time())

    # -- process identity --------------------------------------------------------------------

    def _poll_foreground(self) -> None:
        assert self._loop is not None
        self._fg_handle = None
        if self._session is None or self.exit_code is not None:
            return
        now = self._loop.time()
        self._foreground_changed(now, self._session.foreground_pgid())
        self._fg_handle = self._loop.call_later(FOREGROUND_POLL, self._poll_foreground)

    def _foreground_changed(self, now: float, pgid: int | None) -> None:
        assert self._session is not None
        if not self.tracker.poll(now, pgid, self._session.pid, self.watcher.current()):
            return
        self._refresh_agent()
        self._check(now)

    def _refresh_agent(self) -> None:
        fg = self.tracker.current
        if fg is None or self.pinned_agent is not None:
            return
        known = fg.agent_id is not None and self.watcher.get(fg.agent_id) is not None
        self.detector.set_agent(fg.agent_id if known else None)

    def _agent_running(self) -> bool | None:
        """True: an agent holds the pane. False: it is gone (the shell, or a program we can tell is not
        the agent we saw, holds the pane: a prompt still on screen is a leftover). None: unknown."""
        fg = self.tracker.current
        if fg is None:
            return None
        if fg.agent_id is not None:
            self._agent_seen = self._agent_by_process = True
            return True
        if fg.is_shell:
            return False if self._agent_seen else None
        if self._agent_by_process:  # `ls`, `reset`, `vim` after the agent: its process is known, not there
            return False
        if self.detector.verdict.agent:  # an unrecognised wrapper drawing a known agent's screen
            self._agent_seen = True
        return None

    # -- reports and the combined state ------------------------------------------------------

    def report(self, report: Report) -> None:
        """A hook or ACP report about this pane. The newest report replaces any earlier one."""
        if self._loop is None or self.exit_code is not None:
            return
        now = self._loop.time()
        if not now - 60.0 <= report.t <= now:  # stamped on another clock: it arrived just now
            report = replace(report, t=now)
        self.report_in_force = report
        self._report_key = screen_key(self.screen.snapshot())
        self._update(now)

    def _update(self, now: float) -> None:
        if self.exit_code is not None:
            return
        running = self._agent_running()
        new = combine(self.detector.verdict, self._screen_changed_at, self.report_in_force, running, now)
        self._set_state(now, new)

    def _set_state(self, now: float, new: PaneState) -> None:
        old = self.state
        self.state = new
        if new.state != old.state:
            self._emit(now, old, new)

    def _emit(self, now: float, old: PaneState | None, new: PaneState) -> None:
        self.changes += 1
        change = StateChange(self._wall(), now, self.pane_id, old, new, self.agent)
        if self._events_fh is not None:
            with contextlib.suppress(OSError, ValueError):
                self._events_fh.write(json.dumps(change.as_json(), ensure_ascii=False) + "\n")
                self._events_fh.flush()
        for callback in list(self._subscribers):
            try:
                callback(change)
            except Exception:  # one bad subscriber must not stop detection or the others
                log.exception("state subscriber failed")

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """`callback(change)` on every state change; returns the function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None
