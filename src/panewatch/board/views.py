"""What a view shows, and who is looking at a pane: what only the daemon can tell, from tmux and the `run`s.

core/panekind.py decides that a pane IS a view (its foreground shows another pane: a tmux client, `panewatch
run` or `attach`, ssh to a watched host). Here the daemon names what it shows, so the card says "view of 5
(agents:0.0)" and nothing about the view is counted, notified, answered or put in stats twice:

    a tmux client in a pane (a nested `tmux attach`)  → the pane its session shows: `list-clients` on every
                                                        watched server says which client is which process
    the tmux pane hosting a `panewatch run`           → that run's card, which takes the pane's tmux target
                                                        and window (the run says where it runs: runner_pid,
                                                        host_tmux_pane): one agent, one card
    `panewatch attach ID`                             → card ID
    ssh to a watched [[remote]] host                  → that host (its panes are cards of their own)

`seen(card)` answers the notification path's question "is the user looking at this pane now?": a tmux client
that is not a control client, whose terminal has the focus, shows the pane — and is not itself inside a pane
nobody looks at (a nested client's terminal is another pane: that one must be seen too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

from panewatch.board.model import Card
from panewatch.board.panes import Hub, RemotePane
from panewatch.board.tmux import TmuxBoard, TmuxHandle
from panewatch.core.tmux_formats import CLIENT_FORMAT, ClientInfo, parse_client
from panewatch.errors import TmuxError
from panewatch.runtime.tmux import TmuxServer

log = logging.getLogger("panewatch.board")

RESOLVE_DELAY = 0.05  # card changes come in bursts: one pass for a burst
RESOLVE_EVERY = 5.0  # a nested client may switch sessions without any card changing: look again this often
NESTING = 4  # a client inside a pane inside a pane …: looked through this deep
Clients = dict[TmuxServer, list[ClientInfo]]


class Views:
    def __init__(self, hub: Hub, tmux: TmuxBoard) -> None:
        self.hub = hub
        self.tmux = tmux
        self._pending: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.passes = 0
        self._signatures: dict[str, tuple[object, ...]] = {}  # what each card last said that matters here

    def start(self) -> None:
        self.hub.listeners.add(self._on_card)
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def close(self) -> None:
        self.hub.listeners.discard(self._on_card)
        if self._pending is not None:
            self._pending.cancel()
        for task in (self._ticker, self._task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    # -- naming what views show ------------------------------------------------------------------

    def _on_card(self, pane_id: str, card: Card | None) -> None:
        # Only what can change what a view shows (a pane becoming a view or leaving, a run registering or
        # moving): a busy run's card changes every few hundred ms, and a pass may ask tmux for its clients.
        signature = None if card is None else (card.get("kind"), card.get("what"), card.get("origin"),
                                                card.get("runner_pid"), card.get("host_tmux_pane"))
        if self._signatures.get(pane_id) != signature:
            if signature is None:
                self._signatures.pop(pane_id, None)
            else:
                self._signatures[pane_id] = signature
            self.soon()

    def soon(self) -> None:
        if self._pending is None:
            self._pending = asyncio.get_running_loop().call_later(RESOLVE_DELAY, self._run)

    def _run(self) -> None:
        self._pending = None
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.resolve())
        else:
            self.soon()  # one pass at a time: the next one after it

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(RESOLVE_EVERY)
            if any(h.pane.kind.kind == "view" for h in self.tmux.handles.values()):
                self.soon()

    async def resolve(self) -> None:
        """Name what every view pane shows, and give each `run` its tmux host's place."""
        self.passes += 1
        handles = list(self.tmux.handles.values())
        tmux_clients = any(h.pane.kind.what == "tmux client" for h in handles)
        clients = await self.clients() if tmux_clients else {}
        runs = [h for h in self.hub.panes.values() if isinstance(h, RemotePane)]
        hosted: dict[str, TmuxHandle] = {}
        for handle in handles:
            kind = handle.pane.kind
            view_of, shows = None, kind.shows
            if kind.kind == "view":
                if kind.what == "tmux client":
                    shown = self._shown_by_client(handle, clients)
                    if shown is not None:
                        view_of, shows = shown.id, str(shown.card.get("target") or "")
                elif kind.what == "panewatch run":
                    run = next((r for r in runs if _hosts(handle, r.card)), None)
                    if run is not None:
                        view_of, shows = run.id, f"panewatch run {run.card.get('name') or ''}".strip()
                        hosted[run.id] = handle
                elif kind.what == "panewatch attach" and kind.shows in self.hub.panes:
                    view_of = kind.shows
            handle.set_view(view_of, shows)
        for run in runs:
            run.set_host(_place(hosted.get(run.id)))

    def host_of(self, card: Card) -> TmuxHandle | None:
        """The tmux pane hosting a `run`'s card, found now (the next pass links it; a notification cannot wait)."""
        if card.get("origin") != "run":
            return None
        return next((h for h in self.tmux.handles.values() if _hosts(h, card)), None)

    def _shown_by_client(self, handle: TmuxHandle, clients: Clients) -> TmuxHandle | None:
        fg = handle.pane.foreground
        pid = fg.pid if fg is not None else None
        for server, listed in clients.items():
            for client in listed:
                if client.pid == pid and not client.control:
                    return self.tmux.handles.get((server, client.pane_id))
        return None

    # -- who is looking ------------------------------------------------------------------------------

    async def clients(self) -> Clients:
        """Every watched tmux server's clients (`list-clients`), asked at once; a server that does not answer
        has none."""
        servers = [s for s, w in list(self.tmux.watchers.items()) if w.server_alive]
        listed = await asyncio.gather(*(_list_clients(s) for s in servers))
        return dict(zip(servers, listed, strict=True))

    def seen(self, card: Card, clients: Clients) -> bool:
        """Someone is looking at this card's pane now (see the module docstring)."""
        where = self.tmux_pane_of(card)
        return where is not None and self._seen(where[0], where[1], clients, 0)

    def tmux_pane_of(self, card: Card) -> tuple[TmuxServer, str] | None:
        """The local tmux pane showing a card: a tmux card's own, a `run`'s host pane."""
        pane_id = card.get("tmux_pane") if card.get("origin") in ("tmux", "run") else None
        for (server, tmux_pane), handle in self.tmux.handles.items():
            if tmux_pane == pane_id and (handle.id == card.get("id") or handle.view_of == card.get("id")):
                return server, tmux_pane
        host = self.host_of(card)
        return (host.server, host.pane.pane_id) if host is not None else None

    def _seen(self, server: TmuxServer, pane_id: str, clients: Clients, depth: int) -> bool:
        for client in clients.get(server, []):
            if client.control or client.pane_id != pane_id or not client.focused:
                continue
            host = next((h for h in self.tmux.handles.values() if h.pane.info.tty == client.tty), None)
            if host is None:  # a terminal of its own: a person looks through it
                return True
            if depth < NESTING and self._seen(host.server, host.pane.pane_id, clients, depth + 1):
                return True
        return False

    def tell(self, card: Card, clients: Clients, text: str) -> bool:
        """The terminal backend through tmux: `text` as a message on every client (control clients aside) of the
        server showing the card's pane, or of every watched server for a pane outside tmux. False: nobody."""
        where = self.tmux_pane_of(card)
        servers = [where[0]] if where is not None else list(clients)
        told = False
        for server in servers:
            for client in clients.get(server, []):
                if not client.control:
                    asyncio.get_running_loop().create_task(_message(server, client, text))
                    told = True
        return told


