"""`panewatch demo` driven in a real PTY: the view appears, agents change state, Ctrl-C leaves a clean terminal."""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

from panewatch.core.screen import Screen
from panewatch.runtime.fd import set_winsize


def _controlling_tty() -> None:
    """In the child: a session whose controlling terminal is the pty, so Ctrl-C becomes SIGINT."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def read_until(fd: int, buf: bytearray, predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate(bytes(buf)):
            return True
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return bool(callable(predicate) and predicate(bytes(buf)))
            if not chunk:
                break
            buf += chunk
    return bool(callable(predicate) and predicate(bytes(buf)))


def test_demo_runs_and_ctrl_c_restores_the_terminal() -> None:
    master, slave = os.openpty()
    set_winsize(slave, 120, 40)
    env = {**os.environ, "PANEWATCH_BOARD": "auto"}  # as a user has it: the demo still starts no daemon
    proc = subprocess.Popen([sys.executable, "-m", "panewatch", "demo", "--panes", "2", "--time-scale", "0.2"],
                            stdin=slave, stdout=slave, stderr=slave, preexec_fn=_controlling_tty, close_fds=True,
                            env=env)
    os.close(slave)
    buf = bytearray()
    try:
        assert read_until(master, buf, lambda b: b"2 fake agents" in b, 30), buf[-2000:]
        # A state other than idle shows up: the fake agents really run and are detected.
        assert read_until(master, buf, lambda b: b"working" in b or b"BLOCKED" in b, 30), buf[-2000:]
        assert b"screen: " in buf  # the decision's source and rule are shown
        os.write(master, b"\x03")  # Ctrl-C through the line discipline: SIGINT to the demo
        assert read_until(master, buf, lambda b: b"panewatch demo: stopped" in b, 30), buf[-2000:]
        assert proc.wait(timeout=15) == 0
        read_until(master, buf, lambda b: False, 0.3)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    data = bytes(buf)
    assert data.rindex(b"\x1b[?1049l") > data.rindex(b"\x1b[?1049h")  # left the alternate screen
    assert data.rindex(b"\x1b[?25h") > data.rindex(b"\x1b[?25l")  # cursor shown again
    screen = Screen(120, 40)
    screen.feed(data)
    snap = screen.snapshot()
    assert not snap.alt_screen
    assert any("panewatch demo: stopped" in row for row in snap.rows)
    # it leaves nothing behind: no daemon, no waits in the user's stats
    assert not (Path(os.environ["PANEWATCH_RUNTIME_DIR"]) / "board.sock").exists()
    assert not (Path(os.environ["PANEWATCH_STATE_DIR"]) / "waits.sqlite3").exists()
