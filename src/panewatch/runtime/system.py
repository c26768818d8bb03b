"""What differs between Linux and macOS, in one place: every platform branch of panewatch reads `SYSTEM`
here (tests force the macOS branch on Linux with `monkeypatch.setattr(system, "SYSTEM", "darwin")`).

    unix socket paths   sun_path holds 108 bytes on Linux, 104 on macOS (with the NUL): `check_socket_path`
    peer process        who is on the other end of a unix socket: SO_PEERCRED (Linux), LOCAL_PEERPID (macOS)
    processes           /proc exists on Linux only; elsewhere psutil (sysctl) answers (`has_proc`)
    a process's tty     psutil's `terminal()` on both (Linux: /proc stat's tty_nr; macOS: sysctl)
    opening the board   Python's webbrowser: `open` (macOS), xdg-open and the desktop's browsers (Linux)
    desktop notices     D-Bus org.freedesktop.Notifications (desktop-notifier, else notify-send) on Linux;
                        Notification Center (desktop-notifier, else osascript) on macOS
    the runtime dir     $XDG_RUNTIME_DIR/panewatch where set (Linux sessions), else /tmp/panewatch-UID on both
                        (macOS has no XDG_RUNTIME_DIR; its $TMPDIR is per user but ~50 bytes long, which the
                        104-byte socket limit cannot spare)

What only a Mac can show (README, macOS): Notification Center's permission prompt and a click on a
notification, AppleScript driving iTerm2 and Terminal.app, and psutil's sysctl answers for real processes.
"""

from __future__ import annotations

import socket
import struct
import sys

from panewatch.errors import SocketPathTooLong

SYSTEM = sys.platform  # "linux" | "darwin" | …; read at call time so tests can force a branch

SOCKET_PATH_LIMITS = {"linux": 107, "darwin": 103}  # bytes, without the terminating NUL
_OTHER_LIMIT = 103  # the BSDs share macOS's struct sockaddr_un
_SOL_LOCAL, _LOCAL_PEERPID = 0, 0x002  # macOS <sys/un.h>: getsockopt(fd, SOL_LOCAL, LOCAL_PEERPID)


def is_mac() -> bool:
    return SYSTEM == "darwin"


def has_proc() -> bool:
    """Whether /proc can describe processes (Linux); elsewhere everything goes through psutil."""
    return SYSTEM == "linux"


def socket_path_limit() -> int:
    return SOCKET_PATH_LIMITS.get(SYSTEM, _OTHER_LIMIT)


def check_socket_path(path: str) -> str:
    """`path` if a unix socket can be bound there on this system, else SocketPathTooLong (bind() would fail with
    a bare 'AF_UNIX path too long', or on some systems truncate it silently)."""
    limit = socket_path_limit()
    if len(path.encode("utf-8", "surrogateescape")) > limit:
        raise SocketPathTooLong(path, limit)
    return path


def peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process on the other end of a connected unix socket, as the kernel says; None if unknown."""
    try:
        if SYSTEM == "linux" and hasattr(socket, "SO_PEERCRED"):
            pid, _uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                   struct.calcsize("3i")))
            return pid if pid > 0 else None
        if SYSTEM == "darwin":
            pid = struct.unpack("i", sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, struct.calcsize("i")))[0]
            return pid if pid > 0 else None
    except OSError:
        return None
    return None


def desktop_tool() -> str:
    """The command-line desktop notifier used when desktop-notifier cannot deliver."""
    return "osascript" if SYSTEM == "darwin" else "notify-send"


def desktop_tool_fix() -> str:
    return "" if SYSTEM == "darwin" else " (Debian/Ubuntu: apt-get install libnotify-bin)"
