"""The daemon's tmux panes: every pane of every tmux server of the user, as cards on the board.

    TmuxBoard    watches the user's tmux servers (runtime/tmux.py `user_servers`: the sockets tmux's own
                 rule trusts, a refused one said once in the log; rescanned every SCAN seconds;
                 `[tmux] watch = "off"` in config.toml: none), one TmuxWatcher each,
                 and puts each of their panes on the Hub as a TmuxHandle; each watcher takes the
                 reports of installed hooks (`panewatch hooks install`) for its server's panes. `new_window` is
                 `panewatch new` in tmux: a window in the dedicated session DEDICATED_SESSION on the
                 user's default tmux server, so the agent outlives the daemon; a restarted
                 daemon finds it again (its history of states is lost, its process is not).
    TmuxHandle   one tmux pane behind the board's PaneHandle interface: its card (origin "tmux",
                 `target`, `tmux_pane`, `tmux_server`), input through its PaneEndpoint (the one guard,
                 typed by send-keys), `goto` selects it in the user's tmux, `attach_command` is what
                 `panewatch attach` runs (tmux attach / switch-client; ssh for a remote host). Its size
                 is tmux's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from panewatch.board.endpoint import PaneEndpoint
from panewatch.board.ids import card_key
from panewatch.board.model import Card, bad_request, wire_error
from panewatch.board.panes import EndpointInput, Hub, Viewer
from panewatch.board.rpc import RemoteError
from panewatch.board.windowmarks import WindowMarks
from panewatch.core.tmux_protocol import command, quote
from panewatch.errors import TmuxError
from panewatch.runtime.driver import Manifests
from panewatch.runtime.paneclient import ENV_PANE_ID, ENV_SOCKET, ENV_TOKEN
from panewatch.runtime.tmux import TmuxServer, check_socket, check_socket_dir, socket_dir, user_servers
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher, skipped_message

log = logging.getLogger("panewatch.board")

SCAN = 5.0  # seconds between looks for tmux servers started (or gone) since
DEDICATED_SESSION = "panewatch"
NEW_TIMEOUT = 5.0  # seconds for a window made by `new` to be seen by its watcher


def dedicated_server() -> TmuxServer:
    """The user's default tmux server, named by its socket path as `user_servers()` names it (one server,
    one watcher); `new` puts its agents in the session DEDICATED_SESSION there."""
    return TmuxServer(socket_path=str(socket_dir() / "default"))


def agents_in_tmux() -> bool:
    """Whether agents `new` started may still run in tmux (the dedicated session exists, on a socket tmux's
    rule trusts)."""
    path = dedicated_server().socket_path
    if path is None or not os.path.exists(path) or shutil.which("tmux") is None:
        return False
    try:
        check_socket_dir(Path(path).parent)
        check_socket(Path(path))
    except TmuxError:
        return False
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(dedicated_server().argv("has-session", "-t", f"={DEDICATED_SESSION}"),
                              capture_output=True, timeout=5).returncode == 0
    return False


class TmuxHandle(EndpointInput):
    def __init__(self, hub: Hub, pane_id: str, pane: TmuxPane, server: TmuxServer, key: str = "") -> None:
        self.id = pane_id
        self.key = key  # what makes it the same pane across daemon restarts (board/ids.py): stats rows by it
        self.hub = hub
        self.pane = pane
        self.server = server
        self._marked = ""
        self.view_of: str | None = None  # the card this pane shows, when it is a view (board/views.py)
        self.shows: str | None = None  # what it shows, for people ("agents:0.0", "devbox")
        self.marks: WindowMarks | None = None  # its window's @panewatch_window_state (board/windowmarks.py)
        self.endpoint = PaneEndpoint(pane, name=self._name(), cwd="", origin="tmux",
                                     command=pane.info.current_command, on_card=self._on_card)
        self.card: Card = self._own(self.endpoint.card())
        self._mark(str(self.card.get("state")))

    def _name(self) -> str:
        info = self.pane.info
        return info.window_name if info.session_name == DEDICATED_SESSION and self.server == dedicated_server() \
            else info.target

    def _own(self, card: Card) -> Card:
        info = self.pane.info
        return {**card, "id": self.id, "name": self._name(), "origin": "tmux", "target": info.target,
                "tmux_pane": info.pane_id, "tmux_server": self.server.label, "window": info.window_name,
                "command": info.current_command, "cwd": getattr(info, "cwd", ""), "key": self.key or None,
                "view_of": self.view_of if card.get("kind") == "view" else None,
                "shows": self.shows if card.get("kind") == "view" else None}

    def _on_card(self, card: Card) -> None:
        self.card = self._own(card)
        self._mark(str(self.card.get("state")))
        if self.marks is not None:
            self.marks.update(self)
        self.hub.changed(self.id)

    def _mark(self, state: str) -> None:
        """The pane's @panewatch_state user option (for pane-border-format and themes), on change only; its
        window's @panewatch_window_state is `marks`' (board/windowmarks.py)."""
        if state == self._marked or self.pane.exited:
            return
        self._marked = state
        self.pane.client.send([command("set-option", "-p", "-t", self.pane.pane_id, "@panewatch_state", state)])

    def refresh(self) -> None:
        self._on_card(self.endpoint.card())

    @property
    def ended(self) -> bool:
        """The tmux pane itself is gone (closed, its server exited); an exited agent leaves a live pane."""
        return self.pane.exited

    def started_by_new(self) -> bool:
        """A pane `panewatch new` started (the dedicated session on the default server): `kill` may end it."""
        return self.pane.info.session_name == DEDICATED_SESSION and self.server == dedicated_server()

    async def kill(self) -> None:
        try:
            await self.server.run("kill-pane", "-t", self.pane.pane_id)
        except TmuxError as exc:
            raise RemoteError("tmux", str(exc)) from None

    def set_view(self, view_of: str | None, shows: str | None) -> None:
        """What this pane shows, if it is a view (board/views.py names it)."""
        if (view_of, shows) != (self.view_of, self.shows):
            self.view_of, self.shows = view_of, shows
            self.refresh()

    async def resize(self, cols: int, rows: int) -> None:
        raise RemoteError("not_resizable", "a tmux pane takes its size from tmux (panewatch never changes a layout)")

    def watch(self, viewer: Viewer) -> Callable[[], None]:
        repaint, unwatch = self.endpoint.watch(lambda data: viewer(data, False))
        viewer(repaint, True)
        return unwatch

    async def goto(self) -> None:
        """Show this pane in the user's tmux: its window selected in its session, the pane in its window."""
        if self.pane.exited:
            raise RemoteError("exited", f"tmux pane {self.pane.pane_id} is gone")
        try:
            await self.server.run("select-window", "-t", self.pane.pane_id)
            await self.server.run("select-pane", "-t", self.pane.pane_id)
        except TmuxError as exc:
            raise RemoteError("tmux", str(exc)) from None

    def attach_command(self, inside: str | None) -> dict[str, object]:
        """`panewatch attach` on a tmux pane: the tmux command the CLI execs to show the pane's window in the
        user's terminal (`nested`: tmux inside another tmux, run with `$TMUX` unset)."""
        if self.pane.exited:
            raise RemoteError("exited", f"tmux pane {self.pane.pane_id} is gone")
        argv, nested = self.server.attach_argv(self.pane.pane_id, inside)
        return {"argv": argv, "nested": nested, "target": self.card.get("target", "")}

    async def close(self) -> None:
        self.endpoint.close()  # the pane is the user's: it stays


