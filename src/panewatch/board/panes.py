"""The daemon's panes: headless ones it owns (LocalPane) and `run` panes elsewhere (RemotePane),
behind one async interface, and the Hub that keeps their cards and tells listeners what changed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from panewatch.board.endpoint import PaneEndpoint
from panewatch.board.ids import PaneIds, card_key
from panewatch.board.model import Card, no_such_pane, sort_key
from panewatch.board.rpc import REQUEST_TIMEOUT, Peer, RemoteError
from panewatch.runtime.live import LivePane

log = logging.getLogger("panewatch.board")

# Seconds the daemon waits for a `run` pane's send or answer: the guard's own bounds (its turn, the agent's paste
# window, the turn starting or the dialog leaving: runtime/guard.py) fit in it, the CLI's 30 s wait holds it.
INPUT_TIMEOUT = 20.0
EXITED_TTL = 600.0  # seconds the card of a pane that is gone stays on the board unless dismissed ([board] exited_ttl)

Viewer = Callable[[bytes, bool], None]  # (data, is_repaint)
Listener = Callable[[str, Card | None], None]  # (pane id, card or None when removed)


class PaneHandle(Protocol):
    id: str
    card: Card

    async def send(self, text: str, enter: bool) -> dict[str, Any]: ...
    async def answer(self, option: str, fingerprint: str) -> dict[str, Any]: ...
    async def keys(self, data: bytes, attached: bool) -> None: ...
    async def resize(self, cols: int, rows: int) -> None: ...
    async def report_wrong(self, expected: str | None) -> dict[str, Any]: ...
    def watch(self, viewer: Viewer) -> Callable[[], None]: ...
    async def close(self) -> None: ...


class Hub:
    """All panes by id, their latest cards, and listeners for every card change."""

    def __init__(self, ids: PaneIds | None = None, exited_ttl: float = EXITED_TTL) -> None:
        self.exited_ttl = exited_ttl  # 0: a gone pane's card stays until dismissed
        self.panes: dict[str, PaneHandle] = {}
        self.listeners: set[Listener] = set()
        self.ids = ids  # ids that outlive the daemon (board/ids.py); None: counted from 1 for this hub's life
        self._ids = itertools.count(1)
        self._expiry: dict[str, asyncio.TimerHandle] = {}
        self.last_activity = time.monotonic()

    def new_id(self, key: str | None = None) -> str:
        """A free id; with `key` (board/ids.py `card_key`), the one that pane had before, if it is free."""
        if self.ids is not None:
            return self.ids.id_for(key or card_key("once", next(self._ids), time.time()), lambda i: i in self.panes)
        while (pane_id := str(next(self._ids))) in self.panes:
            pass
        return pane_id

    def add(self, handle: PaneHandle) -> None:
        """Add a pane, or replace the handle of the pane with the same id."""
        self.panes[handle.id] = handle
        self.changed(handle.id)

    def changed(self, pane_id: str) -> None:
        handle = self.panes.get(pane_id)
        if handle is None:
            return
        self.last_activity = time.monotonic()
        # Only a pane that is gone expires: a tmux pane whose agent exited lives on (a shell), and its card with it.
        self._expire_later(pane_id, handle.card.get("state") == "exited" and getattr(handle, "ended", True))
        for listener in list(self.listeners):
            try:
                listener(pane_id, handle.card)
            except Exception:
                log.exception("card listener failed")

    def _expire_later(self, pane_id: str, exited: bool) -> None:
        timer = self._expiry.pop(pane_id, None)
        if timer is not None:
            timer.cancel()
        if exited and self.exited_ttl > 0:
            loop = asyncio.get_running_loop()
            self._expiry[pane_id] = loop.call_later(self.exited_ttl, lambda: loop.create_task(self.remove(pane_id)))

    async def remove(self, pane_id: str) -> None:
        handle = self.panes.pop(pane_id, None)
        timer = self._expiry.pop(pane_id, None)
        if timer is not None:
            timer.cancel()
        if handle is None:
            return
        with contextlib.suppress(Exception):
            await handle.close()
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):
                listener(pane_id, None)

    def get(self, ref: str) -> PaneHandle:
        """A pane by id, or by name when exactly one pane has it."""
        if ref in self.panes:
            return self.panes[ref]
        named = [h for h in self.panes.values() if h.card.get("name") == ref]
        if len(named) == 1:
            return named[0]
        if named:
            raise RemoteError("ambiguous", f"several panes are named {ref!r}: use an id "
                              f"({', '.join(h.id for h in named)})")
        raise no_such_pane(ref)

    def cards(self) -> list[Card]:
        return sorted((h.card for h in self.panes.values()), key=sort_key)

    async def close(self) -> None:
        for pane_id in list(self.panes):
            await self.remove(pane_id)


class EndpointInput:
    """A card's input, answers and reports, handed to its PaneEndpoint (the guarded writer's door):
    what every pane handle on this side of the socket has in common."""

    endpoint: PaneEndpoint

    async def send(self, text: str, enter: bool) -> dict[str, Any]:
        return await self.endpoint.send(text, enter)

    async def answer(self, option: str, fingerprint: str) -> dict[str, Any]:
        return await self.endpoint.answer(option, fingerprint)

    async def keys(self, data: bytes, attached: bool) -> None:
        await self.endpoint.keys(data, attached=attached)

    async def report_wrong(self, expected: str | None) -> dict[str, Any]:
        return await self.endpoint.report_wrong(expected)


class LocalPane(EndpointInput):
    """A headless pane the daemon owns: a LivePane on its loop and the endpoint around it."""

    def __init__(self, hub: Hub, pane: LivePane, *, name: str, cwd: str) -> None:
        self.id = pane.pane_id
        self.hub = hub
        self.pane = pane
        self.endpoint = PaneEndpoint(pane, name=name, cwd=cwd, origin="headless", on_card=self._on_card)
        self.card: Card = self.endpoint.card()

    def _on_card(self, card: Card) -> None:
        self.card = card
        self.hub.changed(self.id)


    @property
    def ended(self) -> bool:
        return self.pane.exited

    async def resize(self, cols: int, rows: int) -> None:
        self.endpoint.resize(cols, rows)


    def watch(self, viewer: Viewer) -> Callable[[], None]:
        repaint, unwatch = self.endpoint.watch(lambda data: viewer(data, False))
        viewer(repaint, True)
        return unwatch

    async def close(self) -> None:
        self.endpoint.close()
        await self.pane.close()


class RemotePane:
    """A `run` pane in another process, reached through its BoardLink connection."""

    def __init__(self, hub: Hub, pane_id: str, peer: Peer, card: Card, key: str = "") -> None:
        self.id = pane_id
        self.key = key
        self.hub = hub
        self.peer = peer
        self.host: dict[str, Any] | None = None  # the tmux pane hosting this run (board/views.py), its place
        self._raw = card
        self.card = self._own(card)
        self._viewers: dict[int, tuple[Viewer, list[bool]]] = {}  # vid -> (viewer, [ready])
        self._vids = itertools.count(1)

    def _own(self, card: Card) -> Card:
        # The daemon's id for it; the run's own pane id stays its name; inside tmux, its host pane's place.
        name = card.get("name") or card.get("id") or self.id
        if self.host and name == self.host.get("tmux_pane"):  # named by $TMUX_PANE: its tmux target says more
            name = self.host.get("target") or name
        return {**card, "id": self.id, "origin": "run", "name": name, "key": self.key or None, **(self.host or {})}

    def set_host(self, host: dict[str, Any] | None) -> None:
        """The tmux pane this `run` runs in (its target, window, tmux pane): one card for the agent, in its place."""
        if host != self.host:
            self.host = host
            self.card = self._own(self._raw)
            self.hub.changed(self.id)

    def on_notify(self, op: str, msg: dict[str, Any]) -> None:
        if op == "card" and isinstance(msg.get("card"), dict):
            self._raw = msg["card"]
            self.card = self._own(self._raw)
            self.hub.changed(self.id)
        elif op == "output":
            data = base64.b64decode(msg.get("data", ""))
            for viewer, ready in list(self._viewers.values()):
                if ready[0]:
                    viewer(data, False)
        elif op == "repaint":
            entry = self._viewers.get(msg.get("vid", -1))
            if entry is not None:
                entry[1][0] = True  # the stream from here on follows this repaint
                entry[0](base64.b64decode(msg.get("data", "")), True)

    def disconnected(self) -> None:
        if self.card.get("state") != "exited":
            self.card = {**self.card, "state": "exited", "source": "process", "rule": None, "prompt": None,
                         "detail": "its `panewatch run` went away", "since": time.time(), "interactive": False}
        self._viewers.clear()
        self.hub.changed(self.id)

    async def _call(self, op: str, timeout: float = REQUEST_TIMEOUT, **params: Any) -> dict[str, Any]:
        if self.peer.closed:
            raise RemoteError("exited", f"pane {self.id}'s `panewatch run` is gone")
        return await self.peer.request(op, timeout=timeout, **params)

    @property
    def ended(self) -> bool:
        return self.peer.closed or self.card.get("state") == "exited"

    def ring(self, title: str, body: str) -> bool:
        """The notification's terminal backend in the `run`'s own terminal (its link writes it there)."""
        if self.peer.closed:
            return False
        self.peer.notify("ring", title=title, body=body)
        return True

    async def send(self, text: str, enter: bool) -> dict[str, Any]:
        reply = await self._call("send", INPUT_TIMEOUT, text=text, enter=enter)
        return {k: v for k, v in reply.items() if k not in ("re", "ok")}

    async def answer(self, option: str, fingerprint: str) -> dict[str, Any]:
        reply = await self._call("answer", INPUT_TIMEOUT, option=option, fingerprint=fingerprint)
        return {k: v for k, v in reply.items() if k not in ("re", "ok")}

    async def keys(self, data: bytes, attached: bool) -> None:
        await self._call("keys", data=base64.b64encode(data).decode(), attached=attached)

    async def report_wrong(self, expected: str | None) -> dict[str, Any]:
        # The history is where the pane's screen is: in its `run` process, which writes the case.
        reply = await self._call("report_wrong", expected=expected)
        return {k: v for k, v in reply.items() if k not in ("re", "ok")}

    async def resize(self, cols: int, rows: int) -> None:
        await self._call("resize", cols=cols, rows=rows)  # the run process clamps it to its terminal

    def watch(self, viewer: Viewer) -> Callable[[], None]:
        vid = next(self._vids)
        self._viewers[vid] = (viewer, [False])
        self.peer.notify("watch", vid=vid)

        def unwatch() -> None:
            if self._viewers.pop(vid, None) is not None and not self._viewers:
                self.peer.notify("unwatch")

        return unwatch

    async def close(self) -> None:
        self._viewers.clear()
        await self.peer.close()
