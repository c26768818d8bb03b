"""Every pane of a tmux server, each with its own PaneMachine, through control mode.

    TmuxWatcher   one per server: discovers sessions and panes (`list-panes -a`), keeps control
                  clients per session (tmux sends a client `%output` only for its session's panes;
                  one per PANES_PER_CLIENT panes, each taking only its own panes' output, all the
                  missing ones attached at once), ONE of which holds the session's current-command
                  subscription; follows what tmux reports (windows and panes added and closed,
                  layouts and sizes, renames, session changes, modes, pause/continue, the server's
                  exit) and resyncs the pane list after each structural notification (debounced).
    TmuxPane      one tmux pane: a PaneDriver (runtime/driver.py, as `run` panes) fed the pane's
                  `%output` bytes; seeded on discovery from tmux's own view of the pane (capture-pane
                  with attributes, alternate screen, cursor, title) and judged at once, so a dialog
                  already on screen is blocked on attach; identity from the pane's tty (foreground
                  process group, runtime/process.py), polled on output, when tmux's
                  `pane_current_command` subscription changes, and every FOREGROUND_POLL; input as
                  `send-keys` (core/tmux_protocol.py `send_keys`), refused in a tmux mode and with
                  synchronize-panes on; before the guard's check, `before_write` makes a round trip
                  through the pane's own control client (tmux replies after all the output it read before
                  the command: our screen is then current) that re-reads the pane's info.

A pane that closes, or whose server exits, is published `exited` (never left on its last screen) and
leaves `panes`. So does a pane whose process is not the one watched: every pane of a server restarted on
the same socket (its identity, `#{pid}` and `#{start_time}`, changed: its `%0` is another program) and a
pane whose first process or tty changed (respawn-pane); the new one is a new TmuxPane. A listing with a
line that is not one pane's fields removes nothing (what it hides is unknown, not closed). Output that
arrives for a pane before its seed is dropped: the seed already shows it (tmux writes a command's reply
after the output it read before running it). A pane tmux paused for us (`%pause`) is re-seeded from its
screen and continued.

tmux runs the user's hooks for our clients and commands too (core/tmux_formats.py WATCH_HOOKS): before it
attaches, the watcher reads the server's and the session's hooks, and with `attach_hooks="skip"` (the
default; `[tmux] attach_hooks`) it does not watch what a hook there could change (the whole server for a
global hook), says so once through `on_skipped`, and looks again every HOOKS_RECHECK seconds.

With `hooks=` ("take": the daemon; "share": a foreground `panewatch tmux`) the watcher also takes the
reports of the hooks `panewatch hooks install` put in the user's agent settings, for its panes
(runtime/tmux_hooks.py says who listens when both run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import Counter
from collections.abc import Callable

from panewatch.core.combine import Report
from panewatch.core.policy import PolicyConfig
from panewatch.core.tmux_formats import (
    PANE_FORMAT,
    PaneInfo,
    free_text,
    parse_layout,
    parse_pane,
    seed_bytes,
    tripping_hooks,
)
from panewatch.core.tmux_protocol import Event, Notification, Output, Reply, command, routes, send_keys
from panewatch.errors import PaneInModeError, PaneNotResyncedError, PaneSynchronizedError, TmuxError
from panewatch.runtime.driver import Manifests, PaneDriver
from panewatch.runtime.tmux import ControlClient, TmuxServer, check_version
from panewatch.runtime.tmux_hooks import HookMode, TmuxReports

log = logging.getLogger("panewatch.runtime.tmux")

# tmux tells us within about a second when a pane's command changes (a subscription), so the looks of
# our own are a backstop: every FOREGROUND_POLL, and after output at most every FOREGROUND_MIN per pane.
FOREGROUND_POLL = 5.0
FOREGROUND_MIN = 1.0
LOOK_SWEEP = 0.25  # how often the panes waiting for that look are visited (a look comes <= 1.25 s after output)
RESYNC_DELAY = 0.05  # structural notifications come in bursts (a split: window-pane-changed, layout-change)
SERVER_POLL = 2.0  # with no session attached, look for the server's sessions this often
STRUCTURAL = frozenset({"window-add", "window-close", "unlinked-window-add", "unlinked-window-close",
                        "sessions-changed", "session-renamed", "window-renamed", "session-changed",
                        "linked-window-changed", "client-session-changed"})
SUBSCRIPTION = "panewatch-cmd"
# Panes per control client. tmux writes a client's pending output round-robin, each pane getting about
# 8 KiB / (its pending panes) / 3 bytes a round (control.c, at least 32): with 200 busy panes on one
# client a 2 KiB frame needs dozens of rounds and arrives ~0.8 s late (measured: `%extended-output` age
# median 777 ms at 200 panes, 0 at 50). Several clients per session, each taking only its own panes'
# output (`refresh-client -A %ID:off` for the others), keep a frame to a few rounds. Each client costs
# an attach, a process, and an `off` for every other pane of its session (clients x panes at start-up);
# measured at 1000 busy panes (notes/tmuxscale.md), 64 a client (16 clients) was as fast as or faster
# than 16 (63 clients) and 32, and 250 (4 clients) slower again. A flooding pane is paused by tmux
# after PAUSE_AFTER whatever its client; until then it only takes its share of its client's rounds.
PANES_PER_CLIENT = 64
HOOKS_RECHECK = 30.0  # seconds: a user who guarded their hooks sees their panes watched within this
# Seconds for tmux to answer the round trip before a write. A local tmux answers in about a millisecond, a host
# over ssh in a round trip time; none within this (a suspended link, a stuck server): refused, nothing typed.
ROUND_TRIP_TIMEOUT = 2.0
ROUTES_PER_COMMAND = 64


class TtyForeground:
    """The foreground process group of a pane's tty: the tpgid in /proc/PID/stat of the pane's first
    process (Linux; the file stays open and is re-read in place, one syscall a look), else tcgetpgrp on
    the tty itself. None: unknown (the pane is gone)."""

    def __init__(self, pane_pid: int, tty: str) -> None:
        self.pane_pid, self.tty = pane_pid, tty
        self._fd: int | None = None
        with contextlib.suppress(OSError):
            self._fd = os.open(f"/proc/{pane_pid}/stat", os.O_RDONLY | os.O_CLOEXEC)

    def __call__(self) -> int | None:
        if self._fd is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = os.pread(self._fd, 4096, 0).rsplit(b")", 1)[1].split()
                tpgid = int(fields[5])  # after "pid (comm)": state ppid pgrp session tty_nr tpgid
                return tpgid if tpgid > 0 else None
            return None  # the process is gone (ESRCH)
        with contextlib.suppress(OSError):
            fd = os.open(self.tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
            try:
                pgid = os.tcgetpgrp(fd)
                return pgid if pgid > 0 else None
            finally:
                os.close(fd)
        return None

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


class LaterLooks:
    """The panes with output since their last look at who holds the tty, each looked at once
    FOREGROUND_MIN has passed since that look: one timer for all of them. (A timer per pane cost a
    TimerHandle and asyncio's heap for every busy pane every second: ~5 % of the watcher's CPU at
    1000 busy panes.)"""

    def __init__(self) -> None:
        self._panes: dict[TmuxPane, None] = {}  # insertion-ordered set
        self._handle: asyncio.TimerHandle | None = None

    def add(self, pane: TmuxPane, loop: asyncio.AbstractEventLoop) -> None:
        self._panes[pane] = None
        if self._handle is None:
            self._handle = loop.call_later(LOOK_SWEEP, self._sweep, loop)

    def discard(self, pane: TmuxPane) -> None:
        self._panes.pop(pane, None)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._panes.clear()

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        self._handle = None
        now = loop.time()
        for pane in [p for p in self._panes if now >= p.looked_at + FOREGROUND_MIN]:
            del self._panes[pane]
            try:
                pane.look_later()
            except Exception:  # a sweep never dies on one pane
                log.exception("tmux pane %s: foreground look failed", pane.pane_id)
        if self._panes:
            self._handle = loop.call_later(LOOK_SWEEP, self._sweep, loop)


class TmuxPane(PaneDriver):
    """One tmux pane on the real clock. Made and fed by its TmuxWatcher."""

    def __init__(self, watcher: TmuxWatcher, info: PaneInfo, client: ControlClient) -> None:
        super().__init__(watcher.manifests, pane_id=info.pane_id, cols=info.cols, rows=info.rows,
                         policy=watcher.policy, wall=watcher.wall)
        self.tmux = watcher
        self.info = info
        self.client = client
        self.seeded = False
        self.exit_code: int | None = None
        self.on_output: Callable[[bytes], None] | None = None  # a viewer's tap (the board's endpoint)
        self.looked_at = float("-inf")  # the last look at who holds the tty
        self.checked: PaneInfo | None = None  # the pane's info from the last round trip before a write
        self._tty = TtyForeground(info.pid, info.tty)

    @property
    def board_id(self) -> str:
        """The pane's name in what it says (a remote pane's adds its host)."""
        return self.pane_id

    @property
    def target(self) -> str:
        return self.info.target

    @property
    def pid(self) -> int | None:
        return self.info.pid or None

    @property
    def argv(self) -> list[str]:
        return [self.info.current_command]

    @property
    def exited(self) -> bool:
        return self.machine.has_exited

    def seed(self, info: PaneInfo, rows: list[bytes]) -> None:
        """tmux's view of the pane, drawn on our screen and judged now. The first seed starts the pane:
        its first published state is the seeded screen's (a dialog on screen: blocked at once)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        self.info = info
        if (info.cols, info.rows) != (self.screen.cols, self.screen.rows):
            self.machine.resize(now, info.cols, info.rows)
        first = self._loop is None
        changes = self.machine.output(now, seed_bytes(info, rows))
        self.seeded = True
        if first:
            # Who holds the pane before its screen is judged: a shell showing a dialog's words is never blocked,
            # not even for its first published state.
            if self._look_again(now):
                self.machine.foreground(now, self.tracker.current)
            self.machine.check(now)
            self._start_driving(loop)  # publishes the state the seed gave
            self._after_foreground(self.foreground)
            self._look_at_foreground(now)
            self._publish(self.machine.check(now))
        else:
            self._publish(changes)
            self._look_at_foreground(now)
            self._publish(self.machine.check(now))
        self._arm()

    def output(self, data: bytes) -> None:
        if not self.seeded or self.machine.has_exited:
            return
        if self.on_output is not None:
            try:
                self.on_output(data)
            except Exception:
                log.exception("tmux pane output tap failed")
        now = self.clock()
        self._feed(now, data)
        self._foreground_soon(now)

    def update(self, info: PaneInfo) -> None:
        """A newer listing of the pane: target, size, mode."""
        self.info = info
        self.set_size(info.cols, info.rows)

    def set_size(self, cols: int, rows: int) -> None:
        if (cols, rows) != (self.screen.cols, self.screen.rows) and not self.machine.has_exited:
            self._resize_machine(self.clock(), cols, rows)

    def gone(self, detail: str) -> None:
        """The pane closed, or its server exited: exited for good."""
        self.tmux.later_looks.discard(self)
        if not self.machine.has_exited:
            self._publish(self.machine.exited(self.clock(), None, detail))
        self._stop_driving()
        self._tty.close()
        self.screen.close()

    # -- who holds the tty -------------------------------------------------------------------------

    def _look_at_foreground(self, now: float) -> None:
        if self._look_again(now):
            self._set_foreground(now, self.tracker.current)
        elif self.tracker.read:  # the same group holds it, read just now (not a poll skipped as too soon)
            self.machine.looked(now)

    def _look_again(self, now: float) -> bool:
        self.looked_at = now
        if (self._tty.pane_pid, self._tty.tty) != (self.info.pid, self.info.tty):  # respawn-pane
            self._tty.close()
            self._tty = TtyForeground(self.info.pid, self.info.tty)
        return self.tracker.poll(now, self._tty(), self.info.pid, self.watcher.current())

    def _foreground_soon(self, now: float) -> None:
        if now - self.looked_at >= FOREGROUND_MIN:
            self._look_at_foreground(now)
        elif self._loop is not None:
            self.tmux.later_looks.add(self, self._loop)

    def look_later(self) -> None:
        """The look LaterLooks owed this pane (output came within FOREGROUND_MIN of the last one)."""
        if not self.machine.has_exited:
            self._look_at_foreground(self.clock())

    def _refresh_foreground(self, now: float) -> None:
        self._look_at_foreground(now)

    def stop(self) -> None:
        """Stop watching (the watcher closes); the pane itself is the user's and lives on."""
        self.tmux.later_looks.discard(self)
        self._stop_driving()
        self._tty.close()

    def poll_foreground(self) -> None:
        if self.seeded and not self.machine.has_exited:
            self._look_at_foreground(self.clock())

    # -- input: the guard's writes as send-keys ---------------------------------------------------

    async def before_write(self) -> None:
        """The guard's step before its check, in the pane's turn: one round trip through the pane's own control
        client. tmux writes a command's reply after every line it queued for us before running it, the pane's
        output included, so once the reply is read our screen holds all tmux had of the pane; the reply is the
        pane's info now (mode, synchronize-panes, process), which `write` checks with no await in between.
        PaneNotResyncedError when tmux does not answer within ROUND_TRIP_TIMEOUT (a hung link, a stuck server) or
        cannot. A pane whose process is not the one watched is exited here (the check then refuses it)."""
        if self.machine.has_exited:
            return
        deadline = self.clock() + ROUND_TRIP_TIMEOUT
        while True:
            remaining = deadline - self.clock()
            try:
                if remaining <= 0:
                    raise TmuxError(f"its screen was being redrawn from tmux for {ROUND_TRIP_TIMEOUT:g} s")
                lines = await self.client.run("display-message", "-p", "-t", self.pane_id, PANE_FORMAT,
                                              timeout=remaining)
            except TmuxError as exc:
                raise PaneNotResyncedError(self.board_id, f"tmux on {self.tmux.server.label} did not confirm that "
                                           f"its screen here is current ({exc})") from None
            info = parse_pane(lines[0]) if lines else None
            if info is None:
                raise PaneNotResyncedError(self.board_id, "tmux's answer about the pane could not be read")
            if self.machine.has_exited:
                return
            if not self.info.same_process(info):
                self.tmux.replaced(self, info)
                return
            self.checked = info
            self.update(info)
            if self.seeded:
                return
            # tmux paused the pane for us: the re-seed's capture answers before the next round trip does

    def write(self, data: bytes) -> None:
        """Bytes as typed input, through tmux (`send-keys`). PaneInModeError while a tmux mode shows (the keys
        would drive the mode), PaneSynchronizedError while synchronize-panes would copy them into other panes;
        by the pane's info from listings and from the guard's round trip just before (either saying so refuses:
        a listing asked earlier may be read after the round trip)."""
        if not data or self.machine.has_exited:
            return
        for info in (self.info, self.checked):
            if info is None:
                continue
            if info.in_mode:
                raise PaneInModeError(self.board_id)
            if info.copies_keys:
                raise PaneSynchronizedError(self.board_id, self.pane_id, info.window_panes)
        self.client.send(send_keys(self.pane_id, data))
        self._last_input = self.clock()

    def resize(self, cols: int, rows: int) -> None:
        """A viewer's size: ignored. The user's tmux decides a pane's size (we never touch the layout)."""

    def bracketed_paste(self) -> bool:
        return False  # not known from tmux's side; plain typing is the guard's safe fallback


