"""Who may use the board. It can type into shells, so it is guarded like a remote shell.

* Loopback only: the daemon refuses to bind anything else (use an SSH tunnel to reach it).
* No secret in any process's arguments: any local user can read another process's command line
  (/proc/PID/cmdline), and the board answers every local user on loopback. The one long-lived secret on
  disk is the cookie key (below), the user's own file.
  The daemon mints ONE-TIME login tokens on request over its unix socket (0600, same-uid peers
  only). A token works once, for `LOGIN_TTL` seconds; `/?token=…` swaps it for an HttpOnly,
  SameSite=Strict cookie and redirects to a clean URL, so it leaves the address bar and history.
  `panewatch board` has the daemon write a private launcher page (0600, in the 0700 runtime dir,
  unpredictable name, removed when its token expires) that forwards into the board, as Jupyter
  does, and opens that: the browser's argv carries only a file path.
* The cookie is signed with a key kept in the state directory (`board-cookie.key`, 0600, in a 0700
  directory: readable by the user only, as their shell history is) and expires after COOKIE_TTL: an open
  tab reconnects to a restarted daemon (on the same port, board/daemon.py remembers it) without a new
  sign-in. Removing the key signs every browser out.
* Host must name this server (127.0.0.1 / localhost / [::1] with our port): a DNS-rebinding page
  ("evil.example" resolving to 127.0.0.1) sends its own name as Host and is refused.
* Origin, when a browser sends it, must be this server's own origin; the websocket requires it
  (browsers always send it there), so another site cannot open a websocket with our cookie.
* Only GET and HEAD exist; there is no CORS at all (no Access-Control-* header is ever sent),
  and every response forbids framing, sniffing, caching and referrers.
* Secrets have a recognisable shape (`pwb_…` login tokens, `pwc_…` cookies) so `redact()` can
  take them out of any text bound for a log, whatever carried them there (the shapes live with
  every other secret shape in core/redact.py, which also masks wrong-state reports).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import ipaddress
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from panewatch.core import redact as redaction

LOOPBACK_NAMES = ("localhost",)
LOGIN_PREFIX, COOKIE_PREFIX = "pwb_", "pwc_"
LOGIN_TTL = 120.0  # seconds a one-time login link stays valid if unused
COOKIE_TTL = 7 * 86400.0  # seconds a board cookie is valid (across daemon restarts, while the key is kept)
COOKIE_KEY_FILE = "board-cookie.key"
MAX_LOGINS = 32  # outstanding one-time tokens kept; minting more drops the oldest
SECURITY_HEADERS = {
    # 'unsafe-inline' styles only: xterm.js injects <style> elements for its colours. Scripts: files only.
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                "img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; "
                                "form-action 'none'; frame-ancestors 'none'"),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
_LAUNCHER_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url={url}"><title>panewatch board</title></head>
<body style="font-family:sans-serif;margin:3em"><p>Opening the panewatch board…
If nothing happens, <a href="{url}">open it here</a> (this link works once).</p></body></html>
"""


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def redact(text: str) -> str:
    """`text` with every secret blanked out: the board's (and anything passed as a token or board
    cookie) and every other shape core/redact.py knows (API keys, bearer tokens, KEY=… assignments)."""
    return redaction.redact(text)


def write_secret(path: Path, value: str) -> None:
    """Create or replace `path` with mode 0600 from the first byte (never readable by others)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, value.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_launcher(directory: Path, url: str) -> Path:
    """A new private page in `directory` (0600, unguessable name, never an existing file) forwarding to `url`."""
    path = directory / f"board-open-{secrets.token_hex(12)}.html"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, _LAUNCHER_PAGE.format(url=html.escape(url, quote=True)).encode())
    finally:
        os.close(fd)
    return path


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Access:
    """The checks for one daemon: its one-time login tokens, its cookie, the hosts and origins that are its own."""

    def __init__(self, host: str, port: int, *, login_ttl: float = LOGIN_TTL, max_logins: int = MAX_LOGINS,
                 clock: Callable[[], float] = time.monotonic, cookie_key: bytes | None = None,
                 wall: Callable[[], float] = time.time) -> None:
        self.port = port
        names = {"127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host}]"}
        self.hosts = {f"{name}:{port}" for name in names}
        self.origins = {f"http://{h}" for h in self.hosts}
        self._cookie_key = cookie_key or secrets.token_bytes(32)  # none kept: valid for this daemon's life only
        self._wall = wall
        self.cookie_name = f"panewatch_board_{port}"  # cookies ignore ports: one per daemon
        self.login_ttl, self._max_logins, self._clock = login_ttl, max_logins, clock
        # Digests, not tokens: nothing kept here is a usable secret, and lookups compare no secret bytes.
        self._logins: OrderedDict[bytes, float] = OrderedDict()  # digest → expiry, oldest first

    def mint(self) -> str:
        """A new one-time login token, valid once within `login_ttl` seconds."""
        self._expire()
        token = LOGIN_PREFIX + secrets.token_urlsafe(32)
        self._logins[_digest(token)] = self._clock() + self.login_ttl
        while len(self._logins) > self._max_logins:
            self._logins.popitem(last=False)
        return token

    def redeem(self, token: str | None) -> bool:
        """True once for a token `mint()` gave out, if it has not expired; it is spent either way."""
        self._expire()
        return token is not None and self._logins.pop(_digest(token), None) is not None

    def _expire(self) -> None:
        now = self._clock()
        for digest, expiry in list(self._logins.items()):
            if expiry > now:
                break  # in minting order, and every token gets the same ttl
            del self._logins[digest]

    def host_ok(self, host: str | None) -> bool:
        return host is not None and host.lower() in self.hosts

    def origin_ok(self, origin: str | None, *, required: bool) -> bool:
        if origin is None:
            return not required
        return origin.lower() in self.origins

    @property
    def cookie_value(self) -> str:
        """A new cookie: when it was issued, signed with the cookie key."""
        issued = str(int(self._wall()))
        return f"{COOKIE_PREFIX}{issued}_{self._sign(issued)}"

    def _sign(self, issued: str) -> str:
        message = f"{issued}:{self.cookie_name}".encode()
        return hmac.new(self._cookie_key, message, hashlib.sha256).hexdigest()

    def cookie_ok(self, value: str | None) -> bool:
        if value is None or not value.startswith(COOKIE_PREFIX):
            return False
        issued, _, signature = value[len(COOKIE_PREFIX):].partition("_")
        if not issued.isdigit() or not hmac.compare_digest(signature.encode(), self._sign(issued).encode()):
            return False
        return 0 <= self._wall() - int(issued) <= COOKIE_TTL


def cookie_key(directory: Path) -> bytes | None:
    """The board's cookie key in `directory` (the state dir), made on first use: 32 random bytes, 0600. None when
    it cannot be kept (the cookie then lasts the daemon's life only)."""
    path = directory / COOKIE_KEY_FILE
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(32))
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o077:
                return None  # not ours alone: not a secret
            key = fh.read(64)
    except OSError:
        return None
    return key if len(key) >= 32 else None
