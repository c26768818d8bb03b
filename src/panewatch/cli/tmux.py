"""`panewatch tmux`: watch every pane of a tmux server in the foreground, one line per state change.

    panewatch tmux [-L NAME | -S PATH | --host HOST] [--json]
    panewatch tmux status       (a summary for status-right; runtime/tmux_status.py, dispatched early)
    panewatch tmux next [--client NAME]   (bindable: this tmux client to the next blocked pane; cli/tmuxnext.py)

Without -L/-S: the server of the tmux we run in ($TMUX), else the default socket. `--json`: one
object per line: t, pane (tmux's id, `%3`), target (`session:window.pane`), agent, state, rule,
source, detail, command. Hooks installed with `panewatch hooks install` report here while no daemon
takes them (runtime/tmux_hooks.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from typing import Any

from panewatch.core.machine import StateChange
from panewatch.errors import TmuxError
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.settings import load_settings
from panewatch.runtime.tmux import TmuxServer, check_server
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher, skipped_message


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tmux", help="watch every pane of a tmux server (control mode) and print each state change",
        description="Attach to a tmux server in control mode (never resizing or changing anything) and print one "
                    "line per pane state change: blocked / working / idle / exited.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-L", dest="socket_name", metavar="NAME", help="the server on socket NAME (as tmux -L)")
    where.add_argument("-S", dest="socket_path", metavar="PATH", help="the server on socket PATH (as tmux -S)")
    where.add_argument("--host", dest="hosts", metavar="HOST", action="append",
                       help="a remote host's tmux through ssh (user@box, an ssh alias, or a [[remote]] name); "
                            "repeat for several hosts (cli/remote.py)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("action", nargs="?", choices=["status", "next"], help="status: a one-line summary of every "
                        "pane's state from the daemon, for tmux's status-right; next: switch this tmux client to the "
                        "next blocked pane (a message when none)")
    parser.add_argument("--client", metavar="NAME", help="next: the tmux client to switch (`#{client_name}` in a "
                        "run-shell binding; default: tmux's choice)")
    parser.set_defaults(func=main)


def server_from(ns: argparse.Namespace) -> TmuxServer:
    if ns.socket_name or ns.socket_path:
        return TmuxServer(ns.socket_name, ns.socket_path)
    return TmuxServer.from_env() or TmuxServer()


def change_json(pane: TmuxPane, change: StateChange) -> dict[str, Any]:
    out = change.as_json()
    out["target"] = pane.target
    out["command"] = pane.info.current_command
    return out


def change_line(pane: TmuxPane, change: StateChange) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(change.wall or time.time()))
    state = change.new
    why = f"{state.source}:{state.rule}" if state.rule else state.source
    detail = f"  ({state.detail})" if state.detail else ""
    return f"{stamp}  {pane.pane_id:<5} {pane.target:<16} {change.agent or '-':<10} {state.state:<8} {why}{detail}"


async def watch(server: TmuxServer, as_json: bool) -> int:
    check_server(server)  # a socket directory another user controls: refused, saying whose (TmuxUnsafeError)
    manifests = ManifestWatcher()

    def on_added(pane: TmuxPane) -> None:
        def printer(change: StateChange) -> None:
            line = json.dumps(change_json(pane, change), ensure_ascii=False) if as_json else change_line(pane, change)
            print(line, flush=True)

        pane.subscribe(printer)

    def on_skipped(session: str, hooks: list[str]) -> None:
        if not hooks:
            print(f"panewatch: tmux on {server.label}: watching {session or 'every session'} again", file=sys.stderr)
            return
        print(f"panewatch: {skipped_message(server.label, session, hooks)}", file=sys.stderr)

    settings = load_settings()
    # installed hooks' reports: ours unless the daemon (or another watcher of this server) takes them
    watcher = TmuxWatcher(server, manifests, on_added=on_added, attach_hooks=settings.tmux.attach_hooks,
                          on_skipped=on_skipped, hooks="share")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    await watcher.start()
    if not watcher.server_alive:
        print(f"panewatch: no tmux server on {server.label} yet; waiting for one", file=sys.stderr)
    try:
        await stop.wait()
    finally:
        await watcher.close()
    return 0


def main(ns: argparse.Namespace) -> int:
    if ns.action == "status":
        from panewatch.runtime.tmux_status import main as status_main

        return status_main([])
    if ns.action == "next":
        from panewatch.cli.tmuxnext import next_blocked

        return next_blocked(ns.client)
    if getattr(ns, "hosts", None):
        from panewatch.cli import remote

        return remote.main(ns.hosts, ns.json)
    try:
        return asyncio.run(watch(server_from(ns), ns.json))
    except TmuxError as exc:
        print(f"panewatch: {exc}", file=sys.stderr)
        return 1