class TmuxWatcher:
    """Watch every pane of one tmux server. `start()` from the running loop; `close()` to stop."""

    def __init__(self, server: TmuxServer, manifests: Manifests, *, policy: PolicyConfig | None = None,
                 on_added: Callable[[TmuxPane], None] | None = None,
                 on_removed: Callable[[TmuxPane], None] | None = None,
                 wall: Callable[[], float] | None = None, hooks: HookMode | None = None,
                 attach_hooks: str = "skip", on_skipped: Callable[[str, list[str]], None] | None = None) -> None:
        self.server = server
        self.attach_hooks = attach_hooks  # "skip": never attach where the user's hooks would run; "run": attach
        self.on_skipped = on_skipped  # (session name or "" = every session, hooks): not watched (hooks [] = watched
        # again). Else a log line
        self._hooks_seen: dict[str, tuple[float, list[str]]] = {}  # scope -> (when asked, tripping hooks)
        self._names: dict[str, str] = {}  # session id -> name, for what we say about a session
        self.manifests = manifests
        self.policy = policy
        self.wall = wall or time.time
        self.on_added = on_added
        self.on_removed = on_removed
        self.panes: dict[str, TmuxPane] = {}
        self.later_looks = LaterLooks()
        self.clients: dict[str, list[ControlClient]] = {}  # by session id: its clients (shards)
        self.server_alive = False
        self.identity: tuple[int, int] | None = None  # the server's (pid, start time) its panes were listed from
        self.resyncs = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._resync_task: asyncio.Task[None] | None = None
        self._resync_again = False
        self._timer: asyncio.TimerHandle | None = None
        self._closing = False
        self._fg_polled = 0.0
        self._resync_lock = asyncio.Lock()
        self.subscribers: dict[str, ControlClient] = {}  # by session id: the client holding its subscription
        self.hooks = TmuxReports(server, hooks, self._report_sink, time.monotonic) if hooks is not None else None
        self._hooks_task: asyncio.Task[None] | None = None

    @property
    def skipped(self) -> dict[str, list[str]]:
        """The scopes not watched because of the user's hooks (session id, "" = the server): their hooks."""
        return {scope: hooks for scope, (_, hooks) in self._hooks_seen.items() if hooks}

    def _report_sink(self, pane_id: str) -> Callable[[Report], None] | None:
        """Where an installed hook's report for tmux pane `pane_id` goes: the pane's driver, once it runs."""
        pane = self.panes.get(pane_id)
        return pane.report if pane is not None and pane.seeded and not pane.exited else None

    async def start(self) -> None:
        """Check the version (TmuxVersionError if too old), then discover and attach."""
        check_version()
        self._loop = asyncio.get_running_loop()
        await self.resync()
        if self.hooks is not None and self.server_alive:
            await self.hooks.check()
        self._fg_polled = self._loop.time()
        self._timer = self._loop.call_later(SERVER_POLL, self._on_timer)

    async def close(self) -> None:
        self._closing = True
        if self._timer is not None:
            self._timer.cancel()
        if self._resync_task is not None:
            self._resync_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._resync_task
        if self._hooks_task is not None:
            self._hooks_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._hooks_task
        if self.hooks is not None:
            await self.hooks.close()
        await asyncio.gather(*(client.close() for client in self._all_clients()))
        self.later_looks.close()
        self.clients.clear()
        self.subscribers.clear()
        for pane in list(self.panes.values()):
            pane.stop()

    def _on_timer(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        if now - self._fg_polled >= FOREGROUND_POLL:
            self._fg_polled = now
            for pane in list(self.panes.values()):
                try:
                    pane.poll_foreground()
                except Exception:  # a sweep never dies on one pane
                    log.exception("tmux pane %s: foreground poll failed", pane.pane_id)
        if not self.clients:  # nothing attached tells us about new sessions: ask
            self.schedule_resync(0.0)
        if self.hooks is not None and self.server_alive and (self._hooks_task is None or self._hooks_task.done()):
            self._hooks_task = self._loop.create_task(self.hooks.check())  # who listens (runtime/tmux_hooks.py)
        self._timer = self._loop.call_later(SERVER_POLL, self._on_timer)

    # -- the pane list -----------------------------------------------------------------------------

    def schedule_resync(self, delay: float = RESYNC_DELAY) -> None:
        if self._closing or self._loop is None:
            return
        if self._resync_task is not None and not self._resync_task.done():
            self._resync_again = True
            return

        async def later() -> None:
            await asyncio.sleep(delay)
            await self.resync()
            while self._resync_again and not self._closing:
                self._resync_again = False
                await asyncio.sleep(RESYNC_DELAY)
                await self.resync()

        self._resync_task = self._loop.create_task(later())

    def _all_clients(self) -> list[ControlClient]:
        return [client for clients in self.clients.values() for client in clients]

    def _live(self, session: str) -> list[ControlClient]:
        """The session's clients ready for commands (one still attaching takes no pane yet)."""
        return [c for c in self.clients.get(session, []) if c.name and not c.closed.is_set()]

    async def _list_panes(self) -> list[bytes] | None:
        """`list-panes -a` through an attached client, else a one-off tmux; None: no server."""
        for client in self._all_clients():
            if client.attached.is_set() and not client.closed.is_set():
                with contextlib.suppress(TmuxError):
                    return await client.run("list-panes", "-a", "-F", PANE_FORMAT)
        try:
            return [line.encode() for line in await self.server.run("list-panes", "-a", "-F", PANE_FORMAT)]
        except TmuxError:
            return None
        except OSError:
            return None

    async def resync(self) -> None:
        """Bring sessions, clients and panes in line with what the server has now (one at a time)."""
        async with self._resync_lock:
            await self._resync()

    async def _resync(self) -> None:
        self.resyncs += 1
        if not self._all_clients() and await self._tripping(""):  # even a list-panes would run a hook
            return
        lines = await self._list_panes()
        if self._closing:
            return
        if lines is None:
            if self.server_alive or self.panes:
                self._server_gone()
            return
        self.server_alive = True
        listed: dict[str, PaneInfo] = {}
        unread = 0
        for line in lines:
            info = parse_pane(line)
            if info is None:
                unread += 1
            elif info.pane_id not in listed:  # a linked window lists its panes per session
                listed[info.pane_id] = info
        if unread:
            log.warning("tmux on %s: %d line(s) of the pane list unreadable; no pane is taken as closed by it",
                        self.server.label, unread)
        identity = next(iter(listed.values())).server if listed else self.identity
        if self.identity is not None and identity != self.identity:
            await self._restarted()
        self.identity = identity
        per_session = Counter(i.session_id for i in listed.values())
        self._names.update((i.session_id, i.session_name) for i in listed.values())
        # Every missing client of every session at once: one after another, each attach waits on tmux
        # (a process to start, then its name), and at 1000 panes that was most of a 30 s start-up.
        fresh = [session for session in sorted(per_session) if not self._live(session)]
        if fresh and await self._tripping(""):
            guarded = set(fresh)  # the server's own hooks would run for any client of ours
        else:
            hooks = await asyncio.gather(*(self._tripping(session) for session in fresh))
            guarded = {session for session, found in zip(fresh, hooks, strict=True) if found}
        attaches = [self._attach(session) for session, count in sorted(per_session.items()) if session not in guarded
                    for _ in range(clients_for(count) - len(self._live(session)))]
        if attaches:
            await asyncio.gather(*attaches)
        if self._closing:
            return
        for session in per_session:
            self._subscribe(session)
        load = Counter(id(p.client) for p in self.panes.values())
        added: list[TmuxPane] = []
        for pane_id, info in listed.items():
            pane = self.panes.get(pane_id)
            if pane is not None and not pane.info.same_process(info):  # respawn-pane: another program
                self._remove(pane, replaced_detail(pane.info, info))
                pane = None
            client = self._client_for(info, pane, load)
            if client is None:
                continue
            if pane is None:
                load[id(client)] += 1
                added.append(self._add(info, client))
            elif pane.client is not client:  # its client went: the pane lives on, watched by another
                load[id(client)] += 1
                pane.client = client
                pane.seeded = False
                self._route([pane])  # on before its seed: no byte between the capture and the stream is lost
                self._seed(pane)
            else:
                pane.update(info)
        self._route(added)  # a new pane starts on in every client: the others turn it off
        if unread:
            return  # an unreadable line may be any pane's: none is taken as closed
        for pane_id in [p for p in self.panes if p not in listed]:
            self._remove(self.panes[pane_id], "the tmux pane was closed")

    async def _restarted(self) -> None:
        """The server on the socket is not the one the panes were listed from (killed and started again, at once):
        every pane of the old one is exited, its clients (attached to the old server) closed, what was learnt about
        its hooks forgotten. The new server's panes are then taken as new, whatever their ids."""
        log.info("tmux on %s: the server was restarted (a new one on the socket)", self.server.label)
        for pane in list(self.panes.values()):
            self._remove(pane, "the tmux server exited (another one was started on its socket)")
        clients = self._all_clients()
        for client in clients:
            self._forget(client)
        self._hooks_seen.clear()
        await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)

    def replaced(self, pane: TmuxPane, info: PaneInfo) -> None:
        """`info` (a round trip's) says `pane`'s process is not the one watched: exited; the next resync adopts
        whatever has the pane's id now as a new pane."""
        if self.panes.get(pane.pane_id) is pane:
            self._remove(pane, replaced_detail(pane.info, info))
        self.schedule_resync(0.0)

    async def _tripping(self, session: str) -> list[str]:
        """The user's hooks that watching `session` ("": the server's global ones) would run; [] with
        attach_hooks="run". Asked at most every HOOKS_RECHECK seconds per scope."""
        if self.attach_hooks == "run" or self._loop is None:
            return []
        now = self._loop.time()
        seen = self._hooks_seen.get(session)
        if seen is not None and now - seen[0] < HOOKS_RECHECK:
            return seen[1]
        try:
            lines = await self.server.run("show-hooks", *(("-t", session) if session else ("-g",)))
        except (TmuxError, OSError):
            lines = []  # no server (list-panes says so next) or no such session any more
        hooks = tripping_hooks(lines)
        before = seen[1] if seen is not None else []
        self._hooks_seen[session] = (now, hooks)
        name = self._names.get(session, session)
        if hooks and hooks != before:  # said once per change, not at every recheck
            if self.on_skipped is not None:
                self.on_skipped(name, hooks)
            else:
                log.warning("%s", skipped_message(self.server.label, name, hooks))
        elif before and not hooks:
            log.info("tmux on %s: hooks guarded; watching %s", self.server.label, f"session {name}" if name else
                     "the server")
            if self.on_skipped is not None:
                self.on_skipped(name, [])  # watched again
        return hooks

    def _client_for(self, info: PaneInfo, pane: TmuxPane | None, load: Counter[int]) -> ControlClient | None:
        if pane is not None and not pane.client.closed.is_set():
            return pane.client  # keep the owner while it lives (grouped sessions see the same pane)
        live = self._live(info.session_id)
        return min(live, key=lambda c: load[id(c)]) if live else None

    async def _attach(self, session: str) -> bool:
        client = ControlClient(self.server, session, self._on_event, on_closed=self._on_closed)
        self.clients.setdefault(session, []).append(client)
        try:
            await client.start()
        except (TmuxError, OSError) as exc:
            log.info("tmux session %s on %s: %s", session, self.server.label, exc)
            self._forget(client)
            return False
        # a new client starts with every pane of its session on: the panes others watch go off here
        client.send(_routes(client, [p.pane_id for p in self.panes.values() if p.client.session == session], "off"))
        return True

    def _subscribe(self, session: str) -> None:
        """ONE client per session asks tmux to tell us when a pane's command changes (`%*`: every pane of
        the session): tmux re-expands a subscription for each of its panes about once a second, per client
        holding it, and on the server's own time (at 1000 panes with 63 clients each subscribed: 63k
        expansions, each a /proc read, a second, and 63k notifications at attach)."""
        holder = self.subscribers.get(session)
        if holder is not None and not holder.closed.is_set():
            return
        live = self._live(session)
        if not live:
            self.subscribers.pop(session, None)
            return
        self.subscribers[session] = live[0]
        live[0].send([command("refresh-client", "-t", live[0].name, "-B",
                              f"{SUBSCRIPTION}:%*:{free_text('pane_current_command')}")])

    def _route(self, panes: list[TmuxPane]) -> None:
        """Only a pane's own client gets its output; its session's other clients turn it off (batched:
        one refresh-client per client for many panes, not one per pane per client)."""
        by_session: dict[str, list[TmuxPane]] = {}
        for pane in panes:
            by_session.setdefault(pane.client.session, []).append(pane)
        for session, group in by_session.items():
            for client in self._live(session):
                client.send(_routes(client, [p.pane_id for p in group if p.client is client], "on")
                            + _routes(client, [p.pane_id for p in group if p.client is not client], "off"))

    def _forget(self, client: ControlClient) -> None:
        if self.subscribers.get(client.session) is client:
            del self.subscribers[client.session]  # the next resync gives the subscription to another
        clients = self.clients.get(client.session, [])
        if client in clients:
            clients.remove(client)
        if not clients:
            self.clients.pop(client.session, None)

    def _add(self, info: PaneInfo, client: ControlClient) -> TmuxPane:
        assert self._loop is not None
        pane = TmuxPane(self, info, client)
        self.panes[info.pane_id] = pane
        if self.on_added is not None:  # before the seed: a listener sees the pane's first state
            try:
                self.on_added(pane)
            except Exception:
                log.exception("tmux pane listener failed")
        self._seed(pane)
        return pane

    def _seed(self, pane: TmuxPane) -> None:
        """Ask tmux for the pane's screen, in the client's stream: the reply comes before later output."""
        got: dict[str, PaneInfo] = {}

        def on_info(reply: Reply) -> None:
            info = parse_pane(reply.lines[0]) if reply.ok and reply.lines else None
            if info is not None:
                got["info"] = info

        def on_capture(reply: Reply) -> None:
            if pane.machine.has_exited or not reply.ok:
                return
            pane.seed(got.get("info", pane.info), list(reply.lines))

        pane.client.send([command("display-message", "-p", "-t", pane.pane_id, PANE_FORMAT),
                          command("capture-pane", "-p", "-e", "-N", "-t", pane.pane_id)], [on_info, on_capture])

    def _remove(self, pane: TmuxPane, detail: str) -> None:
        self.panes.pop(pane.pane_id, None)
        pane.gone(detail)
        if self.on_removed is not None:
            try:
                self.on_removed(pane)
            except Exception:
                log.exception("tmux pane listener failed")

    def _server_gone(self) -> None:
        self.server_alive = False
        self.identity = None
        for pane in list(self.panes.values()):
            self._remove(pane, "the tmux server exited")

    # -- what tmux tells us ------------------------------------------------------------------------

    def _on_event(self, client: ControlClient, event: Event) -> None:
        if isinstance(event, Output):
            pane = self.panes.get(event.pane)
            if pane is not None and pane.client is client:
                pane.output(event.data)
            return
        if not isinstance(event, Notification):
            return
        name, args = event.name, event.args
        if name == "layout-change" and len(args) >= 2:
            # Each pane's own size from tmux (`pane_width` x `pane_height`), never the layout's cell: with
            # `pane-border-status top` a cell has the border's row too (150x39 for a pane of 150x38).
            sizes = parse_layout(args[1])
            for pane_id in sizes:
                known = self.panes.get(pane_id)
                if known is not None and known.client is client:  # every client of the session is told: one asks
                    self._refresh_info(known)
            in_window = {p for p, pane in self.panes.items() if pane.info.window_id == args[0]}
            if set(sizes) != in_window:
                self.schedule_resync()
        elif name in STRUCTURAL:
            self.schedule_resync()
        elif name == "pause" and args:
            pane = self.panes.get(args[0])
            if pane is not None and pane.client is client:
                pane.seeded = False
                self._seed(pane)
            client.send(_routes(client, [args[0]], "continue"))
        elif name == "pane-mode-changed" and args:
            pane = self.panes.get(args[0])
            if pane is not None:
                self._refresh_info(pane)
        elif name == "subscription-changed" and len(args) >= 5 and args[0] == SUBSCRIPTION:
            pane = self.panes.get(args[4])
            if pane is not None:
                pane.poll_foreground()
                self.command_changed(pane, event.line.partition(b" : ")[2].decode("utf-8", "replace"))

    def command_changed(self, pane: TmuxPane, command: str) -> None:
        """tmux's subscription says the pane runs `command`: another program than listed is read again, since it
        may be another process (respawn-pane: exited, and the new one adopted as a new pane)."""
        if command != pane.info.current_command:
            self._refresh_info(pane)

    def _refresh_info(self, pane: TmuxPane) -> None:
        def on_info(reply: Reply) -> None:
            info = parse_pane(reply.lines[0]) if reply.ok and reply.lines else None
            if info is None or pane.machine.has_exited:
                return
            if pane.info.same_process(info):
                pane.update(info)
            else:
                self.replaced(pane, info)

        pane.client.send([command("display-message", "-p", "-t", pane.pane_id, PANE_FORMAT)], [on_info])

    def _on_closed(self, client: ControlClient) -> None:
        self._forget(client)
        self.schedule_resync()


