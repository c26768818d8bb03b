"""Who may use the board. It can type into shells, so it is guarded like a remote shell.

* Loopback only: the daemon refuses to bind anything else (use an SSH tunnel to reach it).
* A per-daemon secret: `board.token` (0600) in the private runtime dir; the URL the CLI prints
  carries it once (`/?token=…`), the daemon swaps it for an HttpOnly, SameSite=Strict cookie and
  redirects to a clean URL, so the token leaves the address bar and history.
* Host must name this server (127.0.0.1 / localhost / [::1] with our port): a DNS-rebinding page
  ("evil.example" resolving to 127.0.0.1) sends its own name as Host and is refused.
* Origin, when a browser sends it, must be this server's own origin; the websocket requires it
  (browsers always send it there), so another site cannot open a websocket with our cookie.
* Only GET and HEAD exist; there is no CORS at all (no Access-Control-* header is ever sent),
  and every response forbids framing, sniffing, caching and referrers.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from pathlib import Path

LOOPBACK_NAMES = ("localhost",)
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


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


class Access:
    """The checks for one daemon: its token, and the host names and origins that are its own."""

    def __init__(self, token: str, host: str, port: int) -> None:
        self.token = token
        self.port = port
        names = {"127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host}]"}
        self.hosts = {f"{name}:{port}" for name in names}
        self.origins = {f"http://{h}" for h in self.hosts}
        # The cookie is derived, not the token itself: a leaked cookie does not reveal the URL secret.
        self.cookie_value = hmac.new(token.encode(), b"panewatch-board-cookie", hashlib.sha256).hexdigest()
        self.cookie_name = f"panewatch_board_{port}"  # cookies ignore ports: one per daemon

    @staticmethod
    def new_token() -> str:
        return secrets.token_urlsafe(32)

    def host_ok(self, host: str | None) -> bool:
        return host is not None and host.lower() in self.hosts

    def origin_ok(self, origin: str | None, *, required: bool) -> bool:
        if origin is None:
            return not required
        return origin.lower() in self.origins

    def token_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.token.encode())

    def cookie_ok(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.cookie_value.encode())
