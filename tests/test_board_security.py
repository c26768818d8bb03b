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
from pathlib import Path

import aiohttp
import pytest

from panewatch.board.client import runtime_file
from panewatch.board.daemon import AlreadyRunning, Daemon
from panewatch.board.security import Access, redact


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
    """The Cookie header a browser would send after opening a one-time link."""
    link = daemon.login()["url"]
    assert link.startswith(daemon.base_url + "?token=pwb_")
    async with session.get(link, allow_redirects=False) as resp:
        assert resp.status == 200
        assert '<meta http-equiv="refresh" content="0;url=/">' in await resp.text()  # a same-site hop home
        cookie = resp.cookies[daemon.access.cookie_name]  # type: ignore[union-attr]
        assert cookie["httponly"] is True
        assert cookie["samesite"] == "Strict"
        assert cookie["path"] == "/"
        assert cookie.value.startswith("pwc_") and cookie.value not in link
        return f"{cookie.key}={cookie.value}"


def test_files_are_private_and_one_daemon_per_user() -> None:
    async def body() -> None:
        runtime_file("board.token").write_text("left by an older version")
        async with daemon_and_client() as (daemon, _session):
            for name in ("board.sock", "board.json", "board.pid"):
                mode = stat.S_IMODE(os.stat(runtime_file(name)).st_mode)
                assert mode == 0o600, (name, oct(mode))
            assert stat.S_IMODE(os.stat(runtime_file("board.sock").parent).st_mode) == 0o700
            # No long-lived secret on disk: the cookie lives in the daemon's memory and the browser only.
            assert not runtime_file("board.token").exists()
            assert daemon.access.cookie_value not in runtime_file("board.json").read_text()  # type: ignore[union-attr]
            second = Daemon()
            with pytest.raises(AlreadyRunning):
                await second.start()
            await second.close()

    run(body)


def test_login_links_work_once_and_expire() -> None:
    async def body() -> None:
        async with daemon_and_client() as (daemon, session):
            link = daemon.login()["url"]
            async with session.get(link, allow_redirects=False) as resp:
                assert resp.status == 200 and daemon.access.cookie_name in resp.cookies  # type: ignore[union-attr]
            async with session.get(link, allow_redirects=False) as resp:  # spent: a second browser gets nothing
                assert resp.status == 403 and not resp.cookies
            cookie = await sign_in(daemon, session)
            async with session.get(link, headers={"Cookie": cookie}, allow_redirects=False) as resp:
                assert resp.status == 200 and not resp.cookies  # signed in already: a spent link just goes home
            unused = daemon.login()["url"]
            async with session.head(unused, allow_redirects=False) as resp:  # only a GET spends a link
                assert resp.status == 403
            async with session.get(unused, allow_redirects=False) as resp:
                assert resp.status == 200 and resp.cookies

    run(body)


def test_login_tokens_expire_and_stay_bounded() -> None:
    now = [0.0]
    access = Access("127.0.0.1", 1234, login_ttl=60, max_logins=3, clock=lambda: now[0])
    old = access.mint()
    now[0] = 59.9
    fresh = access.mint()
    assert access.redeem(fresh) and not access.redeem(fresh)
    now[0] = 60.0
    assert not access.redeem(old)  # expired
    tokens = [access.mint() for _ in range(5)]
    assert not access.redeem(tokens[0]) and not access.redeem(tokens[1])  # only the newest 3 are kept
    assert all(access.redeem(t) for t in tokens[2:])
    assert not access.redeem(None) and not access.redeem("") and not access.redeem("pwb_guess")
    assert Access("127.0.0.1", 1234).cookie_value != Access("127.0.0.1", 1234).cookie_value  # per daemon


def test_launcher_page_is_private_and_goes_away_with_its_token() -> None:
    async def body() -> None:
        daemon = Daemon(login_ttl=0.3)
        await daemon.start()
        try:
            first, second = daemon.login(launcher=True), daemon.login(launcher=True)
            pages = [Path(first["file"]), Path(second["file"])]
            assert pages[0] != pages[1]
            for page in pages:
                assert page.parent == runtime_file("board.json").parent
                assert page.name.startswith("board-open-") and len(page.name) > len("board-open-.html") + 20
                assert stat.S_IMODE(page.stat().st_mode) == 0o600
            assert f'url={first["url"]}"' in pages[0].read_text()
            deadline = asyncio.get_running_loop().time() + 10
            while any(p.exists() for p in pages):
                assert asyncio.get_running_loop().time() < deadline, "launcher pages outlived their tokens"
                await asyncio.sleep(0.05)
            kept = Path(daemon.login(launcher=True)["file"])
        finally:
            await daemon.close()
        assert not kept.exists()  # and none outlives the daemon

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
            # A token anywhere but the entry URL is not accepted (nor spent) either.
            link = daemon.login()["url"]
            async with session.get(link.replace("/?", "/api/cards?")) as resp:
                assert resp.status == 403
            async with session.get(link, allow_redirects=False) as resp:
                assert resp.status == 200 and resp.cookies
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


def test_redact_takes_every_secret_shape_out() -> None:
    secrets = ["pwb_Zx9-_q", "pwc_Zx9-_q", "hunter2", "s3cr3t"]
    texts = [
        "GET /?token=pwb_Zx9-_q HTTP/9.9x",
        "b'en=pwb_Zx9-_q HTTP/1.1 junk'",  # the tail of a token cut by a TCP segment still has its prefix
        "GET /?%74oKeN%3Dhunter2&x=1 HTTP/1.1",
        "GET /?TOKEN = s3cr3t",
        "Cookie: other=1; panewatch_board_4242=pwc_Zx9-_q; x=y",
        "Cookie: panewatch_board_4242=hunter2",
        "PANEWATCH_TOKEN=hunter2",
    ]
    for text in texts:
        clean = redact(text)
        assert "<redacted>" in clean, text
        assert not any(s in clean for s in secrets), clean
    assert redact("Invalid header token: b'x'") == "Invalid header token: b'x'"
    assert redact("GET /static/board.js HTTP/1.1") == "GET /static/board.js HTTP/1.1"