def _hosts(handle: TmuxHandle, card: Card) -> bool:
    """Whether tmux pane `handle` hosts the `run` whose card this is (its process in front, or its $TMUX_PANE on
    the same server)."""
    fg = handle.pane.foreground
    if fg is not None and card.get("runner_pid") is not None and fg.pid == card.get("runner_pid"):
        return True
    socket = card.get("host_tmux_socket")
    return (card.get("host_tmux_pane") == handle.pane.pane_id and isinstance(socket, str)
            and _same_file(socket, handle.server.socket_file()))


def _place(handle: TmuxHandle | None) -> dict[str, Any] | None:
    if handle is None:
        return None
    info = handle.pane.info
    return {"target": info.target, "tmux_pane": info.pane_id, "tmux_server": handle.server.label,
            "window": info.window_name, "host_card": handle.id}


def _same_file(a: str, b: os.PathLike[str] | str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


async def _list_clients(server: TmuxServer) -> list[ClientInfo]:
    try:
        lines = await server.run("list-clients", "-F", CLIENT_FORMAT, timeout=2.0)
    except (TmuxError, OSError):
        return []
    return [c for line in lines if (c := parse_client(line)) is not None]


async def _message(server: TmuxServer, client: ClientInfo, text: str) -> None:
    """A message in tmux's status line of one client, for a few seconds. `#` doubled: tmux expands formats in
    a message, and a prompt's text must stay text."""
    with contextlib.suppress(TmuxError, OSError):
        await server.run("display-message", "-c", client.name, "-d", "8000", text.replace("#", "##"), timeout=2.0)
