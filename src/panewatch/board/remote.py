"""The daemon's remote panes: every pane of every `[[remote]]` host's tmux (config.toml), on the board.

    RemoteBoard   one RemoteWatcher (runtime/remote.py) per host, each started in its own task: a host that
                  is slow to answer, unreachable or refusing the key never delays the daemon's start or
                  another host's panes. An unreachable host is retried with backoff by its watcher; each
                  link change is logged and kept in `hosts` (what `ls` and the board may show of a host).
    RemoteHandle  one remote pane behind the board's PaneHandle interface: a TmuxHandle whose card id is
                  `HOST:%ID` (never reused across hosts), origin "remote", `host`, `target` `HOST:s:w.p`;
                  input through the same PaneEndpoint and guard (refused while unreachable / not resynced),
                  typed by the control connection's send-keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from panewatch.board.ids import card_key
from panewatch.board.model import Card
from panewatch.board.panes import Hub
from panewatch.board.tmux import TmuxHandle
from panewatch.core.machine import StateChange
from panewatch.runtime.driver import Manifests
from panewatch.runtime.remote import LinkChange, RemotePane, RemoteServer, RemoteWatcher
from panewatch.runtime.settings import RemoteSettings
from panewatch.runtime.tmux_watch import TmuxPane

log = logging.getLogger("panewatch.board")

ChangeListener = Callable[[TmuxHandle, StateChange], None]


class RemoteHandle(TmuxHandle):
    def __init__(self, hub: Hub, pane: RemotePane, server: RemoteServer) -> None:
        self.remote = pane
        super().__init__(hub, pane.board_id, pane, server, key=card_key("remote", pane.board_id))
        self.endpoint.guard.pane_id = pane.board_id  # refusals name the host too

    def _name(self) -> str:
        return self.remote.target

    def _own(self, card: Card) -> Card:
        return {**super()._own(card), "origin": "remote", "host": self.remote.host, "target": self.remote.target}


class RemoteBoard:
    """Every `[[remote]]` host's panes on the hub."""

    def __init__(self, hub: Hub, manifests: Manifests, remotes: tuple[RemoteSettings, ...], *,
                 on_change: ChangeListener | None = None, attach_hooks: str = "skip") -> None:
        self.hub = hub
        self.attach_hooks = attach_hooks
        self.manifests = manifests
        self.remotes = remotes
        self.on_change = on_change
        self.watchers: dict[str, RemoteWatcher] = {}
        self.handles: dict[str, RemoteHandle] = {}
        # label -> {"link": up|down|connecting, "error", "away" (s down before the last reconnect), "since"}
        self.hosts: dict[str, dict[str, Any]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for remote in self.remotes:
            server = RemoteServer.from_settings(remote)
            watcher = RemoteWatcher(server, self.manifests, on_added=self._added, on_removed=self._removed,
                                    on_link=self._on_link, attach_hooks=self.attach_hooks)
            self.watchers[server.label] = watcher
            self.hosts[server.label] = {"link": "connecting", "error": None, "away": None, "since": time.time()}
            self._tasks.append(loop.create_task(self._run(watcher)))

    async def _run(self, watcher: RemoteWatcher) -> None:
        try:
            error = await watcher.start_or_retry()
        except Exception as exc:  # tmux missing or too old there: that host only
            log.warning("not watching %s: %s", watcher.host, exc)
            self.hosts[watcher.host] = {"link": "down", "error": str(exc), "away": None, "since": time.time()}
            return
        if error is None:
            self.hosts[watcher.host] = {"link": "up", "error": None, "away": None, "since": time.time()}
        else:
            log.warning("%s (retrying with backoff)", error)

    def _on_link(self, change: LinkChange) -> None:
        self.hosts[change.host] = {"link": "up" if change.up else "down", "error": change.error or None,
                                   "away": change.away, "since": change.wall}
        if change.up:
            log.info("%s: back after %.1f s; panes resynchronised from tmux", change.host, change.away or 0.0)
        else:
            log.warning("%s", change.error)

    def _added(self, pane: TmuxPane) -> None:
        assert isinstance(pane, RemotePane) and isinstance(pane.tmux, RemoteWatcher)
        handle = RemoteHandle(self.hub, pane, pane.tmux.remote)
        self.handles[pane.board_id] = handle
        if self.on_change is not None:
            listener = self.on_change
            pane.subscribe(lambda change: listener(handle, change))
        self.hub.add(handle)

    def _removed(self, pane: TmuxPane) -> None:
        if isinstance(pane, RemotePane):
            handle = self.handles.pop(pane.board_id, None)
            if handle is not None:  # its card stays, exited, until the hub lets it expire
                handle.refresh()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await asyncio.gather(*(w.close() for w in self.watchers.values()), return_exceptions=True)
        self.watchers.clear()
