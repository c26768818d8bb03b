"""`panewatch serve`: the one daemon per user behind the board and the pane commands.

It holds an exclusive flock on `board.pid` for its whole life (a second daemon exits with status 3),
listens on `board.sock` (0600, same-uid peers only) for `run` panes and the pane commands, owns
the headless panes made by `panewatch new`, and serves the board over HTTP on loopback.

Unix-socket operations (JSON lines, see rpc.py), params → result:

    info                                        → {url, pid, port, panes, version}; url has no secret
    login    {launcher?, pane?}                  → {url, expires_in, file?}: a one-time sign-in link (security.py);
                                                  launcher: also a private page forwarding to it; pane: the
                                                  board opens at that pane (a notification's click), for a browser
    list                                        → {cards}
    new      {argv, name?, cwd?, env?, cols?, rows?, agent?}  → {card}; notified like `run` panes
    send     {pane, text, enter?}                refused while blocked (error pane_blocked + prompt), or
                                                  while the pane still changes after its last input
                                                  (pane_busy); requests queue per pane (guard.py)
    answer   {pane, option, fingerprint}         → {option, cleared, state, prompt_after}
    prompt   {pane}                             → {card} (its prompt, if blocked)
    subscribe                                   → {cards, hosts, notes}; then notifications "cards" {cards, gone}:
                                                  every card change, gathered (board/subscribe.py; `panewatch top`)
    attach   {pane}                             → {card}; then notifications "screen" {data, repaint}
                                                  and "card" {card}; the client sends "keys" {data}
                                                  and "detach"
    resize   {pane, cols, rows}                  headless panes, and `run` panes up to their terminal's size
    report_wrong {pane, expected?}               → {path, …}: the pane's history as a golden case
    stats    {since?}                           → the waits since `since` (unix time; default 7 days)
    close    {pane}                             kill a headless pane / remove an exited card
    register {card}                             this connection is a `run` pane from now on (link.py)
    shutdown
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import json
import logging
import os
import shutil
import socket
import struct
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import WSCloseCode, web

import panewatch
from panewatch.board import ops
from panewatch.board.client import runtime_file, socket_path
from panewatch.board.hookonly import HookOnlyBoard, HookOnlyPane
from panewatch.board.ids import PaneIds, card_key
from panewatch.board.limits import ConnectionGate, Limits
from panewatch.board.model import Card, bad_request
from panewatch.board.notices import Notices
from panewatch.board.panes import Hub, LocalPane, RemotePane
from panewatch.board.remote import RemoteBoard
from panewatch.board.rpc import MAX_LINE, Peer, RemoteError
from panewatch.board.security import LOGIN_TTL, Access, cookie_key, is_loopback, write_launcher, write_secret
from panewatch.board.subscribe import CardFeed
from panewatch.board.tmux import TmuxBoard, TmuxHandle
from panewatch.board.views import Views
from panewatch.board.waits import BoardWaits
from panewatch.board.watchdog import Watchdog
from panewatch.board.web import make_app
from panewatch.core.combine import Report
from panewatch.errors import PanewatchError
from panewatch.runtime import paths, system
from panewatch.runtime.hooks import PaneHooks, remove_stale_sockets
from panewatch.runtime.live import LivePane, ManifestWatcher
from panewatch.runtime.settings import load_settings, settings_path

log = logging.getLogger("panewatch.board")

IDLE_CHECK = 5.0
PORT_FILE = "board.port"
CONFIG_CHECK = 2.0  # seconds between looks at config.toml  # the state dir's note of the last daemon's port
LISTEN_BACKLOG = 128
MAX_HEADERS = 48  # browsers send ~20; with aiohttp's 8 KB per field, a connection's headers stay under 400 KB
_PANE_ENV = ("PANEWATCH_PANE_ID", "PANEWATCH_TOKEN", "PANEWATCH_SOCKET")  # a nested pane reports to its own runtime


class AlreadyRunning(PanewatchError):
    """A daemon already serves this user (it holds the lock on board.pid)."""


class _Conn:
    """One unix-socket connection: a pane command, an attach, or a registered `run` pane."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.remote: RemotePane | None = None
        self.cleanups: list[Callable[[], None]] = []


