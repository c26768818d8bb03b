"""One PTY and the process group running in it: spawn, read, write, resize, wait, close.

The child is a session leader with the pty slave as its controlling terminal, so job control,
SIGWINCH and `tcgetpgrp` behave as in a real terminal. No descriptor leaks: the master is
O_CLOEXEC (os.openpty makes it non-inheritable) and the slave is closed in the parent right
after the spawn. The child is ours to reap (subprocess.Popen, not asyncio's child watcher), so
`close()` can be synchronous and still leave no zombie.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psutil

from panewatch.reaper import KILL_STEPS, end_groups, running, signal_groups

OutputHandler = Callable[[bytes], None]
EofHandler = Callable[[], None]

READ_SIZE = 65536
MAX_PENDING = 8 * 1024 * 1024  # writes beyond this are dropped: a child that never reads must not eat our memory


def exit_status(returncode: int) -> int:
    """Popen's returncode as a shell reports it: a death by signal n is 128+n."""
    return 128 - returncode if returncode < 0 else returncode


def set_winsize(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def get_winsize(fd: int) -> tuple[int, int]:
    """(cols, rows) of the terminal on `fd`."""
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    return cols, rows


# A terminal gives the program in it default signal handling, whatever its own parent had: started
# from a background job or a service, we inherit SIGINT/SIGQUIT ignored, and exec keeps "ignored", so
# Ctrl-C in the pane would do nothing (tmux and terminal emulators reset these too).
_RESET_SIGNALS = tuple(getattr(signal, name) for name in (
    "SIGINT", "SIGQUIT", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGHUP", "SIGTERM", "SIGCHLD", "SIGPIPE", "SIGWINCH")
    if hasattr(signal, name))


def _take_controlling_tty() -> None:  # runs in the child between fork and exec
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    for sig in _RESET_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


class PtySession:
    """Spawns `argv` on a new pty. Call `start_reading()` inside a running event loop to get output."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cols: int = 120,
        rows: int = 32,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        on_output: OutputHandler | None = None,
        on_eof: EofHandler | None = None,
        tcattrs: list[Any] | None = None,
    ) -> None:
        if not argv:
            raise ValueError("empty command")
        self.argv = list(argv)
        self.cols, self.rows = cols, rows
        self.on_output = on_output
        self.on_eof = on_eof
        master, slave = os.openpty()
        try:
            set_winsize(master, cols, rows)
            if tcattrs is not None:  # the outer terminal's modes (erase key, iutf8 …), as script(1) does
                termios.tcsetattr(slave, termios.TCSANOW, tcattrs)
            self._proc = subprocess.Popen(
                self.argv, stdin=slave, stdout=slave, stderr=slave, env=None if env is None else dict(env),
                cwd=cwd, start_new_session=True, preexec_fn=_take_controlling_tty, close_fds=True,
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)  # the child holds it now; keeping it would hide the child's EOF from us
        os.set_blocking(master, False)
        self._master: int | None = master
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending = bytearray()
        self._writer_armed = False
        self._eof = False
        self._eof_event: asyncio.Event | None = None
        self.dropped_bytes = 0

    # -- identity ----------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def master_fd(self) -> int | None:
        return self._master

    @property
    def returncode(self) -> int | None:
        """The exit status (128+n for signal n) once the child has been reaped, else None."""
        code = self._proc.poll()
        return None if code is None else exit_status(code)

    def foreground_pgid(self) -> int | None:
        """The tty's foreground process group (who holds the pane), None if the pty is gone."""
        if self._master is None:
            return None
        try:
            return os.tcgetpgrp(self._master)
        except OSError:
            return None

    # -- reading -----------------------------------------------------------------------------

    def start_reading(self) -> None:
        """Deliver output to `on_output` from the running loop; EOF (EIO on Linux) calls `on_eof`."""
        if self._master is None or self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._eof_event = asyncio.Event()
        self._loop.add_reader(self._master, self._on_readable)

    def _on_readable(self) -> None:
        if self._master is None:
            return
        try:
            data = os.read(self._master, READ_SIZE)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.EBADF):
                raise
            data = b""  # EIO: every holder of the slave closed it
        if not data:
            self._mark_eof()
            return
        if self.on_output is not None:
            self.on_output(data)

    def _mark_eof(self) -> None:
        if self._eof:
            return
        self._eof = True
        if self._loop is not None and self._master is not None:
            self._loop.remove_reader(self._master)
        if self._eof_event is not None:
            self._eof_event.set()
        if self.on_eof is not None:
            self.on_eof()

    @property
    def at_eof(self) -> bool:
        return self._eof

    async def wait_eof(self, timeout: float | None = None) -> bool:
        """Wait until all output has been read (the slave closed everywhere). False on timeout."""
        if self._eof:
            return True
        if self._eof_event is None:
            return False
        try:
            await asyncio.wait_for(self._eof_event.wait(), timeout)
        except TimeoutError:
            return False
        return True

    # -- writing -----------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Queue bytes for the child; never blocks. What the tty cannot take now is sent when it can."""
        if self._master is None or not data:
            return
        if self._pending:
            self._queue(data)
            return
        try:
            sent = os.write(self._master, data)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            if exc.errno in (errno.EIO, errno.EBADF):
                return  # the child is gone: input has nowhere to go
            raise
        if sent < len(data):
            self._queue(data[sent:])

    def _queue(self, data: bytes) -> None:
        room = MAX_PENDING - len(self._pending)
        if len(data) > room:
            self.dropped_bytes += len(data) - room
            data = data[:room]
        self._pending += data
        if not self._writer_armed and self._master is not None:
            loop = self._loop or asyncio.get_running_loop()
            self._loop = self._loop or loop
            loop.add_writer(self._master, self._flush)
            self._writer_armed = True

    def _flush(self) -> None:
        if self._master is None:
            return
        try:
            sent = os.write(self._master, self._pending)
        except BlockingIOError:
            return
        except OSError:
            sent = len(self._pending)  # EIO: nothing will ever read it
        del self._pending[:sent]
        if not self._pending:
            self._disarm_writer()

    def _disarm_writer(self) -> None:
        if self._writer_armed and self._loop is not None and self._master is not None:
            self._loop.remove_writer(self._master)
        self._writer_armed = False

    @property
    def pending_input(self) -> int:
        return len(self._pending)

    # -- size --------------------------------------------------------------------------------

    def resize(self, cols: int, rows: int) -> None:
        """Set the window size; the kernel sends SIGWINCH to the foreground group if it changed."""
        cols, rows = max(1, cols), max(1, rows)
        self.cols, self.rows = cols, rows
        if self._master is not None:
            with contextlib.suppress(OSError):
                set_winsize(self._master, cols, rows)

    # -- lifetime ----------------------------------------------------------------------------

    async def wait(self) -> int:
        """The child's exit status (128+n when killed by signal n). Waits without blocking the loop."""
        if (code := self.returncode) is not None:
            return code
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def exited() -> None:
            if not done.done():
                done.set_result(None)

        pidfd = -1
        pidfd_open = getattr(os, "pidfd_open", None)  # Linux ≥ 5.3: readable when the process exits
        if pidfd_open is not None:
            with contextlib.suppress(OSError):
                pidfd = pidfd_open(self.pid)
        try:
            if pidfd >= 0:
                loop.add_reader(pidfd, exited)
                try:
                    if self._proc.poll() is None:
                        await done
                finally:
                    loop.remove_reader(pidfd)
            else:
                delay = 0.005
                while self._proc.poll() is None:  # portable fallback: back off to 10 checks a second
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.1)
        finally:
            if pidfd >= 0:
                os.close(pidfd)
        code = self._proc.wait()
        return exit_status(code)

    def _targets(self) -> tuple[set[int], list[psutil.Process]]:
        """Process groups of our session that may still run (the leader's, the foreground one,
        descendants') and the processes seen in them now."""
        groups: set[int] = set()
        members: list[psutil.Process] = []
        if self._proc.poll() is None:
            groups.add(self.pid)
            with contextlib.suppress(psutil.Error):
                leader = psutil.Process(self.pid)
                members = [leader, *leader.children(recursive=True)]
        if (fg := self.foreground_pgid()) is not None and fg > 0:
            groups.add(fg)
            with contextlib.suppress(psutil.Error):
                members.append(psutil.Process(fg))
        for member in members[1:]:
            with contextlib.suppress(OSError):
                if os.getsid(member.pid) == self.pid:
                    groups.add(os.getpgid(member.pid))
        return groups, members

    def _alive(self, members: list[psutil.Process]) -> bool:
        return self._proc.poll() is None or running(members)

    def close(self) -> None:
        """Hang up, then terminate, then kill every group of the session (bounded waits), reap, close the pty."""
        groups, members = self._targets()
        end_groups(groups, lambda: self._alive(members))
        self._release()

    async def aclose(self) -> None:
        """`close()` without blocking the event loop during the grace periods."""
        groups, members = self._targets()
        for sig, grace in KILL_STEPS:
            if not self._alive(members):
                break
            if sig == signal.SIGHUP:
                signal_groups(signal.SIGCONT, groups)
            signal_groups(sig, groups)
            deadline = time.monotonic() + grace
            while self._alive(members) and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
        self._release()

    def _release(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=1.0)  # reap: no zombie left behind
        if self._master is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._master)
            self._disarm_writer()
        self._pending.clear()
        os.close(self._master)
        self._master = None
        if not self._eof:
            self._eof = True
            if self._eof_event is not None:
                self._eof_event.set()

    @property
    def closed(self) -> bool:
        return self._master is None

    def __del__(self) -> None:
        # Last resort for a session nobody closed: do not leak the descriptor.
        master = getattr(self, "_master", None)
        if master is not None:
            with contextlib.suppress(OSError):
                os.close(master)
