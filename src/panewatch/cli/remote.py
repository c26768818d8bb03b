"""`panewatch tmux --host HOST [--host HOST2 …] [--json]`: every pane of remote hosts' tmux, through ssh.

HOST is what you would type after `ssh` (user@box or a Host alias), or the `name` of a `[[remote]]` entry
in config.toml (whose tmux_socket and timeouts then apply). One line per pane state change; pane ids are
`HOST:%ID`. `--json`: the local `panewatch tmux` object (t, pane, target, agent, state, rule, source,
detail, command) plus host, tmux_pane and `away` (seconds the host was unreachable, on a pane's first
change after the link came back), and one line per link change: {"t", "host", "link": "down"|"up",
"away", "error"}. A host that refuses the key or whose host key does not match is an error (exit 1 when
no host is left); an unreachable host is retried with backoff while the others are watched.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from panewatch.core.machine import StateChange
from panewatch.errors import HostUnreachableError, SshError, TmuxError
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.remote import LinkChange, RemotePane, RemoteServer, RemoteWatcher
from panewatch.runtime.settings import RemoteSettings, load_settings
from panewatch.runtime.tmux_watch import TmuxPane, skipped_message


def remote_for(host: str, configured: tuple[RemoteSettings, ...]) -> RemoteSettings:
    """The `[[remote]]` entry named (or reached as) `host`, else a plain one for it."""
    for remote in configured:
        if host in (remote.label, remote.host):
            return remote
    return RemoteSettings(host)


def change_json(pane: RemotePane, change: StateChange) -> dict[str, Any]:
    out = change.as_json()
    out.update(target=pane.target, command=pane.info.current_command, host=pane.host, tmux_pane=pane.pane_id,
               away=None if pane.away is None else round(pane.away, 3))
    return out


def change_line(pane: RemotePane, change: StateChange) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(change.wall or time.time()))
    state = change.new
    why = f"{state.source}:{state.rule}" if state.rule else state.source
    detail = f"  ({state.detail})" if state.detail else ""
    away = f"  [back after {pane.away:.1f} s]" if pane.away is not None else ""
    return (f"{stamp}  {pane.board_id:<14} {pane.info.target:<16} {change.agent or '-':<10} {state.state:<11} "
            f"{why}{detail}{away}")


def link_line(change: LinkChange) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(change.wall))
    if change.up:
        return f"{stamp}  {change.host}: link back after {change.away or 0:.1f} s; panes resynchronised from tmux"
    return f"{stamp}  {change.host}: unreachable: {change.error}"


async def watch_hosts(hosts: list[str], as_json: bool) -> int:
    settings = load_settings()
    for warning in settings.warnings:
        print(f"panewatch: {warning}", file=sys.stderr)
    manifests = ManifestWatcher()

    def emit(line: str) -> None:
        print(line, flush=True)

    def on_added(pane: TmuxPane) -> None:
        assert isinstance(pane, RemotePane)

        def printer(change: StateChange) -> None:
            emit(json.dumps(change_json(pane, change), ensure_ascii=False) if as_json else change_line(pane, change))
            pane.away = None  # said once, on the first change after the link came back

        pane.subscribe(printer)

    def on_link(change: LinkChange) -> None:
        emit(json.dumps(change.as_json(), ensure_ascii=False) if as_json else link_line(change))

    def on_skipped(host: str) -> Callable[[str, list[str]], None]:
        return lambda session, hooks: print(f"panewatch: {skipped_message(host, session, hooks)}", file=sys.stderr)

    watchers = [RemoteWatcher(RemoteServer.from_settings(remote_for(h, settings.remotes)), manifests,
                              on_added=on_added, on_link=on_link, attach_hooks=settings.tmux.attach_hooks,
                              on_skipped=on_skipped(h)) for h in dict.fromkeys(hosts)]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    results = await asyncio.gather(*(w.start_or_retry() for w in watchers), return_exceptions=True)
    live: list[RemoteWatcher] = []
    for watcher, result in zip(watchers, results, strict=True):
        if result is None or isinstance(result, HostUnreachableError):
            live.append(watcher)  # connected, or retried in the background with backoff
            if result is not None:
                print(f"panewatch: {result}; retrying", file=sys.stderr)
        else:
            print(f"panewatch: {result}", file=sys.stderr)
            await watcher.close()
    if not live:
        return 1
    try:
        await stop.wait()
    finally:
        await asyncio.gather(*(w.close() for w in live), return_exceptions=True)
    return 0


def main(hosts: list[str], as_json: bool) -> int:
    try:
        return asyncio.run(watch_hosts(hosts, as_json))
    except (SshError, TmuxError) as exc:
        print(f"panewatch: {exc}", file=sys.stderr)
        return 1
