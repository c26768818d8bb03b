"""Benchmark: push latency, a blocked pane's notification → the request at a loopback receiver, through Apprise.

A loopback HTTP receiver (ThreadingHTTPServer, answering as ntfy does) and a Notifier with one Apprise URL
(runtime/push.py): each of `n` notifications is timed from `on_change` (what the daemon's notification path calls
when a card turns blocked) to the receiver reading the request, and the time `on_change` itself takes (it only
queues). `json://` by default; with `ntfy` the notifications are GAP s apart, since Apprise spaces its requests to
ntfy (and Pushover) 5.5 s apart: each is then timed as a single pane turning blocked (use a small `n`).
Run `panewatch bench push [-n N] [--scheme ntfy]`.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from panewatch.runtime.notify import Notifier
from panewatch.runtime.settings import NotifySettings

GAP = 5.6  # seconds between ntfy notifications (Apprise's NotifyNtfy.request_rate_per_sec is 5.5)


def run(n: int = 50, scheme: str = "json") -> dict[str, Any]:
    arrived: list[float] = []
    got = threading.Condition()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with got:
                arrived.append(time.perf_counter())
                got.notify_all()
            body = json.dumps({"id": "bench", "event": "message"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"{scheme}://127.0.0.1:{server.server_address[1]}/bench"
    notifier = Notifier(NotifySettings(backends=(), urls=(url,), cooldown=0), time.monotonic, environ={})
    latencies: list[float] = []
    calls: list[float] = []
    try:
        for target in notifier.pusher.targets:
            target.ready.wait(10)  # Apprise loaded (the daemon does this as it starts)
        for i in range(n):
            if i and scheme == "ntfy":
                time.sleep(GAP)
            start = time.perf_counter()
            notifier.on_change(f"bench:{i}", "claude", "working", "blocked", "Do you want to proceed? — 1. Yes · 2. No")
            calls.append(time.perf_counter() - start)
            with got:
                got.wait_for(lambda: len(arrived) > len(latencies), 10)
            if len(arrived) > i:
                latencies.append(arrived[i] - start)
    finally:
        notifier.close()
        server.shutdown()
        server.server_close()
    ms = sorted(x * 1000 for x in latencies)
    return {"n": n, "scheme": scheme, "delivered": len(latencies),
            "median_ms": round(statistics.median(ms), 2) if ms else None,
            "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2) if ms else None,
            "max_ms": round(ms[-1], 2) if ms else None,
            "call_median_ms": round(statistics.median(calls) * 1000, 3) if calls else None}


def main() -> None:
    result = run()
    print(f"push through Apprise ({result['scheme']}://) to a loopback receiver x{result['n']}: "
          f"median {result['median_ms']} ms, p95 {result['p95_ms']} ms, max {result['max_ms']} ms "
          f"(delivered {result['delivered']}); "
          f"on_change returns in {result['call_median_ms']} ms (median)")


if __name__ == "__main__":
    main()