class Daemon:
    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, idle_exit: float | None = None,
                 login_ttl: float = LOGIN_TTL, limits: Limits | None = None) -> None:
        if not is_loopback(host):
            raise ValueError(f"refusing to serve the board on {host!r}: it types into shells, so it listens on "
                             "loopback only (reach it from elsewhere through an SSH tunnel)")
        self.host, self.port, self.idle_exit, self.login_ttl = host, port, idle_exit, login_ttl
        self.gate = ConnectionGate((limits or Limits()).fit())  # held well below our descriptor limit
        self.pid = os.getpid()
        settings = load_settings()
        self.hub = Hub(PaneIds(), exited_ttl=settings.board.exited_ttl)  # ids that outlive the daemon (board/ids.py)
        # Minutes lost waiting: the daemon is the one writer of the waits database (runtime/waitstore.py).
        self.waits = BoardWaits()
        self.hub.listeners.add(self.waits.on_card)
        self.stats: Counter[str] = Counter()
        self.clients = 0  # open board tabs
        self.websockets: set[web.WebSocketResponse] = set()
        self.connections: set[_Conn] = set()
        self.notify_cooldown = settings.notify.cooldown
        self._settings = settings
        self.notices: Notices | None = None  # THE notification path, for every pane (board/notices.py); at start
        self.watcher = ManifestWatcher()
        hooks = settings.tmux.attach_hooks
        self.tmux = TmuxBoard(self.hub, self.watcher, watch=settings.tmux.watch == "auto",  # the user's tmux panes
                              attach_hooks=hooks)
        self.remote = RemoteBoard(self.hub, self.watcher, settings.remotes, attach_hooks=hooks)  # [[remote]]
        self.tmux.watched_hosts = frozenset(name for r in settings.remotes for name in (r.host, r.label))
        self.views = Views(self.hub, self.tmux)  # what a view pane shows; who looks at a pane
        # agents started by hand outside watched panes, known by their installed hooks (board/hookonly.py)
        self.hookonly = HookOnlyBoard(self.hub, self.watcher, screen_pane=self._screen_pane)
        self.watchdog = Watchdog()  # ends the headless panes' sessions if we die, even by kill -9
        self.access: Access | None = None
        self._lock_fd: int | None = None
        self._server: asyncio.AbstractServer | None = None
        self._runner: web.AppRunner | None = None
        self._web: asyncio.AbstractServer | None = None
        self._stop: asyncio.Event | None = None
        self.hooks = PaneHooks(self._on_report)  # its report socket is made when the first pane with hooks starts
        self._idle_task: asyncio.Task[None] | None = None
        self._config_task: asyncio.Task[None] | None = None
        self._launchers: set[Path] = set()  # launcher pages not yet removed (their token expires with them)

    # -- lifetime ------------------------------------------------------------------------------

    async def start(self) -> None:
        self._stop = asyncio.Event()
        self._lock()
        try:
            remove_stale_sockets()  # left by processes killed before they could remove them
            self.watcher.start()  # for our whole life: a manifest added while no pane runs counts too
            await self.watchdog.start()
            with contextlib.suppress(FileNotFoundError):
                runtime_file("board.token").unlink()  # left by an older version: no long-lived secret exists any more
            await self._start_web()
            self.notices = Notices(self.hub, self._settings, self.views)
            self.notices.start()  # before any pane: every pane's changes take the one path
            self.views.start()
            self._say_backends()
            await self.tmux.start()  # before the socket: the first `ls` already sees the tmux panes
            await self.remote.start()  # each host in its own task: none delays the start or another host
            await self.hookonly.start()
            await self._start_socket()
            write_secret(runtime_file("board.json"), json.dumps(
                {"pid": self.pid, "url": self.base_url, "host": self.host, "port": self.port}))
        except BaseException:
            await self.close()
            raise
        if self.idle_exit is not None:
            self._idle_task = asyncio.get_running_loop().create_task(self._idle_watch(self.idle_exit))
        self._config_task = asyncio.get_running_loop().create_task(self._config_watch())

    def _lock(self) -> None:
        fd = os.open(runtime_file("board.pid"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise AlreadyRunning("a panewatch daemon is already running for this user") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{self.pid}\n".encode())
        self._lock_fd = fd  # held until we exit; the kernel drops it if we die, so it is never stale

    async def _start_web(self) -> None:
        # Bind first: the port (maybe ephemeral) must be known to Access before the app exists.
        sock = self._bind()
        self.port = sock.getsockname()[1]
        with contextlib.suppress(OSError):  # the next daemon takes the same port when free: open tabs come back
            (paths.state_dir() / PORT_FILE).write_text(f"{self.port}\n", encoding="utf-8")
        self.access = Access(self.host, self.port, login_ttl=self.login_ttl, cookie_key=cookie_key(paths.state_dir()))
        limits = self.gate.limits
        self._runner = web.AppRunner(make_app(self, self.access), access_log=None, handle_signals=False,
                                     keepalive_timeout=limits.idle_timeout, max_headers=MAX_HEADERS)
        await self._runner.setup()
        assert self._runner.server is not None
        # Our own listener rather than a web.SockSite: every connection passes the gate (limits.py) first.
        self._web = await asyncio.get_running_loop().create_server(self.gate.factory(self._runner.server),
                                                                   sock=sock, backlog=LISTEN_BACKLOG)

    def _bind(self) -> socket.socket:
        """The board's listening socket: the configured port (SO_REUSEADDR: a restart does not wait for the last
        connections' TIME_WAIT), else the port the last daemon had if it is free, else any free port."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        ports = [self.port] if self.port else [*_remembered_port(), 0]
        for i, port in enumerate(ports):
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((self.host, port))
                sock.listen(LISTEN_BACKLOG)
                sock.setblocking(False)
                return sock
            except BaseException:
                sock.close()
                if i == len(ports) - 1:
                    raise
        raise AssertionError("unreachable")

    async def _start_socket(self) -> None:
        path = socket_path()
        system.check_socket_path(str(path))  # a clear error on a runtime dir too deep for sun_path (104 on macOS)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: we hold the lock, so no live daemon owns it
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
            os.chmod(path, 0o600)  # before listen(): nobody connects while it has the umask's mode
            self._server = await asyncio.start_unix_server(self._on_connection, sock=sock, limit=MAX_LINE)
        except BaseException:
            sock.close()
            raise

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def login(self, *, launcher: bool = False, pane: str | None = None) -> dict[str, Any]:
        """A one-time sign-in link; with `launcher`, also a private page forwarding to it (removed at expiry);
        with `pane`, the board opens at that pane's card."""
        assert self.access is not None
        url = f"{self.base_url}?token={self.access.mint()}" + (f"&pane={quote(pane, safe='')}" if pane else "")
        reply: dict[str, Any] = {"url": url, "expires_in": self.access.login_ttl}
        if launcher:
            path = write_launcher(paths.runtime_dir(), url)
            self._launchers.add(path)
            asyncio.get_running_loop().call_later(self.access.login_ttl, self._remove_launcher, path)
            reply["file"] = str(path)
        return reply

    def _remove_launcher(self, path: Path) -> None:
        self._launchers.discard(path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def wait(self) -> None:
        assert self._stop is not None
        await self._stop.wait()

    async def close(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
        if self._config_task is not None:
            self._config_task.cancel()
        if self._server is not None:
            self._server.close()
            self._server = None
            with contextlib.suppress(FileNotFoundError):
                socket_path().unlink()
        for conn in list(self.connections):
            await conn.peer.close()
        await self.hookonly.close()
        await self.tmux.close()
        await self.remote.close()
        await self.hub.close()
        self.waits.close()  # after the hub: the panes' open waits were written as they left
        if self.hub.ids is not None:
            self.hub.ids.save()
        await self.watchdog.close()
        self.watcher.stop()
        if self._web is not None:
            self._web.close()  # no new connections; the runner's cleanup closes the open ones
            self._web = None
        for ws in list(self.websockets):  # at once: a tab's websocket would hold the runner's cleanup ~30 s
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(code=WSCloseCode.GOING_AWAY, message=b"the daemon stops"), 1.0)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.hooks.close()
        await self.views.close()
        if self.notices is not None:
            self.notices.close()
        if self._lock_fd is not None:
            with contextlib.suppress(FileNotFoundError):
                runtime_file("board.json").unlink()
            for path in list(self._launchers):
                self._remove_launcher(path)
            os.close(self._lock_fd)  # the pid file stays: unlinking it would race a new daemon's lock
            self._lock_fd = None

    async def _config_watch(self) -> None:
        """config.toml read again when it changes (its mtime, size or inode, looked at every CONFIG_CHECK s)."""
        seen = _stamp(settings_path())
        while True:
            await asyncio.sleep(CONFIG_CHECK)
            now = _stamp(settings_path())
            if now != seen:
                seen = now
                self.reload()

    def reload(self) -> dict[str, Any]:
        """Take config.toml again (`serve --reload`, or it changed): notifications at once; what needs a restart
        (the board's port, [tmux] watch) is said so."""
        settings = load_settings()
        old, self._settings = self._settings, settings
        for warning in settings.warnings:
            log.warning("%s", warning)
        if self.notices is not None:
            self.notices.reload(settings)
            self._say_backends()
        self.notify_cooldown = settings.notify.cooldown
        self.hub.exited_ttl = settings.board.exited_ttl
        later = [name for name, a, b in (("[board] port", old.board.port, settings.board.port),
                                          ("[tmux]", old.tmux, settings.tmux), ("[[remote]]", old.remotes,
                                                                               settings.remotes)) if a != b]
        if later:
            log.warning("config.toml: %s changed: takes effect when the daemon restarts (`panewatch serve --stop`)",
                        ", ".join(later))
        log.info("config.toml read again (%s)", settings.path or "defaults")
        return {"path": settings.path, "warnings": list(settings.warnings), "after_restart": later}

    async def _idle_watch(self, idle_exit: float) -> None:
        idle_since = time.monotonic()
        while True:
            await asyncio.sleep(min(IDLE_CHECK, idle_exit))
            busy = self.hub.panes or self.clients or any(c.remote is None for c in self.connections)
            if busy:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= idle_exit:
                log.info("idle for %.0f s: exiting", idle_exit)
                self.stop()
                return

    # -- the unix socket -----------------------------------------------------------------------

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not _same_user(writer):
            writer.close()
            return
        peer = Peer(reader, writer)
        conn = _Conn(peer)

        async def on_request(op: str, msg: dict[str, Any]) -> dict[str, Any] | None:
            return await self._request(conn, op, msg)

        peer.on_request = on_request
        peer.on_notify = lambda op, msg: self._notify(conn, op, msg)
        self.connections.add(conn)
        try:
            await peer.run()
        finally:
            self.connections.discard(conn)
            for cleanup in conn.cleanups:
                with contextlib.suppress(Exception):
                    cleanup()
            if conn.remote is not None:
                conn.remote.disconnected()

    def _notify(self, conn: _Conn, op: str, msg: dict[str, Any]) -> None:
        if conn.remote is not None:
            conn.remote.on_notify(op, msg)
        elif op == "keys" and isinstance(msg.get("pane"), str):
            asyncio.get_running_loop().create_task(self._attached_keys(conn, msg["pane"], msg.get("data", "")))
        elif op == "detach":
            for cleanup in conn.cleanups:
                cleanup()
            conn.cleanups.clear()

    async def _attached_keys(self, conn: _Conn, pane_ref: str, data: Any) -> None:
        try:
            await self.hub.get(pane_ref).keys(base64.b64decode(str(data)), True)
        except RemoteError as exc:
            conn.peer.notify("error", error=exc.kind, message=str(exc))

    async def _request(self, conn: _Conn, op: str, msg: dict[str, Any]) -> dict[str, Any] | None:
        async def register(msg: dict[str, Any]) -> dict[str, Any]:
            return self._register(conn, msg)

        async def attach(msg: dict[str, Any]) -> dict[str, Any]:
            return self._attach(conn, ops.pane(self, msg).id)

        async def subscribe(msg: dict[str, Any]) -> dict[str, Any]:
            conn.cleanups.append(CardFeed(self.hub, conn.peer).start())
            return {"cards": self.hub.cards(), "hosts": self.hosts(), "notes": self.notes()}

        return await ops.call(self, op, msg, web=False,
                              local={"register": register, "attach": attach, "subscribe": subscribe})

    def notes(self) -> list[str]:
        """What is not watched, for `ls` and the board's banner: tmux servers and sessions not watched, and why.
        (Notification backends that cannot deliver are said once, at start, and in `info`.)"""
        return self.tmux.notes

    def hosts(self) -> dict[str, dict[str, Any]]:
        """Each `[[remote]]` host's link (board/remote.py `hosts`), for `ls`."""
        return {label: dict(link) for label, link in self.remote.hosts.items()}

    def info(self) -> dict[str, Any]:
        notify = self.notices.availability() if self.notices is not None else []
        counts = ({"sent": dict(self.notices.sent), "seen": self.notices.seen_skipped}
                  if self.notices is not None else {})
        return {"url": self.base_url, "pid": self.pid, "port": self.port, "panes": len(self.hub.panes),
                "version": panewatch.__version__,
                "notify": [{"backend": name, "ok": ok, "how": how} for name, ok, how in notify],
                "notices": counts}

    def _register(self, conn: _Conn, msg: dict[str, Any]) -> dict[str, Any]:
        card = msg.get("card")
        if conn.remote is not None or not isinstance(card, dict):
            raise bad_request("register: one card, once per connection")
        # The same `run` coming back to this daemon (its connection dropped) keeps its id and card.
        again = next((h for h in self.hub.panes.values() if isinstance(h, RemotePane) and h.peer.closed
                      and h.card.get("pid") == card.get("pid") and h.card.get("name") == card.get("name")), None)
        key = card_key("run", card.get("runner_pid"), card.get("name"), card.get("pid"))
        conn.remote = RemotePane(self.hub, again.id if again is not None else self.hub.new_id(key), conn.peer, card,
                                 key=key)
        self.hub.add(conn.remote)
        return {"id": conn.remote.id}

    def _attach(self, conn: _Conn, pane_id: str) -> dict[str, Any]:
        handle = self.hub.get(pane_id)
        peer = conn.peer

        def on_card(changed: str, card: Card | None) -> None:
            if changed == pane_id:
                peer.notify("card", card=card)

        def on_screen(data: bytes, repaint: bool) -> None:
            peer.notify("screen", data=base64.b64encode(data).decode(), repaint=repaint)

        self.hub.listeners.add(on_card)
        conn.cleanups.append(lambda: self.hub.listeners.discard(on_card))
        conn.cleanups.append(handle.watch(on_screen))
        return {"card": handle.card}

    # -- panes ---------------------------------------------------------------------------------

    async def new_pane(self, spec: ops.NewPane) -> Card:
        argv, agent = spec.argv, spec.agent
        cwd = spec.cwd or str(Path.home())
        if not Path(cwd).is_dir():
            raise bad_request(f"no such directory: {cwd}")
        if agent is not None and self.watcher.get(agent) is None:
            known = ", ".join(m.id for m in self.watcher.current())
            raise bad_request(f"unknown agent {agent!r} (known: {known})")
        env = dict(spec.env) if spec.env is not None else dict(os.environ)
        for key in _PANE_ENV:
            env.pop(key, None)
        env.setdefault("TERM", "xterm-256color")
        # PANEWATCH_TMUX_NEW=off|auto overrides `[tmux] new` (the test suite's headless panes)
        in_tmux = (os.environ.get("PANEWATCH_TMUX_NEW") or self._settings.tmux.new) == "auto"
        if in_tmux and shutil.which("tmux") is not None:
            # in tmux, the agent outlives this daemon (a restarted one finds it again)
            return await self.tmux.new_window(argv, name=spec.name or Path(argv[0]).name, cwd=cwd, env=env,
                                              cols=spec.cols, rows=spec.rows)
        pane_id = self.hub.new_id()
        try:
            argv = await self.hooks.wire(pane_id, argv, env, cwd=cwd, manifests=self.watcher.get)
        except OSError as exc:  # no hooks for this pane: the screen alone still detects everything
            log.warning("pane %s: hooks disabled: %s", pane_id, exc)
        pane = LivePane(argv, pane_id=pane_id, cols=spec.cols, rows=spec.rows, env=env, cwd=cwd, agent=agent,
                        headless=True, manifests=self.watcher)
        local = LocalPane(self.hub, pane, name=spec.name or Path(argv[0]).name, cwd=cwd)
        try:
            pane.start()
        except OSError as exc:
            local.endpoint.close()
            raise RemoteError("spawn_failed", f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
        self.watchdog.watch(pane)
        local.card = local.endpoint.card()
        self.hub.add(local)
        return local.card

    def _say_backends(self) -> None:
        """Which notification backends can deliver and which cannot: once, at start (the log; `info` for the
        board's banner and `serve`'s own output)."""
        assert self.notices is not None
        for name, ok, how in self.notices.availability():
            if ok:
                log.info("notifications: %s: %s", name, how)
            else:
                log.warning("notifications: %s cannot deliver: %s", name, how)

    def _screen_pane(self, tty: str) -> Callable[[Report], None] | None:
        """The report sink of a tmux pane watched by its screen whose tty is `tty` (an agent's hooks land there)."""
        for handle in self.tmux.handles.values():
            if not handle.ended and handle.pane.info.tty == tty:
                return handle.pane.report
        return None

    def _on_report(self, pane_id: str, report: Report) -> None:
        handle = self.hub.panes.get(pane_id)
        if isinstance(handle, LocalPane | TmuxHandle):
            handle.pane.report(report)

    async def dismiss(self, pane_id: str, *, kill: bool = False) -> None:
        handle = self.hub.get(pane_id)
        if isinstance(handle, TmuxHandle) and not handle.ended:
            if not kill:
                raise RemoteError("running", f"pane {pane_id} is a live tmux pane ({handle.card.get('target')}): its "
                                             "card goes when the pane does")
            if not handle.started_by_new():
                raise RemoteError("not_owned", f"pane {pane_id} is your tmux pane {handle.card.get('target')}: close "
                                               "it in tmux (panewatch only ends the panes `panewatch new` started)")
            await handle.kill()
            return
        if handle.card.get("state") != "exited":
            if not kill:
                raise RemoteError("running", f"pane {pane_id} is still running")
            if isinstance(handle, HookOnlyPane):
                raise RemoteError("not_owned", f"pane {pane_id} is an agent you started in {handle.where}: end it "
                                               "there")
            if not isinstance(handle, LocalPane):
                raise RemoteError("not_owned", f"pane {pane_id} runs under `panewatch run` in another "
                                               "terminal: end it there")
        await self.hub.remove(pane_id)


def _stamp(path: Path) -> tuple[float, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime, st.st_size, st.st_ino


def _remembered_port() -> list[int]:
    """The port the last daemon listened on (state dir), if any."""
    with contextlib.suppress(OSError, ValueError):
        port = int((paths.state_dir() / PORT_FILE).read_text(encoding="utf-8").strip())
        if 1024 <= port <= 65535:
            return [port]
    return []


def _same_user(writer: asyncio.StreamWriter) -> bool:
    """Belt and braces over the 0600 socket in a 0700 dir: the peer must be our own uid (Linux)."""
    sock = writer.get_extra_info("socket")
    option = getattr(socket, "SO_PEERCRED", None)
    if sock is None or option is None:
        return True
    with contextlib.suppress(OSError):
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
        return bool(uid == os.getuid())
    return False

