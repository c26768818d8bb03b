"""A symmetric JSON-lines RPC peer over one stream (the daemon's unix socket).

Three message shapes, one JSON object per line:

    request       {"id": 7, "op": "send", ...params}
    reply         {"re": 7, "ok": true, ...result}   or   {"re": 7, "ok": false, "error": KIND, "message": ...}
    notification  {"op": "card", ...}                 (no id, no reply)

Either side may send requests: the daemon asks a `run` pane to type, the pane tells the daemon its
state. Handlers run as tasks so a slow one (an answer waits for the prompt to clear) never holds
up the reader; replies may therefore arrive out of order, matched by id.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from panewatch.errors import PanewatchError

log = logging.getLogger("panewatch.board")

MAX_LINE = 8 * 1024 * 1024  # a full-screen repaint of a big pane is well under this
REQUEST_TIMEOUT = 10.0

Message = dict[str, Any]
RequestHandler = Callable[[str, Message], Awaitable[Message | None]]
NotifyHandler = Callable[[str, Message], None]


class RemoteError(PanewatchError):
    """The other side answered a request with an error: `kind` is its wire name, `data` the whole reply."""

    def __init__(self, kind: str, message: str, data: Message | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.data = data or {}


class ConnectionLost(RemoteError):
    wire_name = "connection_lost"

    def __init__(self, message: str = "connection to the panewatch daemon lost") -> None:
        super().__init__(self.wire_name, message)


class Peer:
    """One end of a connection. Call `run()` (or `start()`) to read; `close()` to end."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 on_request: RequestHandler | None = None, on_notify: NotifyHandler | None = None) -> None:
        self.reader, self.writer = reader, writer
        self.on_request = on_request
        self.on_notify = on_notify
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Message]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._runner: asyncio.Task[None] | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self) -> asyncio.Task[None]:
        self._runner = asyncio.get_running_loop().create_task(self.run())
        return self._runner

    async def run(self) -> None:
        """Read until the other side goes away, dispatching each line."""
        try:
            while True:
                line = await self.reader.readline()
                if not line:
                    break
                if not line.endswith(b"\n"):
                    break  # a cut line (peer died mid-write): nothing more will make sense
                self._dispatch(line)
        except (OSError, asyncio.IncompleteReadError, ValueError):  # ValueError: line over the limit
            pass
        finally:
            await self._shutdown()

    def _dispatch(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            log.debug("bad json line dropped")
            return
        if not isinstance(msg, dict):
            return
        if "re" in msg:
            future = self._pending.pop(msg["re"], None) if isinstance(msg["re"], int) else None
            if future is not None and not future.done():
                future.set_result(msg)
            return
        op = msg.get("op")
        if not isinstance(op, str):
            return
        if "id" in msg:
            task = asyncio.get_running_loop().create_task(self._answer(msg["id"], op, msg))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif self.on_notify is not None:
            try:
                self.on_notify(op, msg)
            except Exception:  # one bad message must not end the connection
                log.exception("notification %s failed", op)

    async def _answer(self, rid: Any, op: str, msg: Message) -> None:
        reply: Message
        try:
            if self.on_request is None:
                raise RemoteError("unknown_op", f"no such operation: {op}")
            result = await self.on_request(op, msg)
            reply = {"re": rid, "ok": True, **(result or {})}
        except RemoteError as exc:
            reply = {**exc.data, "re": rid, "ok": False, "error": exc.kind, "message": str(exc)}
        except Exception as exc:
            log.exception("request %s failed", op)
            reply = {"re": rid, "ok": False, "error": "internal", "message": f"{type(exc).__name__}: {exc}"}
        self.send(reply)

    def send(self, msg: Message) -> None:
        """Queue one message (a notification, or a reply). Silently dropped once closed."""
        if self._closed:
            return
        try:
            self.writer.write(json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        except (OSError, RuntimeError):
            self._closed = True

    def notify(self, op: str, **params: Any) -> None:
        self.send({"op": op, **params})

    async def request(self, op: str, timeout: float | None = REQUEST_TIMEOUT, **params: Any) -> Message:
        """Send a request and wait for its reply; RemoteError if it failed, ConnectionLost if we did."""
        if self._closed:
            raise ConnectionLost()
        rid = next(self._ids)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        self.send({"id": rid, "op": op, **params})
        try:
            reply = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise RemoteError("timeout", f"no reply to {op!r} within {timeout:.0f} s") from None
        finally:
            self._pending.pop(rid, None)
        if not reply.get("ok"):
            raise RemoteError(str(reply.get("error", "error")), str(reply.get("message", "")), reply)
        return reply

    async def drain(self) -> None:
        if not self._closed:
            with contextlib.suppress(OSError, RuntimeError):
                await self.writer.drain()

    async def _shutdown(self) -> None:
        self._closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost())
        self._pending.clear()
        for task in list(self._tasks):
            task.cancel()
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    async def close(self) -> None:
        self._closed = True
        self.writer.close()
        if self._runner is not None and self._runner is not asyncio.current_task():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._runner
        else:
            await self._shutdown()
