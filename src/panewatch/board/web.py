"""The board's HTTP side (aiohttp): the page, its static files, the websocket, all behind `Access`.

Every request passes `guard` first (see security.py for the why of each check):

    bad Host                       → 421
    foreign Origin                 → 403
    websocket without Origin       → 403
    not GET/HEAD                   → 405
    GET /?token=ONE-TIME           → the session cookie, and a page that moves on to / (the token is spent);
                                     &pane=ID: on to /#pane=ID, where the board selects that pane
    /?token=ANY, already signed in → that page again (a used link opened again)
    /?token=SPENT/EXPIRED/WRONG    → 403
    no (or a wrong) cookie         → 401
    websocket beyond the cap       → 503
"""

from __future__ import annotations

import html
import json
import mimetypes
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from urllib.parse import quote

from aiohttp import web

from panewatch.board.ops import Board
from panewatch.board.security import SECURITY_HEADERS, Access
from panewatch.board.wsession import BoardSession

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

mimetypes.add_type("text/javascript", ".mjs")  # module scripts must be served as JavaScript
STATIC = Path(str(resources.files("panewatch.board") / "static"))
_DENIED_PAGE = """<!doctype html><meta charset="utf-8"><title>panewatch board</title>
<body style="font-family:sans-serif;margin:3em"><h1>panewatch board: {title}</h1><p>{text}</p></body>"""

_SIGNED_IN_PAGE = """<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={target}">
<title>panewatch board</title><body style="font-family:sans-serif;margin:3em"><p>Signed in.
<a href="{target}">Open the board</a>.</p></body>"""


def _denied(status: int, title: str, text: str) -> web.Response:
    return web.Response(status=status, text=_DENIED_PAGE.format(title=title, text=text), content_type="text/html")


def make_app(board: Board, access: Access) -> web.Application:
    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            with board.gate.handling(request.transport):  # not idle while this runs (limits.py)
                response = await _check(request, handler)
        except web.HTTPException as exc:  # 404s and the like: the same headers
            for name, value in SECURITY_HEADERS.items():
                exc.headers.setdefault(name, value)
            raise
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    async def _check(request: web.Request, handler: Handler) -> web.StreamResponse:
        board.stats["requests"] += 1
        if not access.host_ok(request.headers.get("Host")):
            board.stats["refused_host"] += 1
            return _denied(421, "wrong host", "This board only answers to its own loopback address.")
        is_ws = request.headers.get("Upgrade", "").lower() == "websocket"
        if not access.origin_ok(request.headers.get("Origin"), required=is_ws):
            board.stats["refused_origin"] += 1
            return _denied(403, "cross-site request refused", "Requests from other sites are not accepted.")
        if request.method not in ("GET", "HEAD"):
            return _denied(405, "method not allowed", "The board takes no requests but GET.")
        signed_in = access.cookie_ok(request.cookies.get(access.cookie_name))
        if "token" in request.query:
            redeemed = request.path == "/" and request.method == "GET" and access.redeem(request.query["token"])
            if not redeemed and not (signed_in and request.path == "/"):
                board.stats["refused_token"] += 1
                return _denied(403, "link not valid", "Board links work once, within a few minutes: run "
                                                      "<code>panewatch board</code> for a new one.")
            # Not a 303: a redirect keeps the initiator of the navigation (a launcher file, another site),
            # and the browser then holds back our SameSite=Strict cookie. A hop from our own page does not.
            pane = request.query.get("pane", "")
            target = f"/#pane={quote(pane, safe='')}" if 0 < len(pane) <= 128 and pane.isprintable() else "/"
            response = web.Response(text=_SIGNED_IN_PAGE.format(target=html.escape(target, quote=True)),
                                    content_type="text/html")
            if redeemed:
                response.set_cookie(access.cookie_name, access.cookie_value, httponly=True, samesite="Strict",
                                    path="/")
            return response
        if not signed_in:
            board.stats["refused_cookie"] += 1
            return _denied(401, "not signed in", "Run <code>panewatch board</code>: it opens the board "
                                                 "(or prints a one-time link to it).")
        return await handler(request)

    async def index(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html")

    async def cards(request: web.Request) -> web.StreamResponse:
        return web.json_response({"cards": board.hub.cards()}, dumps=lambda o: json.dumps(o, ensure_ascii=False))

    async def websocket(request: web.Request) -> web.StreamResponse:
        if board.clients >= board.gate.limits.websockets:
            board.stats["refused_websocket"] += 1
            return _denied(503, "too many board tabs", "Close another tab of this board and reload.")
        return await BoardSession(board, request).run()

    app = web.Application(middlewares=[guard], client_max_size=64 * 1024)
    app.router.add_get("/", index)
    app.router.add_get("/api/cards", cards)
    app.router.add_get("/ws", websocket)
    app.router.add_static("/static/", STATIC, follow_symlinks=False)
    return app
