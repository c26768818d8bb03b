"""`kill -9` of `panewatch run` (issue 23, item 9d): its watchdog ends CMD even when CMD ignores the
hangup and SIGTERM, and puts the outer terminal's modes back (before: CMD lived on as an orphan and the
terminal stayed raw: no echo, no line editing). A normal exit leaves the terminal to the shell."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from test_run import Outer

STUBBORN = """
import os, signal, sys, time
for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, signal.SIG_IGN)
open(sys.argv[1], "w").write(str(os.getpid()))
print("ready", flush=True)
while True:
    time.sleep(1)
"""


@pytest.fixture
def stubborn(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    script, pidfile = tmp_path / "stubborn.py", tmp_path / "pid"
    script.write_text(STUBBORN, encoding="utf-8")
    yield script, pidfile
    if pidfile.exists():  # never leave one behind, whatever the test found
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def until(pred: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_kill_9_of_run_ends_a_stubborn_child_and_gives_the_terminal_back(stubborn: tuple[Path, Path]) -> None:
    script, pidfile = stubborn
    outer = Outer(["--", sys.executable, str(script), str(pidfile)])
    try:
        outer.see("ready")
        child = int(pidfile.read_text())
        raw = outer.modes()
        assert raw != outer.modes_before and not raw[3] & termios.ICANON  # raw while run runs
        outer.proc.send_signal(signal.SIGKILL)
        outer.proc.wait()
        # The watchdog, which outlives us: the terminal's modes back, CMD ended (HUP, TERM ignored: KILL).
        until(lambda: outer.modes() == outer.modes_before, "the terminal's modes put back")
        until(lambda: not alive(child), "the stubborn child ended")
        outer.until(lambda: "the terminal's modes put back" in outer.text(), "the watchdog's word")
        assert "ended 1 of its pane sessions" in outer.text()
    finally:
        outer.close()


def watchdog_of(pid: int) -> psutil.Process:
    """The watchdog `run` (pid) started."""
    found: list[psutil.Process] = []

    def look() -> bool:
        found[:] = [c for c in psutil.Process(pid).children()
                    if "from panewatch.runtime.reaper import watchdog" in " ".join(c.cmdline())]
        return bool(found)

    until(look, "run's watchdog")
    return found[0]


def test_a_normal_exit_leaves_the_terminal_to_the_shell(tmp_path: Path) -> None:
    """The watchdog must not put modes back after `run` ended well: the shell may have set its own by then
    (readline's). Here the "shell" turns echo off once run exited; the watchdog leaves it so."""
    outer = Outer(["--", "bash", "-c", "echo ready; read -r line"])
    try:
        outer.see("ready")
        watchdog = watchdog_of(outer.proc.pid)
        outer.type(b"\r")
        assert outer.wait() == 0
        assert outer.modes() == outer.modes_before
        shell = termios.tcgetattr(outer.slave)
        shell[3] &= ~termios.ECHO
        termios.tcsetattr(outer.slave, termios.TCSANOW, shell)
        until(lambda: not alive(watchdog.pid), "the watchdog gone")  # it read run's EOF and had nothing to do
        outer.pump()
        assert termios.tcgetattr(outer.slave)[3] == shell[3]
        assert "panewatch watchdog" not in outer.text()  # it says what it did, on the terminal: nothing here
    finally:
        outer.close()
