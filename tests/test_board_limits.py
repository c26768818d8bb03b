"""The board's web side cannot cost the daemon its descriptors, its control socket or its disk.

Anyone on the machine can connect to the board's loopback port without a token. Real daemons
(`panewatch serve` subprocesses, or in-process on loopback) and real sockets; the limits are made
small through $PANEWATCH_BOARD_LIMITS or `Daemon(limits=...)`. Nothing asserts a duration: what
should close is polled until it does, with a generous timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import logging
import os
import select
import socket
import stat
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp.http_exceptions import BadStatusLine

from boardutil import cli, start_serve, wait_for
from panewatch.board.daemon import Daemon
from panewatch.board.limits import ENV, ConnectionGate, Limits
from panewatch.board.logs import MAX_RECORD, BoundedHandler, PrivateRotatingFile

POLL = 20.0  # generous: a shared machine under the full suite


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), 90))


def port_of(base: str) -> int:
    return int(base.rstrip("/").rsplit(":", 1)[1])


def sign_in(link: str) -> str:
    """The Cookie header a browser holds after opening a one-time link."""
    port = port_of(link.split("?", 1)[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/?" + link.split("?", 1)[1], headers={"Host": f"127.0.0.1:{port}"})
        response = conn.getresponse()
        response.read()
        cookie = response.getheader("Set-Cookie")
        assert response.status == 200 and cookie, (response.status, cookie)
        return cookie.split(";", 1)[0]
    finally:
        conn.close()


def readable(sock: socket.socket) -> bool:
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def closed_by_peer(sock: socket.socket) -> bool:
    """True once the daemon has closed `sock` (EOF or reset); reads and drops anything before that."""
    while readable(sock):
        try:
            if not sock.recv(65536):
                return True
        except ConnectionError:
            return True
    return False


def refused(sock: socket.socket) -> bool:
    """True if the daemon answered `sock` with its 503 (reads what is there without waiting)."""
    with contextlib.suppress(OSError):
        return readable(sock) and sock.recv(65536).startswith(b"HTTP/1.1 503 ")
    return False


def fd_targets(pid: int) -> list[str]:
    targets = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return targets


def open_idle(port: int, count: int, timeout: float = 10.0) -> list[socket.socket]:
    """`count` connections to `port` opened at once; the ones that completed within `timeout`."""
    pending = []
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        pending.append(sock)
    done: list[socket.socket] = []
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        poller = select.poll()  # not select(): descriptor numbers may pass 1024
        for sock in pending:
            poller.register(sock, select.POLLOUT)
        ready = {fd for fd, _ in poller.poll(100)}
        for sock in [s for s in pending if s.fileno() in ready]:
            pending.remove(sock)
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                done.append(sock)
            else:
                sock.close()
    for sock in pending:  # an unfixed daemon stops accepting: its backlog fills, connects never complete
        sock.close()
    return done


@contextlib.contextmanager
def sockets() -> Iterator[list[socket.socket]]:
    held: list[socket.socket] = []
    try:
        yield held
    finally:
        for sock in held:
            sock.close()


def test_idle_and_slow_header_connections_are_closed_busy_ones_are_not() -> None:
    server = start_serve(env={ENV: "idle_timeout=0.5"})
    try:
        port = server.port
        cookie = sign_in(server.url)

        async def body() -> None:
            async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session, \
                    session.ws_connect(f"ws://127.0.0.1:{port}/ws",
                                       headers={"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}) as ws:
                assert (await ws.receive_json(timeout=10))["op"] == "hello"
                assert (await ws.receive_json(timeout=10))["op"] == "cards"
                with sockets() as held:
                    silent = socket.create_connection(("127.0.0.1", port))  # never sends a byte
                    slow = socket.create_connection(("127.0.0.1", port))  # slowloris: headers that never end
                    kept = socket.create_connection(("127.0.0.1", port))  # one request, then idle keep-alive
                    held += [silent, slow, kept]
                    slow.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
                    kept.sendall(f"GET /api/cards HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
                    loop = asyncio.get_running_loop()
                    deadline = loop.time() + POLL
                    trickled = 0
                    while not all(closed_by_peer(s) for s in held):
                        assert loop.time() < deadline, "an idle or slow-header connection was never closed"
                        with contextlib.suppress(OSError):
                            slow.sendall(f"X-{trickled}: y\r\n".encode())  # bytes keep coming, a request never
                        trickled += 1
                        await asyncio.sleep(0.05)
                # The websocket was open through all of it: a request in progress is never idle.
                await ws.send_json({"op": "unview", "rid": 1})
                assert (await ws.receive_json(timeout=10)) == {"op": "result", "rid": 1, "ok": True}

        run(body)
    finally:
        server.stop()


def test_a_saturated_web_side_leaves_the_control_socket_and_panes_served() -> None:
    # 256 descriptors, hard limit too: the web side gets a quarter, 400 connections are far beyond it.
    server = start_serve(nofile=256)
    try:
        port, pid = server.port, server.proc.pid
        cookie = sign_in(server.url)
        before = len(fd_targets(pid))
        with sockets() as held:
            held += open_idle(port, 400)
            listed = cli("ls", "--json", timeout=30)  # the unix socket still answers
            assert listed.returncode == 0 and json.loads(listed.stdout)["panes"] == [], listed.stderr
            made = cli("new", "--name", "room", "--", "sleep", "60", timeout=30)  # a pty still fits
            assert made.returncode == 0, made.stderr
            assert cli("kill", made.stdout.strip(), timeout=30).returncode == 0
            # A fresh signed-in request is served or refused at once (503 / closed), never left hanging.
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                conn.request("GET", "/api/cards", headers={"Host": f"127.0.0.1:{port}", "Cookie": cookie})
                assert conn.getresponse().status in (200, 503)
            except (ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError):
                pass
            finally:
                conn.close()
            wait_for(lambda: any(refused(s) for s in held), "a connection beyond the cap refused", POLL)
            # The cap, not the descriptor limit, is what the web side got (a little room for the pane's ending).
            assert len(fd_targets(pid)) <= before + 64 + 16
    finally:
        server.stop()


def test_the_log_stays_bounded_and_never_shows_a_token_under_a_flood(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "log_bytes=20000")
    link = cli("board", "--no-open", check=True).stdout.strip()  # starts the daemon on demand, as users do
    try:
        info = json.loads(cli("board", "--json", check=True).stdout)
        port, pid = int(info["port"]), int(info["pid"])
        token = link.split("token=", 1)[1]
        cookie = sign_in(cli("board", "--no-open", check=True).stdout.strip())
        host = f"Host: 127.0.0.1:{port}\r\n"
        floods = [  # malformed requests aiohttp logs with their request line or header
            [f"GET /?token={token} HTTP/9.9x\r\n\r\n"],
            [f"GET /?token={token} HTTP/1.1\r\n{host}bad header\r\n\r\n"],
            [f"GET /?token={token[:9]}", f"{token[9:]} HTTP/1.1 junk\r\n\r\n"],  # cut mid-token
            ["GET /?to", f"ken={token} HTTP/1.1 junk\r\n\r\n"],
            [f"GET / HTTP/1.1\r\n{host}Cookie: {cookie}\r\n\x01bad\r\n\r\n"],
        ]
        for i in range(3000):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                for part in floods[i % len(floods)]:
                    sock.sendall(part.encode())
                with contextlib.suppress(ConnectionError):
                    while sock.recv(65536):  # the 400 is written after its log record
                        pass
        assert cli("ls", timeout=30).returncode == 0
        # Nothing can grow a file that never rotates: stderr is /dev/null, no deleted file is held open.
        runtime = Path(os.environ["PANEWATCH_RUNTIME_DIR"])
        targets = fd_targets(pid)
        assert os.readlink(f"/proc/{pid}/fd/2") == os.devnull
        assert not [t for t in targets if t.endswith("(deleted)")]
        assert targets.count(str(runtime / "board.log")) == 1
    finally:
        cli("serve", "--stop", timeout=30)  # at exit, what was suppressed gets its line
    logs = sorted(runtime.glob("board.log*"))
    text = "".join(p.read_text(errors="replace") for p in logs)
    assert sum(p.stat().st_size for p in logs) <= 2 * 20000 + MAX_RECORD, [p.stat().st_size for p in logs]
    assert "suppressed" in text and "Error handling request" in text
    for secret in (token, cookie.split("=", 1)[1]):  # not whole, and not in pieces either
        body = secret[4:]
        assert not any(body[i:i + 8] in text for i in range(len(body) - 7)), "a secret reached the log"


def test_the_log_file_rotates_and_stays_private(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "board.log"
    path.parent.mkdir()
    handler = BoundedHandler(PrivateRotatingFile(path, maxBytes=2000, backupCount=1), burst=10, interval=60)
    logger = logging.getLogger("panewatch.test.rotate")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        for i in range(200):  # different messages: no rate limit holds them, the size bound does
            logger.error(f"message number {i} " + "x" * 100)
    finally:
        logger.removeHandler(handler)
        handler.close()
    files = sorted(path.parent.iterdir())
    assert [p.name for p in files] == ["board.log", "board.log.1"]
    assert all(p.stat().st_size <= 2000 + 200 for p in files)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)


def test_connection_caps_per_source_and_in_total_and_for_tabs() -> None:
    async def body() -> None:
        daemon = Daemon(limits=Limits(connections=6, per_source=3, websockets=2))
        await daemon.start()
        open_: list[asyncio.StreamWriter] = []

        async def connect(source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            reader, writer = await asyncio.open_connection("127.0.0.1", daemon.port, local_addr=(source, 0))
            open_.append(writer)
            return reader, writer

        async def status(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
            writer.write(f"GET /api/cards HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n\r\n".encode())
            line = await asyncio.wait_for(reader.readline(), 10)
            return int(line.split()[1]) if line else 0

        try:
            admitted = [await connect("127.0.0.1") for _ in range(3)]
            assert await status(*await connect("127.0.0.1")) == 503  # the fourth from one address
            admitted += [await connect("127.0.0.2") for _ in range(3)]
            assert await status(*await connect("127.0.0.3")) == 503  # the seventh in all
            assert [await status(*c) for c in admitted] == [401] * 6  # the admitted ones are served
            admitted[0][1].close()
            deadline = asyncio.get_running_loop().time() + POLL
            while await status(*await connect("127.0.0.1")) != 401:  # its slot comes back
                assert asyncio.get_running_loop().time() < deadline, "a closed connection kept its slot"
            for writer in open_:
                writer.close()
            assert daemon.gate.stats["refused"] >= 2
            while daemon.gate.open:  # every slot comes back
                assert asyncio.get_running_loop().time() < deadline, "closed connections kept their slots"
                await asyncio.sleep(0.02)

            link = daemon.login()["url"]
            async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:  # an IP host
                async with session.get(link) as resp:
                    assert resp.status == 200
                ws_url, origin = daemon.base_url.replace("http", "ws") + "ws", {"Origin": daemon.base_url[:-1]}
                tabs = [await session.ws_connect(ws_url, headers=origin) for _ in range(2)]
                with pytest.raises(aiohttp.WSServerHandshakeError) as info:
                    await session.ws_connect(ws_url, headers=origin)
                assert info.value.status == 503 and daemon.stats["refused_websocket"] == 1
                await tabs[0].close()
                deadline = asyncio.get_running_loop().time() + POLL
                while daemon.clients > 1:
                    assert asyncio.get_running_loop().time() < deadline
                    await asyncio.sleep(0.02)
                async with session.ws_connect(ws_url, headers=origin) as again:
                    assert (await again.receive_json(timeout=10))["op"] == "hello"
                await tabs[1].close()
        finally:
            for writer in open_:
                writer.close()
            await daemon.close()

    run(body)


def test_the_gate_closes_what_has_no_request_in_progress_whatever_server_is_behind_it() -> None:
    """The gate's own timer, apart from aiohttp's keepalive_timeout (which before 3.14 spares silent connections)."""

    async def body() -> None:
        loop = asyncio.get_running_loop()
        gate = ConnectionGate(Limits(idle_timeout=0.2))
        transports: list[asyncio.BaseTransport] = []

        class Silent(asyncio.Protocol):  # a server that never closes anything itself
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                transports.append(transport)

        server = await loop.create_server(gate.factory(Silent), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        async def gone(reader: asyncio.StreamReader) -> None:
            with contextlib.suppress(ConnectionError):
                assert await asyncio.wait_for(reader.read(), POLL) == b""

        try:
            busy_reader, busy_writer = await asyncio.open_connection("127.0.0.1", port)
            while not transports:
                await asyncio.sleep(0.01)
            with gate.handling(transports[0]):  # armed first, so it would expire first if this did nothing
                idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", port)
                await gone(idle_reader)
                assert not transports[0].is_closing()
            await gone(busy_reader)  # idle from now on
            assert gate.stats["timed_out"] == 2 and gate.open == 0
            busy_writer.close()
            idle_writer.close()
        finally:
            server.close()

    run(body)


def test_limits_from_env_and_fitted_to_the_descriptor_limit() -> None:
    assert Limits.from_env({}) == Limits()
    limits = Limits.from_env({ENV: "connections=10, idle_timeout=0.25,log_bytes=5000"})
    assert (limits.connections, limits.idle_timeout, limits.log_bytes) == (10, 0.25, 5000)
    for bad in ("nope=1", "connections=many", "idle_timeout=0"):
        with pytest.raises(ValueError, match=ENV):
            Limits.from_env({ENV: bad})
    fitted = Limits().fit(256)
    assert (fitted.connections, fitted.per_source, fitted.websockets) == (64, 64, 32)
    assert Limits().fit(1_000_000) == Limits()


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def test_log_rate_limit_summary_and_redaction() -> None:
    now = [0.0]
    target = _Collect()
    handler = BoundedHandler(target, burst=3, interval=60, fmt="%(name)s %(message)s", clock=lambda: now[0])
    logger = logging.getLogger("panewatch.test.flood")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        for i in range(1000):
            logger.error("accept failed on fd %d", i)
        logger.error("something else")
        name = "panewatch.test.flood"
        assert target.lines == [f"{name} accept failed on fd 0", f"{name} accept failed on fd 1",
                                f"{name} accept failed on fd 2", f"{name} something else"]
        now[0] = 61.0
        logger.error("accept failed on fd %d", 1000)
        assert target.lines[4] == ("panewatch.test.flood suppressed 997 similar messages (at most 3 per 60 s): "
                                   "accept failed on fd %d")
        assert target.lines[5] == "panewatch.test.flood accept failed on fd 1000"

        logger.warning("GET /?token=pwb_SECRETSECRET HTTP/1.1 from %s", "127.0.0.1")
        try:
            raise BadStatusLine(error="Bad status line:\n  b'GET /?tok_cut_SECRETSECRET HTTP/9'")
        except BadStatusLine:
            logger.exception("Error handling request from %s", "127.0.0.1")
        logger.error("x" * (2 * MAX_RECORD))
        assert "SECRETSECRET" not in "\n".join(target.lines)
        assert target.lines[6].endswith("GET /?token=<redacted> HTTP/1.1 from 127.0.0.1")
        assert target.lines[7].endswith("BadStatusLine: 400 (a malformed request; its bytes are not logged)")
        assert len(target.lines[8]) < MAX_RECORD + 100
        for text in ("first problem", "second problem"):  # a bare "%s" is not one message
            logger.warning("%s", text)
        assert target.lines[-2:] == [f"{name} first problem", f"{name} second problem"]
        for _ in range(5):
            logger.error("late flood")
        handler.close()  # what was suppressed still gets its line at the end
        assert target.lines[-1].endswith("suppressed 2 similar messages (at most 3 per 60 s): late flood")
    finally:
        logger.removeHandler(handler)
