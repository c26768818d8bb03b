"""BoardLink: a `panewatch run` pane shows up on the board, wherever it was started.

    link = BoardLink(pane, name=pane_id)   # after creating the LivePane, inside the running loop
    link.start()                           # never blocks, never raises, never prints
    ...
    await link.close()                     # after the pane ended: its last card says 'exited'

The pane never depends on the daemon: the link connects in the background (starting the daemon
on demand the first time), and if the daemon is absent or dies it retries quietly and registers
again when one is back. Cards flow to the daemon; the daemon's requests (send, answer, keys) are
served by a PaneEndpoint, i.e. through the input guard, in this process, next to the screen. A
resize from the board is clamped to `terminal_size()` (the pane never outgrows the user's terminal)
and lasts until that terminal is resized.

PANEWATCH_BOARD in the environment: unset or "auto" = register, starting the daemon if needed;
"connect" = register only with a daemon already running; "off" = no link at all.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any

from panewatch.board.client import DaemonNotRunning, connect
from panewatch.board.endpoint import PaneEndpoint
from panewatch.board.model import Card
from panewatch.board.rpc import Peer, RemoteError
from panewatch.runtime.live import LivePane

log = logging.getLogger("panewatch.board")
log.addHandler(logging.NullHandler())  # a raw terminal is on our stderr: never fall back to printing there

RETRY_MIN, RETRY_MAX = 0.5, 5.0
MAX_BACKLOG = 4 * 1024 * 1024  # unsent bytes to the daemon before we stop streaming output to it
ENV = "PANEWATCH_BOARD"


def where_run() -> dict[str, Any]:
    """This process and the tmux pane it runs in, if any (`$TMUX` = socket,pid,session; `$TMUX_PANE` = %ID)."""
    socket, pane = os.environ.get("TMUX", "").split(",")[0], os.environ.get("TMUX_PANE", "")
    inside = bool(socket) and pane.startswith("%")
    return {"runner_pid": os.getpid(), "host_tmux_pane": pane if inside else None,
            "host_tmux_socket": socket if inside else None}


def board_mode() -> str:
    mode = os.environ.get(ENV, "auto").strip().lower() or "auto"
    return mode if mode in ("auto", "connect", "off") else "auto"


class BoardLink:
    def __init__(self, pane: LivePane, *, name: str | None = None, cwd: str | None = None,
                 command: str | None = None, autostart: bool | None = None,
                 terminal_size: Callable[[], tuple[int, int]] | None = None) -> None:
        self.pane = pane
        # The size of the terminal showing the pane (`run`'s own): a board resize never makes the pane larger
        # than what the user's terminal can show. None: the board cannot resize this pane.
        self.terminal_size = terminal_size
        self.name, self.cwd, self.command = name, cwd, command
        mode = board_mode()
        self.enabled = mode != "off"
        self.autostart = (mode == "auto") if autostart is None else autostart
        self.endpoint: PaneEndpoint | None = None
        self.peer: Peer | None = None
        self.registrations = 0
        self.board_id: str | None = None  # this pane's id on the board, once registered (a notification's click)
        self.where = where_run()
        self.on_ring: Callable[[str, str], object] | None = None  # the run's terminal backend (cli/run.py)
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._unwatch: Any = None

    def start(self) -> None:
        if not self.enabled or self._task is not None:
            return
        self.endpoint = PaneEndpoint(self.pane, name=self.name or self.pane.pane_id, cwd=self.cwd or os.getcwd(),
                                     origin="run", command=self.command, on_card=self._on_card)
        self._task = asyncio.get_running_loop().create_task(self._run())

    @property
    def connected(self) -> bool:
        """Connected to a daemon (from the moment `register` is sent; see _serve)."""
        return self.peer is not None and not self.peer.closed

    async def close(self, linger: float = 0.5) -> None:
        """Stop; first give the daemon up to `linger` seconds to receive the last card."""
        self._closing = True
        if self.endpoint is not None:
            self.endpoint._publish()
        peer = self.peer
        if peer is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(peer.drain(), linger)
            await peer.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._stop_stream()
        if self.endpoint is not None:
            self.endpoint.close()

    async def _run(self) -> None:
        delay, autostart = RETRY_MIN, self.autostart
        while not self._closing:
            try:
                peer = await connect(autostart=autostart)
            except DaemonNotRunning:
                autostart = False  # start it once; after that, only come back when someone else did
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
                continue
            except Exception:
                log.debug("board link: connect failed", exc_info=True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
                continue
            autostart = False
            await self._serve(peer)
            delay = RETRY_MIN

    async def _serve(self, peer: Peer) -> None:
        assert self.endpoint is not None
        peer.on_request, peer.on_notify = self._on_request, self._on_notify
        runner = peer.start()
        # Ours before the daemon hears of us: once it lists this pane, `connected` already holds and
        # close() closes this connection, however late the reply to `register` comes. (Set after the
        # reply, a test could see the pane listed while the link said "not connected", and a close()
        # meanwhile left the connection open: the daemon never saw the run end.) Cards sent before
        # the daemon registered us are dropped there; the full card follows the reply.
        self.peer = peer
        try:
            reply = await peer.request("register", card=self._card(self.endpoint.card()))
        except RemoteError:
            log.debug("board link: register failed", exc_info=True)
            self.peer = None
            await peer.close()
            await asyncio.sleep(RETRY_MAX)
            return
        self.registrations += 1  # confirmed: counted on the daemon's reply
        self.board_id = str(reply["id"]) if isinstance(reply, dict) and "id" in reply else None
        self.endpoint._card = None
        self.endpoint._publish()  # anything that changed while registering
        with contextlib.suppress(asyncio.CancelledError):
            await runner
        self.peer = None
        self._stop_stream()

    def _card(self, card: Card) -> Card:
        """The card with where this `run` runs: its process and, inside tmux, the tmux pane hosting it (the daemon
        makes that pane's own card a view of this one: one agent, one card; board/views.py)."""
        return {**card, **self.where}

    def _on_card(self, card: Card) -> None:
        if self.peer is not None:
            self.peer.notify("card", card=self._card(card))

    # -- the daemon's requests ----------------------------------------------------------------

    async def _on_request(self, op: str, msg: dict[str, Any]) -> dict[str, Any] | None:
        endpoint = self.endpoint
        assert endpoint is not None
        if op == "send":
            return await endpoint.send(str(msg.get("text", "")), bool(msg.get("enter", True)))
        if op == "answer":
            return await endpoint.answer(str(msg.get("option", "")), str(msg.get("fingerprint", "")))
        if op == "keys":
            await endpoint.keys(base64.b64decode(str(msg.get("data", ""))), attached=bool(msg.get("attached")))
            return None
        if op == "resize":
            return self._resize(msg)
        if op == "report_wrong":
            expected = msg.get("expected")
            return await endpoint.report_wrong(expected if isinstance(expected, str) and expected else None)
        if op == "ping":
            return {"card": self._card(endpoint.card())}
        raise RemoteError("unknown_op", f"a run pane does not do {op!r}")

    def _resize(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The board asked (the user's click): the pane takes that size, at most the terminal's. The next
        resize of the user's terminal gives the pane the terminal's size again: the terminal has the last word."""
        if self.terminal_size is None or self.endpoint is None:
            raise RemoteError("not_resizable", "this pane takes its size from its own terminal")
        most_cols, most_rows = self.terminal_size()
        cols, rows = min(int(msg.get("cols", 0)), most_cols), min(int(msg.get("rows", 0)), most_rows)
        self.endpoint.resize(cols, rows)
        return {"cols": cols, "rows": rows}

    def _on_notify(self, op: str, msg: dict[str, Any]) -> None:
        if op == "watch":
            self._watch(msg.get("vid"))
        elif op == "unwatch":
            self._stop_stream()
        elif op == "ring" and self.on_ring is not None:  # the daemon's notification, for our own terminal
            try:
                self.on_ring(str(msg.get("title", "")), str(msg.get("body", "")))
            except Exception:
                log.debug("board link: ring failed", exc_info=True)

    def _watch(self, vid: Any) -> None:
        peer, endpoint = self.peer, self.endpoint
        if peer is None or endpoint is None:
            return
        if self._unwatch is None:
            _, self._unwatch = endpoint.watch(self._forward)
        # Sent in the same loop step as the subscription: the stream that follows matches it exactly.
        peer.notify("repaint", vid=vid, data=base64.b64encode(endpoint.repaint()).decode())

    def _forward(self, data: bytes) -> None:
        peer = self.peer
        if peer is None:
            return
        transport = peer.writer.transport
        if transport is not None and transport.get_write_buffer_size() > MAX_BACKLOG:
            self._stop_stream()  # the daemon is not reading: stop before we hoard memory
            return
        peer.notify("output", data=base64.b64encode(data).decode())

    def _stop_stream(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
