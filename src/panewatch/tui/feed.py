"""`panewatch top`'s side of the daemon's unix socket: never a poll loop.

    Feed.start()   connect (starting the daemon if none runs, as `board` does), `subscribe`: every card now, then
                   every change as the daemon gathers them (board/subscribe.py) → `on_cards(cards, gone)`
    Feed.request() any operation (answer, report_wrong, attach_command …) on the same connection
    Preview        the selected pane's screen: the `attach` stream (a repaint, then its output, as the board's
                   terminal view gets it) on a connection of its own, fed to an emulated screen
                   (core/screen.py), so a switch of pane is a new connection and no byte of the last pane's
                   stream can reach the new one's screen. Nothing is ever typed on it.

A daemon that goes away is said (`on_lost`) and looked for again every RECONNECT seconds, without starting one:
a user who stopped it meant it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Callable
from typing import Any

from panewatch.board import client
from panewatch.board.model import Card
from panewatch.board.rpc import Peer, RemoteError
from panewatch.core.screen import Screen, Snapshot

RECONNECT = 1.0  # seconds between looks for a daemon that went away
OnCards = Callable[[list[Card], list[str]], None]


class Feed:
    def __init__(self, on_cards: OnCards, on_lost: Callable[[str], None],
                 on_back: Callable[[dict[str, Any]], None]) -> None:
        self.on_cards, self.on_lost, self.on_back = on_cards, on_lost, on_back
        self.peer: Peer | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    async def start(self, autostart: bool = True) -> dict[str, Any]:
        """Subscribe; the daemon's first answer: {cards, hosts, notes}."""
        peer = await client.connect(autostart=autostart)
        peer.on_notify = self._on_notify
        runner = peer.start()
        try:
            first = await peer.request("subscribe")
        except BaseException:
            await peer.close()
            raise
        self.peer = peer
        runner.add_done_callback(self._lost)
        return first

    def _on_notify(self, op: str, msg: dict[str, Any]) -> None:
        if op == "cards":
            cards = [c for c in msg.get("cards") or [] if isinstance(c, dict) and "id" in c]
            gone = [str(i) for i in msg.get("gone") or []]
            self.on_cards(cards, gone)

    def _lost(self, _task: object) -> None:
        if self._closing:
            return
        self.peer = None
        self.on_lost("the panewatch daemon went away; looking for it again")
        self._task = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        while not self._closing:
            await asyncio.sleep(RECONNECT)
            with contextlib.suppress(RemoteError, OSError):
                first = await self.start(autostart=False)
                self.on_back(first)
                return

    async def request(self, op: str, timeout: float | None = 30.0, **params: Any) -> dict[str, Any]:
        if self.peer is None:
            raise RemoteError("no_daemon", "the panewatch daemon is not running")
        return await self.peer.request(op, timeout=timeout, **params)

    async def close(self) -> None:
        self._closing = True
        if self._task is not None:
            self._task.cancel()
        if self.peer is not None:
            await self.peer.close()


class Preview:
    """One pane's screen, kept current from its `attach` stream; `on_change` after each chunk."""

    def __init__(self, pane_id: str, on_change: Callable[[], None]) -> None:
        self.pane_id = pane_id
        self.on_change = on_change
        self.screen: Screen | None = None
        self.error = ""
        self._peer: Peer | None = None
        self._closed = False

    async def start(self, cols: int, rows: int) -> None:
        self.screen = Screen(cols or 80, rows or 24)
        try:
            peer = await client.connect()
            peer.on_notify = self._on_notify
            peer.start()
            self._peer = peer
            if self._closed:
                await peer.close()
                return
            await peer.request("attach", pane=self.pane_id)
        except RemoteError as exc:
            self.error = str(exc)
            self.on_change()

    def _on_notify(self, op: str, msg: dict[str, Any]) -> None:
        if op != "screen" or self.screen is None or self._closed:
            return
        data = base64.b64decode(str(msg.get("data", "")))
        if msg.get("repaint"):
            self.screen.feed(b"\x1b[H\x1b[2J")
        self.screen.feed(data)
        self.on_change()

    def snapshot(self) -> Snapshot | None:
        return None if self.screen is None else self.screen.snapshot()

    async def close(self) -> None:
        self._closed = True
        if self._peer is not None:
            self._peer.notify("detach")
            await self._peer.close()
        if self.screen is not None:
            self.screen.close()