class TmuxBoard:
    """Every tmux pane of the user on the hub."""

    def __init__(self, hub: Hub, manifests: Manifests, *, watch: bool = True,
                 servers: Callable[[], list[TmuxServer]] | None = None, attach_hooks: str = "skip") -> None:
        self.hub = hub
        self.attach_hooks = attach_hooks  # [tmux] attach_hooks: runtime/tmux_watch.py
        self.manifests = manifests
        self.watch = watch
        # default: the user's servers; a socket tmux's rule refuses is said once in the log, not watched
        self.servers = servers or (lambda: user_servers(refused=self._refused))
        self.watchers: dict[TmuxServer, TmuxWatcher] = {}
        self.handles: dict[tuple[TmuxServer, str], TmuxHandle] = {}
        self._task: asyncio.Task[None] | None = None
        self._warned: set[str] = set()
        # What is not watched and why, for `ls` and the board's banner: (server, session) -> message; the
        # sockets tmux's rule refused, as of the last scan
        self.skipped: dict[tuple[str, str], str] = {}
        self.watched_hosts: frozenset[str] = frozenset()  # the [[remote]] hosts (as typed after ssh) and names
        self._refusals: list[str] = []
        self.marks = WindowMarks()  # each window's @panewatch_window_state

    @property
    def notes(self) -> list[str]:
        return [*self._refusals, *self.skipped.values()]

    def _refused(self, exc: TmuxError) -> None:
        self._refusals.append(f"tmux not watched: {exc}")
        if str(exc) not in self._warned:
            self._warned.add(str(exc))
            log.warning("tmux: %s", exc)

    def _skipped(self, server: TmuxServer, session: str, hooks: list[str]) -> None:
        """A watcher does not watch `session` ("": the whole server) because of the user's tmux hooks (or, with
        no hooks, watches it again)."""
        if hooks:
            self.skipped[(server.label, session)] = skipped_message(server.label, session, hooks)
            log.warning("%s", self.skipped[(server.label, session)])
        else:
            self.skipped.pop((server.label, session), None)

    async def start(self) -> None:
        if not self.watch or shutil.which("tmux") is None:
            return
        await self.scan()
        self._task = asyncio.get_running_loop().create_task(self._rescan())

    async def _rescan(self) -> None:
        while True:
            await asyncio.sleep(SCAN)
            try:
                await self.scan()
            except Exception:  # a sweep never dies on one server
                log.exception("tmux scan failed")

    async def scan(self) -> None:
        self._refusals = []
        found = set(self.servers())
        for server in found - set(self.watchers):
            await self._watch(server)
        for server, watcher in list(self.watchers.items()):
            if server not in found and not watcher.panes:  # its socket is gone: the server is gone
                await watcher.close()
                del self.watchers[server]
                self.skipped = {k: v for k, v in self.skipped.items() if k[0] != server.label}

    async def _watch(self, server: TmuxServer) -> TmuxWatcher | None:
        watcher = TmuxWatcher(server, self.manifests, on_added=lambda pane: self._added(server, pane),
                              on_removed=lambda pane: self._removed(server, pane), attach_hooks=self.attach_hooks,
                              on_skipped=lambda session, hooks: self._skipped(server, session, hooks),
                              hooks="take")  # installed hooks report to the daemon (runtime/tmux_hooks.py)
        self.watchers[server] = watcher
        try:
            await watcher.start()
        except TmuxError as exc:
            if str(exc) not in self._warned:
                self._warned.add(str(exc))
                log.warning("not watching tmux on %s: %s", server.label, exc)
            with contextlib.suppress(Exception):
                await watcher.close()
            del self.watchers[server]
            return None
        return watcher

    def _added(self, server: TmuxServer, pane: TmuxPane) -> None:
        # ssh to one of these hosts is a view: its panes are cards of their own ([[remote]], core/panekind.py)
        pane.machine.watched_hosts = self.watched_hosts
        info = pane.info  # the same pane while its server lives: the same id across daemon restarts (board/ids.py)
        key = card_key("tmux", server.label, *info.server, info.pane_id)
        handle = TmuxHandle(self.hub, self.hub.new_id(key), pane, server, key=key)
        handle.marks = self.marks
        self.marks.update(handle)
        self.handles[(server, pane.pane_id)] = handle
        self.hub.add(handle)

    def _removed(self, server: TmuxServer, pane: TmuxPane) -> None:
        handle = self.handles.pop((server, pane.pane_id), None)
        if handle is not None:  # its card stays, exited, until the hub lets it expire
            handle.refresh()
            self.marks.forget(handle)

    def handle_of(self, pane_id: str) -> TmuxHandle | None:
        return next((h for h in self.handles.values() if h.id == pane_id), None)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for watcher in list(self.watchers.values()):
            await watcher.close()
        self.watchers.clear()

    # -- `panewatch new` in tmux -----------------------------------------------------------------

    async def new_window(self, argv: list[str], *, name: str, cwd: str, env: dict[str, str], cols: int,
                         rows: int) -> Card:
        """`argv` in a new window of the dedicated session; its card once the watcher has it. The command goes
        to tmux on a one-off client's stdin (`new_window_script`), never on a command line another user can
        read; the socket's directory and the socket first pass tmux's own rule."""
        server = dedicated_server()
        socket = Path(server.socket_path or "")
        try:
            check_socket_dir(socket.parent, create=True)  # tmux -S makes no folder (tmux -L would)
            check_socket(socket)
        except TmuxError as exc:
            raise wire_error(exc) from None
        try:
            sessions = await server.run("list-sessions", "-F", "#{session_name}")
        except TmuxError:
            sessions = []
        where = (["new-window", "-d", "-t", f"={DEDICATED_SESSION}:"] if DEDICATED_SESSION in sessions
                 else ["new-session", "-d", "-s", DEDICATED_SESSION, "-x", str(cols), "-y", str(rows)])
        try:
            out = await source(server, new_window_script(where, argv, name=name, cwd=cwd, env=env))
        except TmuxError as exc:
            raise RemoteError("spawn_failed", f"tmux could not start {argv[0]!r}: {exc}") from None
        pane_id = out[0].strip() if out else ""
        if not pane_id.startswith("%"):
            raise bad_request(f"tmux did not name the new pane: {out!r}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + NEW_TIMEOUT
        while (handle := self.handles.get((server, pane_id))) is None:
            if server not in self.watchers:
                await self._watch(server)
            if loop.time() > deadline:
                raise RemoteError("spawn_failed", f"the new tmux pane {pane_id} did not show up")
            await asyncio.sleep(0.05)
        return handle.card


# What tmux sets in a pane itself (its own terminal, its server and pane: the hooks of installed agents report
# by them), and the variables of a pane panewatch runs headless: none of the caller's may stand in for them.
TMUX_OWN_ENV = frozenset({"TMUX", "TMUX_PANE", "TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", ENV_PANE_ID,
                          ENV_TOKEN, ENV_SOCKET})


def literal(text: str) -> str:
    """`text` where tmux expands formats (`new-window -n` and `-c`): `#` doubled, so `#(…)`, `#S`, `#{…}` stay text."""
    return text.replace("#", "##")


def exact_argv(argv: list[str]) -> list[str]:
    """What tmux execs as `argv`, word for word. tmux runs a one-word command through `sh -c` (spawn.c) and
    execvp()s two words or more; `nice -n 0 --` execvp()s its operand unchanged, at the same niceness
    (`env --` would take a word holding `=` for an assignment)."""
    return argv if len(argv) > 1 else [shutil.which("nice") or "nice", "-n", "0", "--", *argv]


def new_window_script(where: list[str], argv: list[str], *, name: str, cwd: str, env: dict[str, str]) -> bytes:
    """The one tmux command line `new` sends (`where`: new-window or new-session and their own arguments),
    every argument quoted for tmux's parser: the caller's environment as `-e NAME=VALUE` (newlines kept: a
    quoted string spans lines in a sourced file), the name and directory taken literally, the command exact."""
    pairs = [arg for key, value in sorted(env.items()) if key not in TMUX_OWN_ENV for arg in ("-e", f"{key}={value}")]
    args = [*where, "-n", literal(name), "-c", literal(cwd), *pairs, "-P", "-F", "#{pane_id}", *exact_argv(argv)]
    return (" ".join(quote(arg) for arg in args) + "\n").encode("utf-8", "surrogateescape")


async def source(server: TmuxServer, script: bytes, timeout: float = NEW_TIMEOUT) -> list[str]:
    """Run tmux commands given on a one-off client's stdin (`source-file -`, the server started if none runs):
    what they print, TmuxError with tmux's words if one failed. Nothing of `script` is on a command line."""
    proc = await asyncio.create_subprocess_exec(*server.argv("start-server", ";", "source-file", "-"),
                                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(script), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise TmuxError(f"tmux did not answer within {timeout:g} s") from None
    if proc.returncode != 0:
        raise TmuxError(err.decode("utf-8", "replace").strip() or f"tmux exited {proc.returncode}")
    return out.decode("utf-8", "replace").splitlines()