def clients_for(panes: int) -> int:
    """How many control clients watch a session of `panes` panes."""
    return max(1, -(-panes // PANES_PER_CLIENT))


def replaced_detail(old: PaneInfo, new: PaneInfo) -> str:
    """Why a pane's card ended though tmux still lists its id."""
    if old.server != new.server:
        return "the tmux server exited (another one was started on its socket)"
    return f"the tmux pane's program was replaced (pid {old.pid} -> {new.pid}, {old.tty} -> {new.tty})"


def skipped_message(server: str, session: str, hooks: list[str]) -> str:
    """Why a session ("": every session) of tmux on `server` is not watched, and the user's two ways out."""
    where = f"session {session}" if session else "any session"
    return (f"tmux on {server}: not watching {where}: tmux would run these hooks of yours for panewatch's client "
            f"too: {'; '.join(hooks)}. Make each tell clients apart (if -F '#{{client_control_mode}}' '' '…'; in a "
            "client-detached hook: if -F '#{m:/dev/*,#{hook_client}}' '…'), or set [tmux] attach_hooks = \"run\"")


def _routes(client: ControlClient, pane_ids: list[str], state: str) -> list[bytes]:
    """`refresh-client -A %ID:STATE` for each pane, several panes a command, for this client by name."""
    return routes(client.name, pane_ids, state, ROUTES_PER_COMMAND)
