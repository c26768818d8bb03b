"""The board is a remote shell: every refusal of security.py/web.py, proven over real HTTP.

The daemon runs in-process on loopback; requests are made with aiohttp's client so headers can
be forged the way a hostile page or a DNS-rebinding attack would send them.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest

from panewatch.board.client import runtime_file
from panewatch.board.daemon import AlreadyRunning, Daemon


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), 60))


@asynccontextmanager
async def daemon_and_client() -> AsyncIterator[tuple[Daemon, aiohttp.ClientSession]]:
    daemon = Daemon()
    await daemon.start()
    try:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
            yield daemon, session
    finally:
        await daemon.close()


async def sign_in(daemon: Daemon, session: aiohttp.ClientSession) -> str:
    """The Cookie header a browser would send after opening the printed URL."""
    async with session.get(daemon.url, allow_redirects=False) as resp:
        assert resp.status == 303
        assert resp.headers["Location"] == "/"
        cookie = resp.cookies[daemon.access.cookie_name]  # type: ignore[union-attr]
        assert cookie["httponly"] is True
        assert cookie["samesite"] == "Strict"
        assert cookie["path"] == "/"
        assert cookie.value != daemon.access.token  # type: ignore[union-attr]  # derived, not the URL secret
        return f"{cookie.key}={cookie.value}"


def test_files_are_private_and_one_daemon_per_user() -> None:
    async def body() -> None:
        async with daemon_and_client() as (daemon, _session):
            for name in ("board.sock", "board.token", "board.json", "board.pid"):
                mode = stat.S_IMODE(os.stat(runtime_file(name)).st_mode)
                assert mode == 0o600, (name, oct(mode))
            assert stat.S_IMODE(os.stat(runtime_file("board.sock").parent).st_mode) == 0o700
            assert runtime_file("board.token").read_text() == daemon.access.token  # type: ignore[union-attr]
            second = Daemon()
            with pytest.raises(AlreadyRunning):
                await second.start()
            await second.close()
        assert not runtime_file("board.token").exists()

    run(body)


def test_loopback_only() -> None:
    with pytest.raises(ValueError, match="loopback"):
        Daemon(host="0.0.0.0")
    with pytest.raises(ValueError, match="loopback"):
        Daemon(host="192.168.1.10")


def test_token_cookie_and_refusals() -> None:
    async def body() -> None:
        async with daemon_and_client() as (daemon, session):
            base = daemon.base_url
            # No token, no cookie: 401, and nothing of the board leaks (no script, no cards).
            for path in ("", "api/cards", "static/board.js", "static/vendor/xterm.mjs"):
                async with session.get(base + path) as resp:
                    assert resp.status == 401, path
                    assert "panewatch board: not signed in" in await resp.text()
            async with session.get(base + "?token=wrong", allow_redirects=False) as resp:
                assert resp.status == 403
            # A token anywhere but the entry URL is not accepted either.
            async with session.get(f"{base}api/cards?token={daemon.access.token}") as resp:  # type: ignore[union-attr]
                assert resp.status == 403
            forged = {"Cookie": f"{daemon.access.cookie_name}=forged"}  # type: ignore[union-attr]
            async with session.get(base, headers=forged) as resp:
                assert resp.status == 401

            cookie = await sign_in(daemon, session)
            async with session.get(base + "api/cards", headers={"Cookie": cookie}) as resp:
                assert resp.status == 200
                assert await resp.json() == {"cards": []}
                assert resp.headers["X-Frame-Options"] == "DENY"
                assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]
                assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
                assert resp.headers["Referrer-Policy"] == "no-referrer"
            async with session.get(base + "static/vendor/xterm.mjs", headers={"Cookie": cookie}) as resp:
                assert resp.status == 200
                assert resp.content_type in ("text/javascript", "application/javascript")  # module scripts need it

            # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host.
            port = daemon.port
            hosts = (f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}", f"localhost.evil.example:{port}")
            for host in hosts:
                async with session.get(base + "api/cards", headers={"Cookie": cookie, "Host": host}) as resp:
                    assert resp.status == 421, host
            for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
                async with session.get(base + "api/cards", headers={"Cookie": cookie, "Host": host}) as resp:
                    assert resp.status == 200, host

            # A foreign Origin is refused even with the cookie, and no CORS header is ever sent.
            origins = ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null", f"https://127.0.0.1:{port}")
            for origin in origins:
                async with session.get(base + "api/cards", headers={"Cookie": cookie, "Origin": origin}) as resp:
                    assert resp.status == 403, origin
                    assert not any(h.lower().startswith("access-control-") for h in resp.headers)
            async with session.options(base + "api/cards", headers={"Origin": "http://evil.example",
                                                                    "Access-Control-Request-Method": "GET"}) as resp:
                assert resp.status == 403
                assert "Access-Control-Allow-Origin" not in resp.headers
            own = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
            async with session.get(base + "api/cards", headers=own) as resp:
                assert resp.status == 200
                assert "Access-Control-Allow-Origin" not in resp.headers
            # Only GET exists: no state-changing request can be forged with a form.
            async with session.post(base + "api/cards", headers={"Cookie": cookie}, data="x") as resp:
                assert resp.status == 405
            assert daemon.stats["refused_host"] >= 4 and daemon.stats["refused_origin"] >= 5

    run(body)


def test_websocket_refusals() -> None:
    async def body() -> None:
        async with daemon_and_client() as (daemon, session):
            cookie = await sign_in(daemon, session)
            ws_url = daemon.base_url.replace("http", "ws") + "ws"
            own = f"http://127.0.0.1:{daemon.port}"
            refused = [
                {"Cookie": cookie},  # no Origin: not a browser on our page
                {"Cookie": cookie, "Origin": "http://evil.example"},  # cross-site websocket hijacking
                {"Cookie": cookie, "Origin": own, "Host": f"evil.example:{daemon.port}"},  # rebinding
                {"Origin": own},  # no cookie
            ]
            for headers in refused:
                with pytest.raises(aiohttp.WSServerHandshakeError) as info:
                    await session.ws_connect(ws_url, headers=headers)
                assert info.value.status in (401, 403, 421), headers
            async with session.ws_connect(ws_url, headers={"Cookie": cookie, "Origin": own}) as ws:
                hello = await ws.receive_json(timeout=5)
                assert hello["op"] == "hello"
                cards = await ws.receive_json(timeout=5)
                assert cards == {"op": "cards", "full": True, "cards": [], "gone": []}
                await ws.send_json({"op": "answer", "rid": 1, "pane": "7", "option": "1", "fingerprint": "x"})
                reply = await ws.receive_json(timeout=5)
                assert reply["ok"] is False and reply["error"] == "no_such_pane"

    run(body)
