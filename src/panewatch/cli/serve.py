"""`panewatch serve` (the daemon behind the board) and `panewatch board` (sign in: open it, print a one-time link).

No secret ever goes on a command line (any local user can read those): the browser is handed the
path of a private launcher page the daemon wrote, never a URL with a token (see board/security.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import resource
import signal
import sys
import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from panewatch.board import client
from panewatch.board.rpc import RemoteError

if TYPE_CHECKING:
    from panewatch.board.limits import Limits

EXIT_ALREADY_RUNNING = 3  # client.py's starter treats this one as "someone else started it: wait"


def register(subparsers: Any) -> None:
    serve = subparsers.add_parser(
        "serve", help="run the sessions board daemon (one per user) in the foreground",
        description="Run the daemon that every `panewatch run` registers with, that owns headless panes "
                    "(`panewatch new`) and serves the sessions board on loopback. `panewatch board` and "
                    "`panewatch run` start it in the background when needed.")
    serve.add_argument("--port", type=int, default=None,
                       help="the board's TCP port (default: $PANEWATCH_BOARD_PORT, else `[board] port` in "
                            "config.toml, else any free port)")
    serve.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1); "
                                                           "other addresses are refused")
    serve.add_argument("--idle-exit", type=float, metavar="SECONDS",
                       help="exit after this long with no pane, no board tab and no client")
    serve.add_argument("--quiet", action="store_true", help="do not print the board's URL")
    serve.add_argument("--log-file", type=Path, metavar="PATH",
                       help="log here (rotated, bounded in size) instead of stderr; stderr itself goes into it")
    serve.add_argument("--stop", action="store_true", help="ask the running daemon to exit, and wait for it")
    serve.add_argument("--reload", action="store_true", help="have the running daemon read config.toml again (it "
                                                             "also does by itself when the file changes)")
    serve.set_defaults(func=cmd_serve)

    board = subparsers.add_parser("board", help="open the sessions board in a browser and print a one-time link "
                                                "to it, starting the daemon if needed")
    board.add_argument("--no-open", action="store_true", help="print the one-time link only, do not open a browser")
    board.add_argument("--pane", metavar="ID", help="open the board at this pane (a notification's click does)")
    board.add_argument("--json", action="store_true",
                       help="print {url (one-time link), base, pid, port, panes} as JSON")
    board.set_defaults(func=cmd_board)


def cmd_serve(ns: argparse.Namespace) -> int:
    if ns.stop:
        return _stop()
    if ns.reload:
        return _reload()
    from panewatch.board import logs
    from panewatch.board.limits import Limits

    _more_files()
    try:
        limits = Limits.from_env()
    except ValueError as exc:
        print(f"panewatch serve: {exc}", file=sys.stderr)
        return 2
    try:
        ns.port, ns.port_from = board_port(ns.port)
    except ValueError as exc:
        print(f"panewatch serve: {exc}", file=sys.stderr)
        return 2
    logs.setup(path=ns.log_file, level=logging.WARNING if ns.quiet else logging.INFO, limits=limits)
    try:
        return asyncio.run(_serve(ns, limits))
    finally:
        sys.stderr.flush()  # a last partial line into the log while it is still open


async def _serve(ns: argparse.Namespace, limits: Limits) -> int:
    from panewatch.board.daemon import AlreadyRunning, Daemon

    try:
        daemon = Daemon(host=ns.host, port=ns.port, idle_exit=ns.idle_exit, limits=limits)
    except ValueError as exc:
        print(f"panewatch serve: {exc}", file=sys.stderr)
        return 2
    try:
        await daemon.start()
    except AlreadyRunning as exc:
        print(f"panewatch serve: {exc} (`panewatch board` prints its URL)", file=sys.stderr)
        return EXIT_ALREADY_RUNNING
    except OSError as exc:
        source = f" (the port is from {ns.port_from})" if ns.port_from else ""
        print(f"panewatch serve: cannot listen on {ns.host}:{ns.port}{source}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, daemon.stop)
    if not ns.quiet:
        link = daemon.login()
        print(f"panewatch board: {link['url']}\n  (a one-time link, valid {link['expires_in']:.0f} s; "
              "`panewatch board` opens the board or prints a new one)", flush=True)
        for backend in daemon.info()["notify"]:  # said once: which notifications can reach you, which cannot
            print(f"  notifications: {backend['backend']}: {'' if backend['ok'] else 'cannot deliver: '}"
                  f"{backend['how']}", flush=True)
    try:
        await daemon.wait()
    finally:
        await daemon.close()
    return 0


def board_port(arg: int | None) -> tuple[int, str]:
    """The port to listen on and where it came from: --port, else $PANEWATCH_BOARD_PORT, else `[board] port`."""
    if arg is not None:
        return arg, "--port"
    env = os.environ.get("PANEWATCH_BOARD_PORT", "").strip()
    if env:
        try:
            return int(env), "PANEWATCH_BOARD_PORT"
        except ValueError:
            raise ValueError(f"PANEWATCH_BOARD_PORT={env!r} is not a port number") from None
    from panewatch.runtime.settings import load_settings

    settings = load_settings()
    return settings.board.port, f"[board] port in {settings.path}" if settings.board.port else ""


def _more_files() -> None:
    """Each pane holds a pty and pipes: raise the soft fd limit so hundreds of panes fit."""
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


STOP_WAIT = 15.0  # seconds `serve --stop` waits for the daemon's process to be gone


def _stop() -> int:
    async def stop() -> int:
        try:
            info = await client.call("info")
            await client.call("shutdown")
        except RemoteError as exc:
            print(f"panewatch serve --stop: {exc}", file=sys.stderr)
            return 1
        pid = int(info.get("pid") or 0)
        deadline = time.monotonic() + STOP_WAIT
        while time.monotonic() < deadline:  # "stopped" means the process is gone: a new daemon may start now
            if pid <= 0 or not _alive(pid):
                print(f"panewatch daemon {pid} stopped")
                return 0
            await asyncio.sleep(0.05)
        print(f"panewatch serve --stop: the daemon (pid {pid}) did not exit within {STOP_WAIT:g} s", file=sys.stderr)
        return 1

    return asyncio.run(stop())


def _reload() -> int:
    try:
        done = asyncio.run(client.call("reload"))
    except RemoteError as exc:
        print(f"panewatch serve --reload: {exc}", file=sys.stderr)
        return 1
    print(f"panewatch daemon read {done.get('path') or 'the defaults (no config.toml)'} again")
    for warning in done.get("warnings") or []:
        print(f"  {warning}", file=sys.stderr)
    if done.get("after_restart"):
        print(f"  {', '.join(done['after_restart'])}: takes effect when the daemon restarts", file=sys.stderr)
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (our child, not yet reaped) has exited
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def cmd_board(ns: argparse.Namespace) -> int:
    opening = not ns.no_open and not ns.json and _has_gui()

    async def ask() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
        info = await client.call("info", autostart=True, timeout=client.START_TIMEOUT)
        # Two links: the browser spends its own, so the printed one still works elsewhere.
        pane = {"pane": ns.pane} if ns.pane else {}
        return info, await client.call("login", **pane), (await client.call("login", launcher=True, **pane)
                                                          if opening else None)

    try:
        info, link, launcher = asyncio.run(ask())
    except RemoteError as exc:
        print(f"panewatch board: {exc}", file=sys.stderr)
        return 1
    if ns.json:
        print(json.dumps({"url": link["url"], "base": info.get("url"),
                          **{k: info.get(k) for k in ("pid", "port", "panes")}}))
    else:
        print(link["url"])
    if launcher is not None:
        with contextlib.suppress(Exception):  # no browser after all: the printed link is the way in
            webbrowser.open(Path(launcher["file"]).as_uri())
    return 0


def _has_gui() -> bool:
    """Only open a graphical browser: a console one would take over this terminal."""
    return sys.platform == "darwin" or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
