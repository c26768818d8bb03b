"""Ending a pane's processes: the bounded HUP → TERM → KILL steps, and the watchdog process.

`end_groups` is how every pane ends (PtySession.close/aclose follow the same KILL_STEPS). `watchdog()`
is the process `board/watchdog.py` starts beside the daemon and beside each `panewatch run`: it reads
its owner's pipe until EOF, then puts back the terminal's modes it was given (`run`'s outer terminal,
left raw by a `kill -9`) and ends the sessions its owner recorded (see that module for why and the
protocol). It runs for its owner's whole life, so this module stays light: no asyncio, no screen
engine, only psutil and termios.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import termios
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import psutil

# Hang up (what a closed terminal does), then terminate, then kill; each step's grace period (s) is
# bounded, and the next step only comes if something still runs.
KILL_STEPS = ((signal.SIGHUP, 0.5), (signal.SIGTERM, 0.5), (signal.SIGKILL, 1.0))


def signal_groups(sig: int, groups: set[int]) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def running(procs: Iterable[psutil.Process]) -> bool:
    """Whether any of `procs` still runs. Zombies count as gone: orphans are reaped by init, on its own schedule."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                return True
    return False


def ending_groups(groups: set[int], alive: Callable[[], bool]) -> Iterator[float]:
    """KILL_STEPS to every process group in `groups` until `alive()` says nothing runs: sends the
    signals and yields how long to pause before looking again. The one body of `end_groups` (which
    sleeps) and `PtySession.aclose` (which awaits)."""
    for sig, grace in KILL_STEPS:
        if not alive():
            return
        if sig == signal.SIGHUP:
            signal_groups(signal.SIGCONT, groups)  # a stopped job must wake to see the hangup
        signal_groups(sig, groups)
        deadline = time.monotonic() + grace
        while alive() and time.monotonic() < deadline:
            yield 0.005


def end_groups(groups: set[int], alive: Callable[[], bool]) -> None:
    """`ending_groups`, blocking (at most the sum of the grace periods)."""
    for pause in ending_groups(groups, alive):
        time.sleep(pause)


def end_sessions(sessions: dict[int, float]) -> int:
    """End every process in these sessions ({leader pid: its start time}); returns how many had any."""
    ours = {sid for sid, started in sessions.items() if _still_ours(sid, started)}
    members: list[psutil.Process] = []
    found: set[int] = set()
    for pid in psutil.pids():
        if (sid := _session_of(pid)) is not None and sid in ours:
            with contextlib.suppress(psutil.Error):
                members.append(psutil.Process(pid))
                found.add(sid)
    groups = set()
    for proc in members:
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(proc.pid))
    end_groups(groups, lambda: running(members))
    return len(found)


def _still_ours(sid: int, started: float) -> bool:
    """A live leader that started at another time is a recycled pid: someone else's session."""
    try:
        return abs(psutil.Process(sid).create_time() - started) < 1.0
    except psutil.NoSuchProcess:  # the leader is gone: processes left in its session keep the id reserved
        return True
    except psutil.Error:
        return False


def _session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except PermissionError:  # POSIX lets a system hide other sessions' ids: the leader's group then
        with contextlib.suppress(OSError):
            return os.getpgid(pid)
    except OSError:
        pass
    return None


TerminalModes = list[Any]  # termios.tcgetattr's list: iflag, oflag, cflag, lflag, ispeed, ospeed, cc


def terminal_line(fd: int, modes: TerminalModes) -> str:
    """`=FD IFLAG OFLAG CFLAG LFLAG ISPEED OSPEED CC,CC,…`: on EOF, put `modes` back on the terminal open
    as FD in the watchdog (inherited). Every cc entry as its number (tcsetattr takes either form)."""
    cc = ",".join(str(c if isinstance(c, int) else c[0] if c else 0) for c in modes[6])
    return f"={fd} {' '.join(str(int(v)) for v in modes[:6])} {cc}"


def parse_terminal_line(line: bytes) -> tuple[int, TerminalModes] | None:
    """The (fd, modes) of a `terminal_line`; None for `=-` (forget the terminal: its owner restored it)."""
    fields = line[1:].split()
    if fields == [b"-"]:
        return None
    return int(fields[0]), [*(int(v) for v in fields[1:7]), [int(c) for c in fields[7].split(b",")]]


def restore_terminal(fd: int, modes: TerminalModes) -> bool:
    try:
        termios.tcsetattr(fd, termios.TCSANOW, modes)
        return True
    except (termios.error, OSError, ValueError, TypeError):  # hung up, closed, or modes it refuses
        return False


def watchdog() -> int:
    """The watchdog process: `+SID CTIME` / `-SID` / `=FD MODES` / `=-` lines on stdin until EOF, then
    the terminal's modes put back (first: its user waits at a shell prompt) and what is left ended."""
    sessions: dict[int, float] = {}
    terminal: tuple[int, TerminalModes] | None = None
    for line in sys.stdin.buffer:  # until EOF: the owner closed the pipe, or died however it died
        fields = line[1:].split()
        with contextlib.suppress(ValueError, IndexError):
            if line.startswith(b"+"):
                sessions[int(fields[0])] = float(fields[1])
            elif line.startswith(b"-"):
                sessions.pop(int(fields[0]), None)
            elif line.startswith(b"="):
                terminal = parse_terminal_line(line)
    restored = terminal is not None and restore_terminal(*terminal)
    ended = end_sessions(sessions)
    if ended or restored:
        print(f"panewatch watchdog: its owner is gone; ended {ended} of its pane sessions"
              + ("; the terminal's modes put back" if restored else ""), file=sys.stderr)
    return 0
