"""Reaching the daemon: where its files are, connecting, and starting it on demand.

Files in `paths.runtime_dir()` (0700), all 0600:

    board.sock    the unix socket: `run` panes register here, the pane commands talk here
    board.pid     the daemon's pid, under an exclusive flock for its whole life (one daemon per user)
    board.json    {"pid", "url", "host", "port"}: where the board is served (no secret in it)
    board-open-*.html  launcher pages `panewatch board` hands a browser, each carrying a one-time
                  sign-in token; the daemon removes them when the token expires
    board.log     the log of a daemon started on demand
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from panewatch import paths
from panewatch.board.rpc import MAX_LINE, Peer, RemoteError

START_TIMEOUT = 10.0
_spawned: list[subprocess.Popen[bytes]] = []  # kept, so no Popen is collected (and warns) while its daemon runs
AUTOSTART_IDLE_EXIT = 600.0  # a daemon started on demand leaves after this long with nothing to show


class DaemonNotRunning(RemoteError):
    def __init__(self, why: str = "") -> None:
        super().__init__("no_daemon", "the panewatch daemon is not running (start it with `panewatch serve`, "
                                      "or `panewatch board` starts it in the background)" + (f": {why}" if why else ""))


def socket_path() -> Path:
    return paths.runtime_dir() / "board.sock"


def runtime_file(name: str) -> Path:
    return paths.runtime_dir() / name


def read_state() -> dict[str, Any] | None:
    try:
        data = json.loads(runtime_file("board.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


async def open_connection() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        return await asyncio.open_unix_connection(str(socket_path()), limit=MAX_LINE)
    except (OSError, ValueError) as exc:  # ENOENT, ECONNREFUSED (stale socket), path too long
        raise DaemonNotRunning(str(exc.strerror if isinstance(exc, OSError) and exc.strerror else exc)) from None


def spawn_daemon(idle_exit: float | None = AUTOSTART_IDLE_EXIT) -> subprocess.Popen[bytes]:
    """Start `panewatch serve` detached from our terminal and session, logging to board.log (bounded, rotated).

    Its stderr goes to board.log too, for what an interpreter that fails to start prints; once up,
    the daemon lets go of that descriptor (logs.py), so only the rotating handler ever writes there.
    """
    log_path = runtime_file("board.log")
    argv = [sys.executable, "-m", "panewatch", "serve", "--quiet", "--log-file", str(log_path)]
    if idle_exit is not None:
        argv += ["--idle-exit", str(idle_exit)]
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fd,
                                start_new_session=True, close_fds=True)
    finally:
        os.close(fd)
    _spawned[:] = [p for p in _spawned if p.poll() is None] + [proc]
    return proc


async def connect(*, autostart: bool = False, timeout: float = START_TIMEOUT) -> Peer:
    """A connected (not yet started) Peer; starts the daemon first if asked and it is not running."""
    try:
        reader, writer = await open_connection()
    except DaemonNotRunning:
        if not autostart:
            raise
        proc = spawn_daemon()
        reader, writer = await _wait_for_socket(proc, timeout)
    return Peer(reader, writer)


async def _wait_for_socket(proc: subprocess.Popen[bytes], timeout: float) -> tuple[asyncio.StreamReader,
                                                                                    asyncio.StreamWriter]:
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        with contextlib.suppress(DaemonNotRunning):
            return await open_connection()
        code = proc.poll()
        # Exit code 3: another daemon holds the lock (a race with another starter): keep waiting for it.
        if code not in (None, 3):
            raise DaemonNotRunning(f"it exited with status {code}; see {runtime_file('board.log')}")
        if time.monotonic() > deadline:
            raise DaemonNotRunning(f"it did not start within {timeout:.0f} s; see {runtime_file('board.log')}")
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, 0.2)


async def call(op: str, *, autostart: bool = False, timeout: float | None = 30.0, **params: Any) -> dict[str, Any]:
    """One request on a fresh connection (the pane commands)."""
    peer = await connect(autostart=autostart)
    peer.start()
    try:
        return await peer.request(op, timeout=timeout, **params)
    finally:
        await peer.close()


def ensure_daemon(timeout: float = START_TIMEOUT) -> dict[str, Any]:
    """Start the daemon if needed and return its `board` info: {"url" (no secret), "pid", "port", ...}.

    To sign a browser in, ask the daemon for a one-time link: `call("login")` → {"url", "expires_in"}.

    For callers outside an event loop (the demo, scripts). Inside one, use `call("info", autostart=True)`.
    """
    return asyncio.run(call("info", autostart=True, timeout=timeout))
