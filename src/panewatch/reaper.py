"""Ending a pane's processes: the bounded HUP → TERM → KILL steps, and the daemon's watchdog process.

`end_groups` is how every pane ends (PtySession.close/aclose follow the same KILL_STEPS). `watchdog()`
is the process `board/watchdog.py` starts beside the daemon: it reads the daemon's pipe until EOF,
then ends the sessions the daemon recorded (see that module for why and the protocol). It runs for
the daemon's whole life, so this module stays light: no asyncio, no screen engine, only psutil.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable

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


def end_groups(groups: set[int], alive: Callable[[], bool]) -> None:
    """KILL_STEPS to every process group in `groups` until `alive()` says nothing runs. Blocks (at
    most the sum of the grace periods); `PtySession.aclose()` is the same for an event loop."""
    for sig, grace in KILL_STEPS:
        if not alive():
            break
        if sig == signal.SIGHUP:
            signal_groups(signal.SIGCONT, groups)  # a stopped job must wake to see the hangup
        signal_groups(sig, groups)
        deadline = time.monotonic() + grace
        while alive() and time.monotonic() < deadline:
            time.sleep(0.005)


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


def watchdog() -> int:
    """The watchdog process: `+SID CTIME` / `-SID` lines on stdin until EOF, then end what is left."""
    sessions: dict[int, float] = {}
    for line in sys.stdin.buffer:  # until EOF: the daemon closed the pipe, or died however it died
        fields = line[1:].split()
        with contextlib.suppress(ValueError, IndexError):
            if line.startswith(b"+"):
                sessions[int(fields[0])] = float(fields[1])
            elif line.startswith(b"-"):
                sessions.pop(int(fields[0]), None)
    ended = end_sessions(sessions)
    if ended:
        print(f"panewatch watchdog: the daemon is gone; ended {ended} of its pane sessions", file=sys.stderr)
    return 0
