"""File-descriptor chores done one way everywhere: writing a whole buffer, a terminal's window size.

`write_all` is for the callers that may block (a CLI process, a fake agent, a test driver): a full
non-blocking descriptor is waited on with select, never spun on. The event loop's writer to a pty is
PtySession.write (runtime/pty.py), which queues instead of waiting.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import termios

FULL_WAIT = 1.0  # seconds select waits for room before trying again


def write_all(fd: int, data: bytes) -> None:
    """Every byte of `data` to `fd`, in order. OSError (a closed pipe, a hung-up terminal) propagates."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:  # non-blocking and full: wait for room
            select.select([], [fd], [], FULL_WAIT)


def set_winsize(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def get_winsize(fd: int) -> tuple[int, int]:
    """(cols, rows) of the terminal on `fd`."""
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    return cols, rows
