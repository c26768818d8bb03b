"""The `subscribe` operation: one unix-socket connection is told every card change, so a client never polls.

    subscribe  —  → {cards, hosts, notes} (as `list`); then notifications
                    "cards" {cards: [CARD, ...], gone: [ID, ...]}: the cards that changed and the ids removed
                    since the last one, each card as it is now (panewatch top, tui/)

Changes are gathered for FLUSH seconds and sent as one line: a pane that changed five times in that window is
sent once, as it is now, and a burst of a thousand panes is one line, not a thousand. A subscriber that does
not read (its connection's send buffer over MAX_BACKLOG bytes) is not sent more: its changed ids wait, a set
no larger than the hub, and go out when the buffer has drained. So a stuck client costs the daemon at most
one card per pane, never a growing queue.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from panewatch.board.model import Card
from panewatch.board.panes import Hub
from panewatch.board.rpc import Peer

FLUSH = 0.05  # seconds: changes gathered into one notification
MAX_BACKLOG = 4 * 1024 * 1024  # bytes waiting in the connection's send buffer before we hold back
RETRY = 0.2  # seconds between looks at a full send buffer


class CardFeed:
    """One connection's subscription to the hub's card changes."""

    def __init__(self, hub: Hub, peer: Peer) -> None:
        self.hub = hub
        self.peer = peer
        self._changed: set[str] = set()
        self._timer: asyncio.TimerHandle | None = None
        self.sent = 0  # notifications sent (tests, the bench)

    def start(self) -> Callable[[], None]:
        """Start listening; returns what stops it (the connection's cleanup)."""
        self.hub.listeners.add(self._on_card)
        return self.stop

    def stop(self) -> None:
        self.hub.listeners.discard(self._on_card)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_card(self, pane_id: str, card: Card | None) -> None:
        self._changed.add(pane_id)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH, self._flush)

    def _backlog(self) -> int:
        with contextlib.suppress(AttributeError, RuntimeError):
            return int(self.peer.writer.transport.get_write_buffer_size())
        return 0

    def _flush(self) -> None:
        self._timer = None
        if self.peer.closed:
            self.stop()
            return
        if self._backlog() > MAX_BACKLOG:
            self._timer = asyncio.get_running_loop().call_later(RETRY, self._flush)
            return
        changed, self._changed = self._changed, set()
        cards = [self.hub.panes[i].card for i in sorted(changed) if i in self.hub.panes]
        gone = sorted(i for i in changed if i not in self.hub.panes)
        if cards or gone:
            self.peer.notify("cards", cards=cards, gone=gone)
            self.sent += 1
