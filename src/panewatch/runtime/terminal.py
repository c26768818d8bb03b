"""The user's own terminal around a `panewatch run` pane: raw mode and its restore, the size, the
output stream our own bytes must not break into, and the keys typed (the raw passthrough of the
user's keystrokes: with the screen's terminal replies, the only writer to a pane besides the guard).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import termios
import tty
from collections.abc import Callable
from typing import Any

from panewatch.runtime.fd import get_winsize, write_all
from panewatch.runtime.live import LivePane

FORCE_OWN_OUTPUT = 1.0  # seconds: our bytes wait at most this long for the child to finish a sequence


def isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


class OuterTerminal:
    """The user's terminal: raw mode in, restore out. A no-op when stdin is not a terminal."""

    def __init__(self, in_fd: int = 0, out_fd: int = 1) -> None:
        self.in_fd, self.out_fd = in_fd, out_fd
        self.saved: list[Any] | None = None
        with contextlib.suppress(termios.error, OSError):
            if os.isatty(in_fd):
                self.saved = termios.tcgetattr(in_fd)

    @property
    def is_tty(self) -> bool:
        return self.saved is not None

    def raw(self) -> None:
        if self.saved is not None:
            tty.setraw(self.in_fd, termios.TCSANOW)  # TCSANOW: keys typed ahead stay for CMD

    def restore(self) -> None:
        if self.saved is not None:
            with contextlib.suppress(termios.error, OSError):  # a hung-up terminal has no modes left
                termios.tcsetattr(self.in_fd, termios.TCSANOW, self.saved)

    def for_watchdog(self) -> tuple[int, list[Any]] | None:
        """(our terminal's descriptor, the modes it had before us): what the watchdog puts back if this
        process dies without restoring them (`kill -9`); None without a terminal."""
        return (self.in_fd, self.saved) if self.saved is not None else None

    def child_modes(self) -> list[Any] | None:
        """Terminal modes for CMD's pty: ours when we have a terminal (erase key, iutf8 …). Without a
        terminal nobody types and nobody watches: no echo, and `\n` stays `\n` in a pipe or file, so
        `echo hi | panewatch run -- cat > f` gives what `echo hi | cat > f` gives."""
        modes: list[Any]
        if self.saved is not None:
            modes = [list(v) if isinstance(v, list) else v for v in self.saved]
        else:
            master, slave = os.openpty()
            try:
                modes = termios.tcgetattr(slave)
            finally:
                os.close(master)
                os.close(slave)
            modes[3] &= ~(termios.ECHO | termios.ECHONL)
        if not isatty(self.out_fd):
            modes[1] &= ~termios.ONLCR
        return modes

    def size(self) -> tuple[int, int]:
        for fd in (self.out_fd, self.in_fd, 2):
            with contextlib.suppress(OSError):
                cols, rows = get_winsize(fd)
                if cols > 0 and rows > 0:
                    return cols, rows
        return 80, 24


# A complete escape sequence starting at an ESC: CSI, OSC (BEL or ST), DCS/SOS/PM/APC (ST), or a short ESC.
_SEQUENCE = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]"  # CSI
    rb"|\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    rb"|[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC
    rb"|[ -/]+[0-~]|[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e])",  # ESC ( B, ESC 7, ESC \ …
    re.DOTALL)
_MAX_TAIL = 4096


def _utf8_incomplete(data: bytes) -> bool:
    """True if `data` ends inside a multi-byte UTF-8 character."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte or ASCII: how many bytes does its character need?
            need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
            return need > back
    return False


class OutputGate:
    """The real stdout. CMD's output goes straight through; our own bytes (a notification's OSC 9 or
    BEL) are written only where CMD's stream is between escape sequences and characters."""

    def __init__(self, fd: int, on_error: Callable[[OSError], None]) -> None:
        self.fd = fd
        self.on_error = on_error
        self.broken = False
        self._tail = b""  # an unfinished sequence at the end of CMD's last chunk
        self._clean = True
        self._queued = bytearray()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def clean(self) -> bool:
        return self._clean

    def child(self, data: bytes) -> None:
        self._write(data)
        self._track(data)
        if self._queued and self._clean:
            self._flush_own()

    def own(self, data: bytes) -> None:
        """Write our own bytes now if CMD's stream allows it, else right after its sequence ends."""
        self._queued += data
        if self._clean:
            self._flush_own()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FORCE_OWN_OUTPUT, self._flush_own)

    def _flush_own(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        data, self._queued = bytes(self._queued), bytearray()
        self._write(data)

    def _track(self, data: bytes) -> None:
        buf = self._tail + data if self._tail else data
        start = buf.rfind(b"\x1b")
        self._tail = b""
        if start >= 0 and not _SEQUENCE.match(buf, start) and len(buf) - start < _MAX_TAIL:
            self._tail = buf[start:]
        self._clean = not self._tail and not _utf8_incomplete(buf)

    def _write(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            write_all(self.fd, data)  # someone may have left our stdout non-blocking: write_all waits
        except OSError as exc:
            self.broken = True
            self.on_error(exc)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None



def forward_signal(pane: LivePane, sig: int) -> None:
    """A signal meant for CMD (e.g. SIGINT while stdin is a pipe): to the pty's foreground group."""
    session = pane.session
    pgid = session.foreground_pgid() if session is not None else None
    if pgid:
        with contextlib.suppress(OSError):
            os.killpg(pgid, sig)


class InputPump:
    """Our stdin → the pane, byte for byte. A pipe's end becomes an EOF (^D) for CMD."""

    def __init__(self, pane: LivePane, is_tty: bool) -> None:
        self.pane = pane
        self.is_tty = is_tty
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._reading = False
        self._last = b"\n"

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            self._loop.add_reader(0, self._on_readable)
            self._reading = True
        except (OSError, ValueError):  # a regular file or /dev/null cannot be polled: read it in a thread
            self._task = self._loop.create_task(self._read_file())

    def _on_readable(self) -> None:
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._write(data)
            return
        self._stop_reader()
        self._eof()

    async def _read_file(self) -> None:
        assert self._loop is not None
        while data := await self._loop.run_in_executor(None, os.read, 0, 65536):
            self._write(data)
        self._eof()

    def _write(self, data: bytes) -> None:
        self.pane.write(data)
        self._last = data[-1:]

    def _eof(self) -> None:
        # `echo hi | panewatch run -- cat` must end like `echo hi | cat`: VEOF at a line start is EOF,
        # after a partial line the first one only ends that line.
        if not self.is_tty:
            self.pane.write(b"\x04" if self._last in (b"\n", b"\r") else b"\x04\x04")

    def _stop_reader(self) -> None:
        if self._reading and self._loop is not None:
            self._loop.remove_reader(0)
        self._reading = False

    def stop(self) -> None:
        self._stop_reader()
        if self._task is not None:
            self._task.cancel()
