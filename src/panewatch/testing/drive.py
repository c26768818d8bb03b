"""Drive a real agent CLI in a pseudo-terminal: spawn, answer terminal queries, type, read the screen.

The emulated screen (panewatch.core.screen.Screen) answers DA1/DSR and friends itself; its replies are
written back to the pty, which is what a real terminal does and what the CLIs wait for at start.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType

from panewatch.core.screen import Screen, Snapshot
from panewatch.runtime.fd import set_winsize, write_all
from panewatch.testing.capture_truth import screen_text, shows

Clock = Callable[[], float]
Predicate = Callable[[Snapshot], bool]

# Become session leader and take the pty as controlling terminal, then exec: done in a tiny
# trampoline instead of preexec_fn, which is unsafe once other threads (the mock) are running.
_TRAMPOLINE = (
    "import fcntl, os, sys, termios\n"
    "os.setsid()\n"
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
    "os.execvp(sys.argv[1], sys.argv[1:])\n"
)


def _matcher(what: str | re.Pattern[str] | Predicate) -> Predicate:
    if callable(what) and not isinstance(what, re.Pattern):
        return what
    if isinstance(what, re.Pattern):
        pattern = what
        return lambda snap: pattern.search(snap.text()) is not None
    text = what  # as drawn or broken across rows (capture_truth.shows)
    return lambda snap: shows(screen_text(snap), text)


class PtyAgent:
    """One CLI in a pty with an emulated screen. Output chunks are kept with clock times."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
                 cols: int = 120, rows: int = 32, clock: Clock = time.monotonic) -> None:
        self.argv = list(argv)
        self.env = dict(env) if env is not None else dict(os.environ)
        self.cwd = cwd
        self.cols, self.rows = cols, rows
        self.clock = clock
        self.output: list[tuple[float, bytes]] = []  # (clock time, bytes read), for casts
        self.inputs: list[tuple[float, bytes]] = []  # (clock time, bytes typed)
        self.screen = Screen(cols, rows)
        self.screen.on_reply(self._reply)
        self.proc: subprocess.Popen[bytes] | None = None
        self._master = -1
        self._cond = threading.Condition()
        self._reader: threading.Thread | None = None
        self._eof = False

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> PtyAgent:
        master, slave = os.openpty()
        set_winsize(slave, self.cols, self.rows)
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", _TRAMPOLINE, *self.argv],
                                         stdin=slave, stdout=slave, stderr=slave, env=self.env,
                                         cwd=self.cwd, close_fds=True)
        finally:
            os.close(slave)
        self._master = master
        self._reader = threading.Thread(target=self._read_loop, name="pty-reader", daemon=True)
        self._reader.start()
        return self

    def close(self, timeout: float = 5.0) -> int | None:
        """SIGTERM the agent's process group, SIGKILL after `timeout`; returns the exit status."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                proc.wait(timeout)
        if self._reader is not None:
            self._reader.join(timeout)
        if self._master >= 0:
            os.close(self._master)
            self._master = -1
        return None if proc is None else proc.returncode

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)  # the trampoline made the agent a session (group) leader

    def __enter__(self) -> PtyAgent:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- io ------------------------------------------------------------------------------------
    def _read_loop(self) -> None:
        while True:
            try:
                data = os.read(self._master, 65536)
            except OSError as exc:
                if exc.errno in (errno.EIO, errno.EBADF):  # EIO: the child side closed
                    break
                raise
            if not data:
                break
            with self._cond:
                self.output.append((self.clock(), data))
                self.screen.feed(data)
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _reply(self, data: bytes) -> None:
        # Called from feed() on the reader thread: answers to DA1, DSR, kitty queries, ...
        self._write(data)

    def _write(self, data: bytes) -> None:
        if self._master >= 0:
            with contextlib.suppress(OSError):
                write_all(self._master, data)

    def write(self, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        self.inputs.append((self.clock(), raw))
        self._write(raw)

    def type(self, text: str, *, per_key: float = 0.01, enter: bool = True, settle: float = 0.3,
             echo_timeout: float = 15.0) -> None:
        """Type like a person: one key at a time (fast input reads as a paste), then Enter.

        Enter goes only once the CLI shows the end of the text: it has read those keys, so Enter reaches
        it in a read of its own. (Sent after a fixed pause, a starved CLI read text and Enter together,
        took them for a paste and left the prompt unsent: Gemini CLI 0.61.0 under two CPU burners.)"""
        for ch in text:
            self.write(ch)
            time.sleep(per_key)
        if enter:
            tail = text.strip()[-12:]
            if tail and self.wait_for(tail, echo_timeout) is None:
                raise TimeoutError(f"typed text never showed ({tail!r}); screen:\n{self.text()}")
            time.sleep(settle)  # and a person's pause before Enter
            self.write("\r")

    def resize(self, cols: int, rows: int) -> None:
        with self._cond:
            self.cols, self.rows = cols, rows
            self.screen.resize(cols, rows)
        if self._master >= 0:
            set_winsize(self._master, cols, rows)

    # -- screen --------------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        with self._cond:
            return self.screen.snapshot()

    def text(self) -> str:
        return self.snapshot().text()

    def wait_for(self, what: str | re.Pattern[str] | Predicate, timeout: float = 30.0) -> Snapshot | None:
        """Poll the screen (on every output chunk) until `what` shows; None on timeout or exit."""
        match = _matcher(what)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                snap = self.screen.snapshot()
                if match(snap):
                    return snap
                left = deadline - time.monotonic()
                if left <= 0 or self._eof:
                    return None
                self._cond.wait(min(left, 0.25))

    def wait_gone(self, what: str | re.Pattern[str] | Predicate, timeout: float = 30.0) -> Snapshot | None:
        match = _matcher(what)
        return self.wait_for(lambda snap: not match(snap), timeout)

    def answer(self, keys: bytes | str, dialog: str | re.Pattern[str] | Predicate, *, timeout: float = 10.0,
               retry_after: float = 1.5) -> Snapshot | None:
        """Send `keys` to a dialog until it goes away (some dialogs ignore keys for a moment after
        they open, e.g. Claude's "Exit plan mode?"); the snapshot once gone, None on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            self.write(keys)
            gone = self.wait_gone(dialog, min(retry_after, max(0.0, deadline - time.monotonic())))
            if gone is not None or time.monotonic() >= deadline or not self.alive:
                return gone
