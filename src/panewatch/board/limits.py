"""What the board's web side may cost the daemon, whoever connects: caps and timeouts on connections.

Any local user can connect to the board's loopback port without a token. Unbounded, idle
connections ran the daemon out of file descriptors: `ls`, `new` and the board hung, and
asyncio's accept retry flooded the log. So:

* `ConnectionGate` admits at most `connections` web connections at once, `per_source` from one
  address; beyond that a connection gets a 503 and is closed at once (its descriptor comes
  straight back). `fit()` keeps the cap at a quarter of the descriptor limit at most, so panes and
  the unix control socket always have room however the web side is loaded.
* A connection with no request being handled (just opened, its request headers still coming, or
  idle between keep-alive requests) is closed after `idle_timeout`: slowloris and idle holders go.
  aiohttp's `keepalive_timeout` covers only the idle case before 3.14, hence the gate's own timer.
* Open board tabs (websockets) are capped at `websockets` (web.py refuses more with a 503).
* The log's own bounds (size, rate) are here too, so one setting names every limit (logs.py).

Tests and benchmarks set them with `PANEWATCH_BOARD_LIMITS="connections=8,idle_timeout=0.5"`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import resource
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("panewatch.board")

ENV = "PANEWATCH_BOARD_LIMITS"
_REFUSAL = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: 52\r\nRetry-After: 5\r\nConnection: close\r\n\r\n"
            b"panewatch board: too many connections, try again.\r\n")


@dataclass(frozen=True)
class Limits:
    connections: int = 256  # web connections held at once
    per_source: int = 64  # of those, from one address
    websockets: int = 32  # open board tabs
    idle_timeout: float = 15.0  # s: a connection with no request in progress is closed after this
    log_bytes: int = 1_000_000  # board.log rotates at this size, one old file kept: at most ~2 MB on disk
    log_burst: int = 10  # the same message at most this many times per log_interval, then one summary line
    log_interval: float = 60.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Limits:
        """The defaults, with `name=value` overrides from $PANEWATCH_BOARD_LIMITS (comma separated)."""
        limits = cls()
        spec = env.get(ENV, "").strip()
        if not spec:
            return limits
        fields = {f.name: f for f in dataclasses.fields(cls)}
        changes: dict[str, Any] = {}
        for item in spec.split(","):
            name, _, value = item.partition("=")
            name = name.strip()
            if name not in fields:
                raise ValueError(f"{ENV}: unknown limit {name!r} (known: {', '.join(fields)})")
            try:
                number = float(value) if fields[name].type == "float" else int(value)
            except ValueError:
                raise ValueError(f"{ENV}: {name} needs a number, not {value.strip()!r}") from None
            if number <= 0:
                raise ValueError(f"{ENV}: {name} must be positive")
            changes[name] = number
        return dataclasses.replace(limits, **changes)

    def fit(self, fd_limit: int | None = None) -> Limits:
        """These limits with the web side held to a quarter of the descriptor limit (ours, if not given)."""
        fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0] if fd_limit is None else fd_limit
        if fd_limit == resource.RLIM_INFINITY or fd_limit <= 0:
            return self
        connections = max(4, min(self.connections, fd_limit // 4))
        return dataclasses.replace(self, connections=connections, per_source=min(self.per_source, connections),
                                   websockets=min(self.websockets, connections))


class ConnectionGate:
    """Admits web connections within the limits and closes the ones with no request in progress too long."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.open = 0
        self.by_source: Counter[str] = Counter()
        self.stats: Counter[str] = Counter()  # accepted, refused, timed_out

    def factory(self, inner: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory for `loop.create_server` wrapping `inner` (aiohttp's) in the gate."""
        return lambda: _GatedConnection(self, inner)

    @contextlib.contextmanager
    def handling(self, transport: asyncio.BaseTransport | None) -> Iterator[None]:
        """Around a request's handler (web.py's middleware): its connection is busy, not idle, meanwhile."""
        conn = transport.get_protocol() if transport is not None else None
        if not isinstance(conn, _GatedConnection):
            yield
            return
        conn.begin()
        try:
            yield
        finally:
            conn.end()

    def admit(self, source: str) -> bool:
        if self.open >= self.limits.connections or self.by_source[source] >= self.limits.per_source:
            self.stats["refused"] += 1
            return False
        self.open += 1
        self.by_source[source] += 1
        self.stats["accepted"] += 1
        return True

    def release(self, source: str) -> None:
        self.open -= 1
        self.by_source[source] -= 1
        if not self.by_source[source]:
            del self.by_source[source]


class _GatedConnection(asyncio.Protocol):
    """One TCP connection: refused at once over a cap, else passed through to aiohttp's handler."""

    def __init__(self, gate: ConnectionGate, inner: Callable[[], asyncio.Protocol]) -> None:
        self._gate, self._make_inner = gate, inner
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None
        self._source = ""
        self._busy = 0
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        peer = transport.get_extra_info("peername")
        self._source = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        if not self._gate.admit(self._source):
            transport.write(_REFUSAL)  # fits any socket buffer: close() frees the descriptor right away
            transport.close()
            return
        self._transport = transport
        self._inner = self._make_inner()
        self._inner.connection_made(transport)
        self._arm()

    def begin(self) -> None:
        self._busy += 1
        self._disarm()

    def end(self) -> None:
        self._busy -= 1
        if not self._busy:
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        if self._transport is not None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self._gate.limits.idle_timeout, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        if self._transport is not None and not self._busy:
            self._gate.stats["timed_out"] += 1
            self._transport.abort()  # nothing of ours is in flight; a reader that stalls gets nothing more

    # -- passed through to aiohttp ---------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._inner is None:
            return
        self._transport = None
        self._gate.release(self._source)
        inner, self._inner = self._inner, None
        inner.connection_lost(exc)
