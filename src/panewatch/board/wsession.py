"""One browser tab's websocket: cards pushed as they change, answers and the live terminal view.

Server → browser, JSON text frames:
    {"op": "hello", "cooldown": S, "pid": N}
    {"op": "cards", "full": bool, "cards": [CARD...], "gone": [ID...], "t"?: sent at (unix time)}
                                                                         batched: one frame per burst
    {"op": "result", "rid": N, "ok": bool, "error"?, "message"?, "prompt"?, ...}
Server → browser, binary frames: 4-byte big-endian view generation, 1 byte (0 repaint, 1 output), bytes.
    A repaint of a newer generation starts the view afresh; frames of older generations are stale.

Browser → server, JSON text frames, each with an optional "rid" echoed in its result:
    {"op": "answer", "pane", "option", "fingerprint"}     the guard checks the fingerprint
    {"op": "send", "pane", "text"}                        refused (with the prompt) while blocked
    {"op": "view", "pane"} / {"op": "unview"}             open / close the terminal view
    {"op": "keys", "pane", "data"}                        typing in the view; refused while blocked
    {"op": "resize", "pane", "cols", "rows"}              headless panes, and `run` panes up to their terminal's size
    {"op": "dismiss", "pane"}                             remove an exited pane's card
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import struct
import time
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web

from panewatch.board import ops
from panewatch.board.model import Card, bad_request
from panewatch.board.rpc import RemoteError

log = logging.getLogger("panewatch.board")

MAX_OUTPUT_BACKLOG = 2 * 1024 * 1024  # bytes queued for a slow tab before its view is repainted instead
MAX_MESSAGE = 64 * 1024


class BoardSession:
    def __init__(self, board: ops.Board, request: web.Request) -> None:
        self.board = board
        self.request = request
        self.ws = web.WebSocketResponse(heartbeat=20.0, max_msg_size=MAX_MESSAGE)
        self._dirty: dict[str, Card | None] = {}
        self._wake = asyncio.Event()
        self._output: list[bytes] = []
        self._output_size = 0
        self._view_gen = 0
        self._view_pane: str | None = None
        self._unwatch: Callable[[], None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> web.WebSocketResponse:
        self.board.clients += 1  # counted from the handshake on: the cap (web.py) holds under a burst of them
        try:
            await self.ws.prepare(self.request)
        except BaseException:
            self.board.clients -= 1
            raise
        self.board.websockets.add(self.ws)  # the daemon closes it at once when it stops (a tab then reconnects)
        hub = self.board.hub
        hub.listeners.add(self._on_card)
        writer = asyncio.get_running_loop().create_task(self._writer())
        try:
            await self.ws.send_json({"op": "hello", "cooldown": self.board.notify_cooldown, "pid": self.board.pid})
            await self.ws.send_json({"op": "cards", "full": True, "cards": hub.cards(), "gone": []})
            async for msg in self.ws:
                if msg.type == WSMsgType.TEXT:
                    self._handle(msg.data)
                elif msg.type == WSMsgType.ERROR:
                    break
        finally:
            self.board.clients -= 1
            self.board.websockets.discard(self.ws)
            hub.listeners.discard(self._on_card)
            self._close_view()
            writer.cancel()
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await writer
        return self.ws

    # -- outgoing ------------------------------------------------------------------------------

    def _on_card(self, pane_id: str, card: Card | None) -> None:
        self._dirty[pane_id] = card  # only the latest card of each pane is sent: a slow tab never piles up
        self._wake.set()

    def _on_view_output(self, gen: int, data: bytes, repaint: bool) -> None:
        if gen != self._view_gen:
            return
        if self._output_size > MAX_OUTPUT_BACKLOG and not repaint:
            self._reopen_view()  # too far behind: a fresh repaint replaces the backlog
            return
        self._output.append(struct.pack(">IB", gen, 0 if repaint else 1) + data)
        self._output_size += len(data)
        self._wake.set()

    async def _writer(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._dirty:
                dirty, self._dirty = self._dirty, {}
                cards = [c for c in dirty.values() if c is not None]
                gone = [pane_id for pane_id, c in dirty.items() if c is None]
                await self.ws.send_json({"op": "cards", "full": False, "cards": cards, "gone": gone,
                                         "t": round(time.time(), 4)}, dumps=_dumps)
            while self._output:
                frames, self._output, self._output_size = self._output, [], 0
                for frame in frames:
                    await self.ws.send_bytes(frame)

    def _reply(self, rid: Any, **payload: Any) -> None:
        if rid is None or self.ws.closed:
            return
        task = asyncio.get_running_loop().create_task(self.ws.send_json({"op": "result", "rid": rid, **payload},
                                                                         dumps=_dumps))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- incoming ------------------------------------------------------------------------------

    def _handle(self, text: str) -> None:
        try:
            msg = json.loads(text)
        except ValueError:
            return
        if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
            return
        task = asyncio.get_running_loop().create_task(self._serve(msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, msg: dict[str, Any]) -> None:
        rid = msg.get("rid")
        try:
            result = await self._op(msg["op"], msg)
        except RemoteError as exc:
            self._reply(rid, **{**exc.data, "ok": False, "error": exc.kind, "message": str(exc)})
            return
        except Exception as exc:
            log.exception("board request failed")
            self._reply(rid, ok=False, error="internal", message=f"{type(exc).__name__}: {exc}")
            return
        self._reply(rid, ok=True, **(result or {}))

    async def _op(self, op: str, msg: dict[str, Any]) -> dict[str, Any] | None:
        return await ops.call(self.board, op, msg, web=True,
                              local={"view": self._view, "unview": self._unview, "keys": self._keys})

    # The tab's own operations: its terminal view, and typing into it.

    async def _view(self, msg: dict[str, Any]) -> dict[str, Any]:
        self._open_view(ops.pane(self.board, msg).id)
        return {"gen": self._view_gen}

    async def _unview(self, msg: dict[str, Any]) -> None:
        self._close_view()

    async def _keys(self, msg: dict[str, Any]) -> None:
        handle = ops.pane(self.board, msg)
        if self._view_pane != handle.id:
            raise bad_request("open the pane's terminal view before typing into it")
        await handle.keys(ops.text(msg, "data").encode("utf-8", "surrogatepass"), False)

    # -- the terminal view ---------------------------------------------------------------------

    def _open_view(self, pane_id: str) -> None:
        self._close_view()
        self._view_gen += 1
        gen = self._view_gen
        self._view_pane = pane_id
        handle = self.board.hub.get(pane_id)
        self._unwatch = handle.watch(lambda data, repaint: self._on_view_output(gen, data, repaint))

    def _reopen_view(self) -> None:
        if self._view_pane is not None:
            self._output, self._output_size = [], 0
            with contextlib.suppress(RemoteError):  # the browser switches to any newer generation's repaint
                self._open_view(self._view_pane)

    def _close_view(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        self._view_pane = None
        self._view_gen += 1  # frames of the old view still queued are dropped by their generation
        self._output, self._output_size = [], 0


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
