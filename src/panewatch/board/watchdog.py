"""The watchdog: however the daemon or a `panewatch run` dies (`kill -9` included), its panes die with it,
and `run`'s outer terminal gets its modes back (raw mode would outlive `run`: no echo, no line editing).

A headless pane's program hears of the daemon's death only through its pty's hangup, and one that
ignores SIGHUP would live on as an orphan nobody sees. So the daemon starts a tiny process
(`reaper.watchdog`, in its own session, away from terminal signals) holding the read end of a pipe,
and writes one line per pane:

    +SID CTIME      a pane was spawned: a session leader (SID is its pid), started at CTIME
    -SID            its session is over (the pane exited and its pty was released)
    =FD MODES       (`run`) the terminal, open as FD in the watchdog, gets MODES back on EOF
    =-              (`run`) ... not any more: `run` put them back itself

When the pipe reads EOF (the daemon closed it, or died), the watchdog ends every session still
recorded with the same bounded HUP → TERM → KILL steps as PtySession.close, and exits. One process
and one pipe for the daemon's whole life; nothing polls. Portable: a pipe's EOF and psutil, the same
on Linux and macOS (no prctl). CTIME guards against a recycled pid.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from panewatch.runtime.reaper import TerminalModes, terminal_line

if TYPE_CHECKING:
    from panewatch.runtime.live import LivePane

log = logging.getLogger("panewatch.board")

EXIT_WAIT = 3.0  # seconds a normal close waits for the watchdog to exit (more than the kill steps take)


class Watchdog:
    """The daemon's side: start the watchdog, tell it about each pane's session, close the pipe."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._pipe: asyncio.WriteTransport | None = None
        self._untrack: set[asyncio.Task[None]] = set()

    async def start(self, terminal: tuple[int, TerminalModes] | None = None) -> None:
        """`terminal`: (a descriptor of `run`'s outer terminal, the modes to put back if we die)."""
        # `-c` from `/`: the daemon's cwd is neither pinned nor searched for a module named panewatch.
        package_parent = str(Path(__file__).resolve().parents[2])
        code = f"import sys; sys.path.insert(0, {package_parent!r}); from panewatch.runtime.reaper import watchdog; " \
               "sys.exit(watchdog())"
        kept = -1
        try:
            kept = os.dup(terminal[0]) if terminal is not None else -1  # its own descriptor of the terminal
            self._proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, cwd="/", start_new_session=True, close_fds=True,
                                          pass_fds=(kept,) if kept >= 0 else ())
        except OSError as exc:  # the daemon still works; only a kill -9 of it would leave orphans
            log.warning("no watchdog (%s): panes will outlive a panewatch that is killed", exc)
            return
        finally:
            if kept >= 0:
                os.close(kept)  # the watchdog has it (same number) now
        assert self._proc.stdin is not None
        self._pipe, _ = await asyncio.get_running_loop().connect_write_pipe(
            lambda: _PipeProtocol(self._lost), self._proc.stdin)
        if terminal is not None:
            self._send(terminal_line(kept, terminal[1]))

    def release_terminal(self) -> None:
        """Its owner put the terminal's modes back itself: the watchdog leaves the terminal alone."""
        self._send("=-")

    def _lost(self, exc: Exception | None) -> None:
        if self._pipe is not None:  # not our own close: the watchdog died
            log.warning("the watchdog exited (%s): headless panes will outlive a daemon that is killed", exc)
            self._pipe = None

    def _send(self, line: str) -> None:
        if self._pipe is not None and not self._pipe.is_closing():
            self._pipe.write(line.encode() + b"\n")  # buffered by the transport: never blocks the loop

    def watch(self, pane: LivePane) -> None:
        """Record `pane`'s session (just spawned) until its pty is released."""
        pid = pane.pid
        if pid is None or self._pipe is None:
            return
        try:
            started = psutil.Process(pid).create_time()
        except psutil.Error:  # already gone: nothing to guard
            return
        self._send(f"+{pid} {started!r}")
        task = asyncio.get_running_loop().create_task(self._forget(pane, pid))
        self._untrack.add(task)
        task.add_done_callback(self._untrack.discard)

    async def _forget(self, pane: LivePane, pid: int) -> None:
        try:
            await pane.wait()  # returns once the pane exited and its pty was released
        except RuntimeError:  # never reaped (stuck in the kernel): its pid cannot be recycled, keep it
            return
        self._send(f"-{pid}")

    async def close(self) -> None:
        """After the daemon closed its panes: EOF to the watchdog, which then has nothing left to end."""
        if self._untrack:
            await asyncio.wait(set(self._untrack), timeout=1.0)
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            pipe.close()  # what is buffered goes first, then the EOF
        proc, self._proc = self._proc, None
        if proc is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + EXIT_WAIT
        while proc.poll() is None and loop.time() < deadline:
            await asyncio.sleep(0.01)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


class _PipeProtocol(asyncio.BaseProtocol):
    def __init__(self, on_lost: Callable[[Exception | None], None]) -> None:
        self._on_lost = on_lost

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(exc)
