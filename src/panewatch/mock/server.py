"""The HTTP side shared by the three mocks: a loopback server, SSE framing, event recording."""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from panewatch.mock.scenario import KINDS, Kind

Clock = Callable[[], float]
Event = dict[str, Any]


class ClientGone(Exception):
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


class Exchange:
    """One HTTP request and the means to answer it (plain JSON or an SSE stream)."""

    def __init__(self, handler: _Handler, mock: MockServer) -> None:
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


Handle = Callable[[Exchange], None]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _dispatch(self) -> None:
        mock = self.server.mock
        ex = Exchange(self, mock)
        try:
            if self.command in ("POST", "PUT", "PATCH"):
                ex.read_body()
            if mock.dump_bodies:
                mock.recorder.record("body", kind=mock.kind, method=ex.method, path=self.path, body=ex.body)
            mock.handle(ex)
            ex.end_sse()
        except ClientGone as exc:
            mock.recorder.record("client_gone", kind=mock.kind, path=ex.path, reason=str(exc))
            self.close_connection = True

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = do_PATCH = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.mock.verbose:
            super().log_message(format, *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    mock: MockServer


class MockServer:
    """A mock model API on 127.0.0.1, served from a background thread.

    >>> with MockServer("anthropic") as m:  # doctest: +SKIP
    ...     m.url, m.events
    """

    def __init__(self, kind: Kind, *, port: int = 0, host: str = "127.0.0.1", clock: Clock = time.time,
                 events_path: str | Path | None = None, default_scenario: str = "bash",
                 default_delay: float = 1.0, time_scale: float = 1.0, dump_bodies: bool = False,
                 verbose: bool = False) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown mock kind {kind!r}; expected one of {KINDS}")
        self.kind = kind
        self.recorder = Recorder(clock, events_path)
        self.default_scenario = default_scenario
        self.default_delay = default_delay
        self.time_scale = time_scale  # multiplies every delay and streaming time (tests use < 1)
        self.dump_bodies = dump_bodies  # record each request body as a "body" event (debugging)
        self.verbose = verbose
        self.stopping = threading.Event()
        self._host, self._port = host, port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._handle: Handle = _handler_for(kind)

    @property
    def url(self) -> str:
        """Base URL without a path, e.g. http://127.0.0.1:41234."""
        if self._server is None:
            raise RuntimeError("mock server not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("mock server not started")
        return int(self._server.server_address[1])

    @property
    def events(self) -> list[Event]:
        return self.recorder.events

    def handle(self, ex: Exchange) -> None:
        self._handle(ex)

    def start(self) -> MockServer:
        if self._server is not None:
            return self
        self.stopping.clear()
        server = _Server((self._host, self._port), _Handler)
        server.mock = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"mock-{self.kind}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self.stopping.set()  # wakes streams that are waiting out a delay
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _handler_for(kind: Kind) -> Handle:
    # Imported lazily: the protocol modules import this one.
    if kind == "anthropic":
        from panewatch.mock import anthropic
        return anthropic.handle
    if kind == "openai":
        from panewatch.mock import openai
        return openai.handle
    if kind == "chat":
        from panewatch.mock import chat
        return chat.handle
    from panewatch.mock import gemini
    return gemini.handle
