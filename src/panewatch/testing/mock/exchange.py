"""One HTTP request to a mock and the means to answer it: what the API modules (anthropic, openai,
gemini) need, kept apart from the server that dispatches to them (so neither imports the other back).
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from panewatch.errors import PanewatchError

Clock = Callable[[], float]
Event = dict[str, Any]


class ClientGone(PanewatchError):
    """The agent closed the connection (cancelled turn, exit): stop streaming quietly."""


class Recorder:
    """Thread-safe event list, optionally mirrored to a JSONL file, on an injectable clock."""

    def __init__(self, clock: Clock = time.time, path: str | Path | None = None) -> None:
        self.clock = clock
        self.path = Path(path) if path is not None else None
        self._events: list[Event] = []
        self._lock = threading.Lock()

    def record(self, event: str, **fields: Any) -> Event:
        entry: Event = {"t": self.clock(), "event": event, **fields}
        with self._lock:
            self._events.append(entry)
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return entry

    @property
    def events(self) -> list[Event]:
        with self._lock:
            return list(self._events)


class Host(Protocol):
    """What an exchange needs of its server (MockServer)."""

    kind: str
    time_scale: float
    stopping: threading.Event
    recorder: Recorder
    default_scenario: str
    default_delay: float


class Exchange:
    """One HTTP request and the means to answer it (plain JSON or an SSE stream)."""

    def __init__(self, handler: BaseHTTPRequestHandler, mock: Host) -> None:
        self._h = handler
        self.mock = mock
        self.method = handler.command
        parts = urlsplit(handler.path)
        self.path = parts.path
        self.query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self.headers = handler.headers
        self.body: Any = None
        self.raw = b""
        self._streaming = False
        self._on_sent: Callable[[], object] | None = None

    def when_sent(self, fn: Callable[[], object]) -> None:
        """Run `fn` once the reply is complete but before its last bytes leave, so a client that has
        read the whole reply always finds the event already recorded."""
        self._on_sent = fn

    def _sent(self) -> None:
        fn, self._on_sent = self._on_sent, None
        if fn is not None:
            fn()

    def read_body(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self._h.rfile.read(length) if length > 0 else b""
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc == "gzip":
            raw = gzip.decompress(raw)
        elif enc == "deflate":
            raw = zlib.decompress(raw)
        self.raw = raw
        try:
            self.body = json.loads(raw) if raw else None
        except ValueError:
            self.body = None

    def send_json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self._h.send_response(status)
        self._h.send_header("Content-Type", "application/json")
        self._h.send_header("Content-Length", str(len(data)))
        self._h.end_headers()
        self._sent()
        if self.method != "HEAD":
            self._write(data)

    def answer_probe(self) -> bool:
        """Answer a HEAD probe or a non-POST side call harmlessly; True if it was one (handled)."""
        if self.method == "HEAD":  # Claude Code probes the base URL with HEAD /
            self.send_empty()
            return True
        if self.method != "POST":
            self.send_json({})
            return True
        return False

    def send_empty(self, status: int = 200) -> None:
        self._h.send_response(status)
        self._h.send_header("Content-Length", "0")
        self._h.end_headers()

    def start_sse(self) -> None:
        # Chunked framing keeps the HTTP/1.1 connection reusable once the stream ends.
        self._h.send_response(200)
        self._h.send_header("Content-Type", "text/event-stream")
        self._h.send_header("Cache-Control", "no-cache")
        self._h.send_header("Transfer-Encoding", "chunked")
        self._h.end_headers()
        self._streaming = True
        self._flush()

    def sse(self, data: Any, event: str | None = None) -> None:
        """One SSE message; `data` is JSON-encoded unless already a string."""
        payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        head = f"event: {event}\n" if event else ""
        self.chunk(f"{head}data: {payload}\n\n".encode())

    def chunk(self, data: bytes) -> None:
        self._write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_sse(self) -> None:
        if self._streaming:
            self._sent()
            self._write(b"0\r\n\r\n")
            self._streaming = False

    def wait(self, seconds: float, keepalive: Callable[[], None] | None = None,
             interval: float = 0.5) -> None:
        """Sleep `seconds` (scaled), calling `keepalive` every `interval`; raise ClientGone on stop."""
        end = time.monotonic() + seconds * self.mock.time_scale
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            if self.mock.stopping.wait(min(left, interval)):
                raise ClientGone("server stopping")
            if keepalive is not None and end - time.monotonic() > 0:
                keepalive()

    def record(self, event: str, **fields: Any) -> Event:
        return self.mock.recorder.record(event, kind=self.mock.kind, path=self.path, **fields)

    def _write(self, data: bytes) -> None:
        try:
            self._h.wfile.write(data)
            self._flush()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ClientGone(str(exc)) from exc

    def _flush(self) -> None:
        try:
            self._h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ClientGone(str(exc)) from exc
