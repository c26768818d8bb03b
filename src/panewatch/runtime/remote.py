"""A remote host's tmux panes, through the user's ssh: the tmux watcher (runtime/tmux_watch.py) over a link.

    RemoteServer   a TmuxServer whose every command runs as `ssh … HOST tmux [-S SOCK] …` (runtime/ssh.py),
                   so a control client is `ssh -T HOST tmux -C attach-session …`, one ssh session each,
                   all multiplexed over the host's one shared connection.
    RemotePane     a TmuxPane published as `NAME:%ID` (never a bare `%ID`: ids repeat across hosts), whose
                   identity comes from tmux's own formats (`pane_current_command`, refreshed by tmux's
                   subscription notification: no subprocess per look, on either side), whose link is a
                   state (`unreachable`), and which refuses input until its screen was resynchronised
                   after the link came back (PaneNotResyncedError, before the guard's own checks), and
                   when the round trip before a write gets no answer (a link hung without dropping).
    RemoteWatcher  a TmuxWatcher for one host. The link is down when an ssh carrying a control client
                   fails (exit status 255, or killed: they all share one connection) or a one-off command
                   over it does: every pane of the host turns `unreachable` at once. Then it reconnects with backoff
                   (BACKOFF, capped), re-lists, re-attaches, redraws each pane from `capture-pane` and
                   only then calls its link up (`PaneMachine.link`), and says how long the host was away
                   (`on_link`). A pane that is gone after the reconnect is exited.

Every host has its own watcher, tasks and timers on the one loop: nothing waits on another host's ssh.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from panewatch.core.identity import is_shell_name, match_agent
from panewatch.core.machine import Foreground, StateChange
from panewatch.core.policy import PolicyConfig
from panewatch.core.tmux_formats import MIN_VERSION, PaneInfo, parse_version
from panewatch.core.tmux_protocol import Event, Notification
from panewatch.errors import HostUnreachableError, PaneNotResyncedError, SshError, TmuxError, TmuxVersionError
from panewatch.runtime.driver import Manifests
from panewatch.runtime.settings import RemoteSettings
from panewatch.runtime.ssh import SSH_FAILED, SshOptions, classify, close_master, communicate, run_remote, ssh_argv
from panewatch.runtime.tmux import COMMAND_TIMEOUT, ControlClient, TmuxServer
from panewatch.runtime.tmux_watch import SUBSCRIPTION, TmuxPane, TmuxWatcher

log = logging.getLogger("panewatch.runtime.remote")

BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)  # seconds between reconnection attempts; the last repeats


@dataclass(frozen=True, slots=True)
class RemoteServer(TmuxServer):
    """tmux on `host` (what the user types after `ssh`), named `name` on the board."""

    host: str = ""
    name: str = ""
    ssh: SshOptions = field(default_factory=SshOptions)

    @classmethod
    def from_settings(cls, remote: RemoteSettings, ssh: SshOptions | None = None) -> RemoteServer:
        base = ssh or SshOptions()
        options = replace(base, connect_timeout=remote.connect_timeout, alive_interval=remote.alive_interval,
                          alive_count=remote.alive_count)
        return cls(socket_path=remote.tmux_socket, host=remote.host, name=remote.label, ssh=options)

    @property
    def label(self) -> str:
        return self.name or self.host

    def remote(self, *args: str) -> list[str]:
        """The command run on the host: its tmux, on the configured socket. `-u`: an ssh session often has no
        UTF-8 locale, and then tmux writes every tab (our formats' separator) and non-ASCII byte as `_`."""
        return ["tmux", "-u", *self.args(), *args]

    def argv(self, *args: str) -> list[str]:
        return ssh_argv(self.host, self.remote(*args), self.ssh)

    def command_argv(self, *args: str) -> list[str]:
        return self.argv(*args)  # `remote()` has the -u already

    def attach_argv(self, pane_id: str, inside: str | None) -> tuple[list[str], bool]:
        """The user's terminal attached to the host's tmux at that pane, over the shared connection (a tmux
        inside ssh is not nested as far as the local one is concerned: `$TMUX` does not cross ssh)."""
        return ssh_argv(self.host, self.remote("attach-session", "-t", pane_id), self.ssh, terminal=True), False

    async def run(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> list[str]:
        """A one-off tmux command on the host. SshError when ssh failed; TmuxError when tmux did."""
        proc = await asyncio.create_subprocess_exec(*self.argv(*args), stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    start_new_session=True)
        limit = max(timeout, self.ssh.connect_timeout + 2.0)
        try:
            out, err = await communicate(proc, limit)
        except TimeoutError:
            raise classify(self.label, None, f"no answer within {limit:g} s (timed out)") from None
        text = err.decode("utf-8", "replace")
        if proc.returncode == SSH_FAILED:
            raise classify(self.label, proc.returncode, text)
        if proc.returncode != 0:
            raise TmuxError(f"{self.label}: " + (text.strip() or f"tmux exited {proc.returncode}"))
        return out.decode("utf-8", "replace").splitlines()

    async def version(self) -> tuple[int, int] | None:
        """The host's tmux version (TmuxVersionError if too old, TmuxError if none); SshError if unreachable."""
        try:
            lines = await run_remote(self.host, ["tmux", "-V"], self.ssh, name=self.label)
        except SshError as exc:
            if type(exc) is SshError:  # the remote command failed, not ssh: no tmux there
                raise TmuxError(f"{self.label}: tmux is not installed there ({exc.detail})") from None
            raise
        text = lines[0] if lines else ""
        found = parse_version(text)
        if found is not None and found < MIN_VERSION:
            raise TmuxVersionError(f"{text} on {self.label}", ".".join(map(str, MIN_VERSION)))
        return found


@dataclass(frozen=True, slots=True)
class LinkChange:
    """The host's link went down (`error` says why) or came back (`away`: seconds it was down)."""

    host: str
    up: bool
    wall: float
    away: float | None = None
    error: str = ""

    def as_json(self) -> dict[str, object]:
        return {"t": round(self.wall, 6), "host": self.host, "link": "up" if self.up else "down",
                "away": None if self.away is None else round(self.away, 3), "error": self.error or None}


class RemotePane(TmuxPane):
    """One pane of a remote host (made by its RemoteWatcher)."""

    def __init__(self, watcher: RemoteWatcher, info: PaneInfo, client: ControlClient) -> None:
        super().__init__(watcher, info, client)
        self.host = watcher.host
        self.synced = True  # the screen is tmux's current one (False from a link drop until the next seed)
        self.away: float | None = None  # how long the link was down, for the first change after it is back
        self._fg: Foreground | None = None
        self._tty.close()  # the pane's pid is on the host: a /proc here would be some other process

    @property
    def board_id(self) -> str:
        """The pane's id everywhere outside tmux: `HOST:%ID`."""
        return f"{self.host}:{self.pane_id}"

    @property
    def target(self) -> str:
        return f"{self.host}:{self.info.target}"

    @property
    def pid(self) -> int | None:
        return None  # a pid on another machine: nothing here may look it up

    @property
    def foreground(self) -> Foreground | None:
        return self._fg

    def _emit(self, change: StateChange) -> None:
        super()._emit(replace(change, pane=self.board_id))

    # -- identity from tmux's formats --------------------------------------------------------------

    def _look_again(self, now: float) -> bool:
        """Who holds the pane, as tmux says (`pane_current_command`): the remote tty is not readable here."""
        self.looked_at = now
        command = self.info.current_command
        fg = None
        if command:
            fg = Foreground(pgid=self.info.pid, name=command, cmdline=(command,), is_shell=is_shell_name(command),
                            agent_id=match_agent(command, (command,), self.watcher.current()))
        changed, self._fg = fg != self._fg, fg
        return changed

    def _look_at_foreground(self, now: float) -> None:
        self._look_again(now)
        self._set_foreground(now, self._fg)

    def command_changed(self, command: str) -> None:
        """tmux's subscription said the pane's current command is now `command`."""
        if command != self.info.current_command:
            self.info = replace(self.info, current_command=command)
        if self.seeded and not self.machine.has_exited:
            self._look_at_foreground(self.clock())

    # -- the link ----------------------------------------------------------------------------------

    def link_down(self, detail: str) -> None:
        self.synced = False
        self.seeded = False  # output from a new client is dropped until the seed shows the pane's screen
        if not self.machine.has_exited:
            self._publish(self.machine.link(self.clock(), False, detail))

    def seed(self, info: PaneInfo, rows: list[bytes]) -> None:
        super().seed(info, rows)
        if not self.machine.link_up and not self.machine.has_exited:
            self.synced = True
            self._publish(self.machine.link(self.clock(), True))
            self.away = None

    # -- input -------------------------------------------------------------------------------------

    async def before_write(self) -> None:
        """Refused at once while the link is down or the screen not resynchronised; else the round trip over the
        link (TmuxPane.before_write): a link that hangs without dropping (a suspended laptop, a stopped sshd) has
        no reply within ROUND_TRIP_TIMEOUT and the write is refused, where it used to wait in the link and land
        on whatever the pane showed when the link came back."""
        self._refuse_unless_synced()
        await super().before_write()

    def write(self, data: bytes) -> None:
        """send-keys through the control connection; refused while the screen is not resynchronised."""
        self._refuse_unless_synced()
        super().write(data)

    def _refuse_unless_synced(self) -> None:
        if not self.synced or not self.machine.link_up:
            raise PaneNotResyncedError(self.board_id, self.machine.link_detail or "its screen is not resynchronised "
                                       "since the link came back")


class RemoteWatcher(TmuxWatcher):
    """Every pane of one remote host's tmux server. `start()` (SshError, TmuxError), then `close()`."""

    def __init__(self, server: RemoteServer, manifests: Manifests, *, policy: PolicyConfig | None = None,
                 on_added: Callable[[TmuxPane], None] | None = None,
                 on_removed: Callable[[TmuxPane], None] | None = None,
                 on_link: Callable[[LinkChange], None] | None = None,
                 wall: Callable[[], float] | None = None, backoff: tuple[float, ...] = BACKOFF,
                 attach_hooks: str = "skip", on_skipped: Callable[[str, list[str]], None] | None = None) -> None:
        super().__init__(server, manifests, policy=policy, on_added=on_added, on_removed=on_removed, wall=wall,
                         attach_hooks=attach_hooks, on_skipped=on_skipped)
        self.remote = server
        self.host = server.label
        self.on_link = on_link
        self.backoff = backoff
        self.link_up = False
        self.down_since: float | None = None
        self.error: SshError | None = None
        self.reconnects = 0
        self._reconnect: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Connect once: SshError (key refused, host key, unreachable) or TmuxError (none / too old) if not."""
        self._loop = asyncio.get_running_loop()
        await self.remote.version()
        await self.resync()
        self._timer = self._loop.call_later(2.0, self._on_timer)

    async def start_or_retry(self) -> SshError | None:
        """Connect; if the host cannot be reached, keep trying in the background (the daemon's way).
        Returns the first error (None: connected)."""
        try:
            await self.start()
            return None
        except SshError as exc:
            self._loop = asyncio.get_running_loop()
            self._host_down(exc)
            self._timer = self._loop.call_later(2.0, self._on_timer)
            return exc

    async def close(self) -> None:
        self._closing = True
        for task in [self._reconnect, *self._tasks]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await super().close()
        await asyncio.get_running_loop().run_in_executor(None, close_master, self.remote.host, self.remote.ssh)

    # -- panes -------------------------------------------------------------------------------------

    def _add(self, info: PaneInfo, client: ControlClient) -> TmuxPane:
        pane = RemotePane(self, info, client)
        self.panes[info.pane_id] = pane
        if self.on_added is not None:
            try:
                self.on_added(pane)
            except Exception:
                log.exception("remote pane listener failed")
        self._seed(pane)
        return pane

    def _on_timer(self) -> None:
        assert self._loop is not None
        if self.link_up:
            super()._on_timer()  # its look for sessions when none is attached is a one-off over the shared link
        else:
            self._timer = self._loop.call_later(2.0, self._on_timer)

    def _on_event(self, client: ControlClient, event: Event) -> None:
        if isinstance(event, Notification) and event.name == "subscription-changed" and len(event.args) >= 5 \
                and event.args[0] == SUBSCRIPTION:
            pane = self.panes.get(event.args[4])  # one client per session subscribes, for all its panes
            if isinstance(pane, RemotePane):
                _, _, value = event.line.partition(b" : ")
                command = value.decode("utf-8", "replace").strip()
                self.command_changed(pane, command)  # another process (respawn-pane) is another pane
                pane.command_changed(command)
            return
        super()._on_event(client, event)

    # -- the link ----------------------------------------------------------------------------------

    async def resync(self) -> None:
        clients = {pane_id: pane.client for pane_id, pane in self.panes.items()}
        try:
            await super().resync()
        except SshError as exc:
            self._host_down(exc)
            return
        if self._closing:
            return
        if not self.link_up:
            self._host_up()
        for pane_id, pane in self.panes.items():  # still to be redrawn, on a client that lived on (a new one
            if isinstance(pane, RemotePane) and not pane.synced and clients.get(pane_id) is pane.client \
                    and not pane.client.closed.is_set():  # was seeded by the resync itself)
                self._seed(pane)

    def _on_closed(self, client: ControlClient) -> None:
        self._forget(client)
        if self._closing or self._loop is None:
            return
        task = self._loop.create_task(self._after_close(client))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _after_close(self, client: ControlClient) -> None:
        """A control client ended. If its ssh failed, its panes are unreachable now; then probe the host."""
        proc = getattr(client, "_proc", None)
        code = None
        if proc is not None:
            with contextlib.suppress(TimeoutError):
                code = await asyncio.wait_for(proc.wait(), 2.0)
        if code is None or code == SSH_FAILED or code < 0:  # ssh failed, not tmux ending: the link is suspect
            self._host_down(HostUnreachableError(self.host, f"the ssh link carrying session {client.session} "
                                                            f"was lost (ssh exit status {code})"))
        self.schedule_resync()

    def _host_down(self, error: SshError) -> None:
        self.error = error
        if self.link_up or self.down_since is None:
            self.link_up = False
            self.down_since = time.monotonic()
            self._publish_link(LinkChange(self.host, False, self.wall(), None, str(error)))
        for pane in list(self.panes.values()):
            if isinstance(pane, RemotePane) and pane.synced:
                pane.link_down(str(error))
        if not self._closing and (self._reconnect is None or self._reconnect.done()):
            assert self._loop is not None
            self._reconnect = self._loop.create_task(self._reconnect_loop())

    def _host_up(self) -> None:
        away = None if self.down_since is None else time.monotonic() - self.down_since
        was_down = self.down_since is not None
        self.link_up, self.down_since, self.error = True, None, None
        if was_down:
            self.reconnects += 1
            for pane in self.panes.values():
                if isinstance(pane, RemotePane) and not pane.synced:
                    pane.away = away
            self._publish_link(LinkChange(self.host, True, self.wall(), away))

    async def _reconnect_loop(self) -> None:
        attempt = 0
        while not self._closing and not self.link_up:
            await asyncio.sleep(self.backoff[min(attempt, len(self.backoff) - 1)])
            attempt += 1
            try:
                await self.remote.version()
            except SshError as exc:
                self.error = exc
                continue
            except TmuxError as exc:
                log.warning("%s", exc)
                continue
            await self.resync()

    def _publish_link(self, change: LinkChange) -> None:
        log.info("%s", change.as_json())
        if self.on_link is not None:
            try:
                self.on_link(change)
            except Exception:
                log.exception("remote link listener failed")
