"""The HTTP side shared by the three mocks: a loopback server dispatching to the API modules (their
exchange with a client: exchange.py)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from panewatch.testing.mock import anthropic, chat, gemini, openai
from panewatch.testing.mock.exchange import ClientGone, Clock, Event, Exchange, Recorder
from panewatch.testing.mock.scenario import KINDS, Kind

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

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A CLI stopped at the end of a capture resets its idle keep-alive connection while the handler
        # waits for its next request: not an error of the mock (socketserver would print a traceback).
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


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
    return {"anthropic": anthropic.handle, "openai": openai.handle, "chat": chat.handle, "gemini": gemini.handle}[kind]
