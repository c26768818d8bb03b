"""A real HTTP receiver on loopback for push notifications: what an ntfy server or a JSON webhook gets from
Apprise (`ntfy://127.0.0.1:PORT/topic` publishes JSON to `/`, `json://127.0.0.1:PORT/path` posts Apprise's JSON).
`hold=True`: every request is held until `release()` (a service that hangs)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, *, hold: bool = False) -> None:
        self.got: list[dict[str, Any]] = []
        self.arrived: list[float] = []  # time.monotonic() of each request's arrival
        self.waiting = 0  # requests held
        self._release = threading.Event()
        if not hold:
            self._release.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.arrived.append(time.monotonic())
                try:
                    doc = json.loads(body)
                except ValueError:
                    doc = {"raw": body.decode("utf-8", "replace")}
                receiver.got.append({"path": self.path, "headers": dict(self.headers), "body": doc})
                receiver.waiting += 1
                receiver._release.wait(30)
                receiver.waiting -= 1
                out = json.dumps({"id": "x", "event": "message"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._release.set()

    def close(self) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_until(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.01)
