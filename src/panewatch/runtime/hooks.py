"""The runtime side of hook reports: a unix-socket server, and the one hook wiring for launched panes.

A pane started by panewatch carries PANEWATCH_PANE_ID, PANEWATCH_TOKEN and PANEWATCH_SOCKET in
its environment; the agent's hooks run `panewatch pane report|notify` (paneclient.py), which
sends one JSON line to `ReportServer`. The server checks the pane id and its secret token, so a
stray or forged report cannot move another pane, and turns good lines into `combine.Report`s.
Anything wrong is counted in `ReportServer.rejected` by reason and dropped; nothing raises.

The hooks `panewatch hooks install` puts in the user's settings (runtime/hooksinstall.py) report a
tmux pane the user started by hand: by `$TMUX` (the server's socket) and `$TMUX_PANE`, with the
per-user secret of `UserSecret` instead of a pane token. The same server takes them when it is given
`tmux=` (who resolves a tmux pane to one of its panes) and `secret=`: runtime/tmux_watch.py makes one
per watched tmux server, at `hooks-CRC.sock` (paneclient.tmux_socket_name). Given `agents=` instead, it takes
installed hooks' reports from outside any watched pane (`{"hook_pid", "parent", "t", "terminal", …}`) as
`AgentReport`s: the daemon's AGENTS_SOCKET for hook-only panes (board/hookonly.py). Its sink runs before the
connection is closed, while the hook (which waits for the close) and its shell still exist.

Which hook events of each agent are used and what each reports: core/hookevents.py (one table,
also read by the hook client and by replays of recorded hooks); how each agent's launch takes
them: runtime/hookinject.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
import os
import re
import secrets
import socket
import stat
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from panewatch.core.combine import Report
from panewatch.core.hookevents import HOOK_STATES, hook_detail
from panewatch.core.states import report_state
from panewatch.runtime import paths, system
from panewatch.runtime.hookinject import (
    CLAUDE_HOOKS,
    HOOK_TIMEOUT,
    HooksUnavailable,
    claude_hook_settings,
    hook_launcher,
    inject_claude_hooks,
    inject_codex_hooks,
    inject_copilot_hooks,
    inject_gemini_hooks,
    inject_qwen_hooks,
    remove_quietly,
)
from panewatch.runtime.paneclient import ENV_PANE_ID, ENV_SOCKET, ENV_TOKEN, MAX_MESSAGE, SECRET_FILE, read_secret

__all__ = [
    "CLAUDE_HOOKS",
    "ENV_PANE_ID",
    "ENV_SOCKET",
    "ENV_TOKEN",
    "HOOK_TIMEOUT",
    "REJECT_REASONS",
    "AgentReport",
    "HooksUnavailable",
    "PaneHooks",
    "ReportServer",
    "UserSecret",
    "claude_hook_settings",
    "hook_launcher",
    "inject_claude_hooks",
    "inject_codex_hooks",
    "remove_stale_sockets",
]

REJECT_REASONS = ("bad_token", "unknown_pane", "bad_json", "too_large", "bad_state", "timeout", "bad_secret",
                  "bad_pid")
READ_TIMEOUT = 2.0  # a client that connects and says nothing is dropped after this

OnReport = Callable[[str, Report], None]
TmuxResolver = Callable[[str, str], str | None]  # (tmux socket path, tmux pane id) -> our pane id, or None
_SOCKET_NAME = re.compile(r"reports-(\d{1,10})-[0-9a-f]+\.sock")  # `reports-{pid}-{hex}.sock`, see ReportServer
_PID = re.compile(r"[1-9][0-9]{0,9}")


@dataclass(frozen=True, slots=True)
class AgentReport:
    """An installed hook's report from outside any watched pane, about the agent that ran it."""

    hook_pid: int  # the hook process (checked against the kernel's word where the socket gives it)
    parent: int  # the hook's parent as it said: `sh -c`, or the agent itself
    hook_time: float  # wall time the hook started: orders one agent's reports
    report: Report
    terminal: dict[str, str] = field(default_factory=dict)  # paneclient.TERMINAL_KEYS it inherited
    session: str = ""  # the agent's session id (hook payload)
    cwd: str = ""
    tool_input: str = ""  # what the tool call is about (a command, a file)


OnAgentReport = Callable[[AgentReport], None]


class UserSecret:
    """The per-user secret installed hooks carry: SECRET_FILE (0600) in the private runtime dir, made on
    first need (by a watcher that takes installed hooks' reports, or by `hooks install`) and read again
    when a report does not match (a runtime dir emptied at logout gets a new one)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or paths.runtime_dir()
        self._value = self.ensure()

    @property
    def path(self) -> Path:
        return self.directory / SECRET_FILE

    def ensure(self) -> bytes:
        """The secret, made if missing: written aside and linked into place, so two makers agree."""
        if (value := read_secret(str(self.directory))) is not None:
            return value.encode()
        temp = self.directory / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(3)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_hex(32).encode() + b"\n")
        finally:
            os.close(fd)
        try:
            with contextlib.suppress(FileExistsError):  # another maker was first: theirs is the secret
                os.link(temp, self.path)
        finally:
            temp.unlink()
        value = read_secret(str(self.directory))
        if value is None:
            raise PermissionError(f"{self.path} is not a private file of this user")
        return value.encode()

    def matches(self, token: str) -> bool:
        given = token.encode("utf-8", "replace")
        if hmac.compare_digest(self._value, given):
            return True
        fresh = read_secret(str(self.directory))
        if fresh is None or fresh.encode() == self._value:
            return False
        self._value = fresh.encode()
        return hmac.compare_digest(self._value, given)


class ReportServer:
    """Receives hook reports on a unix socket (mode 0600) in the private runtime dir.

    `clock` stamps each Report's `t`; it must be the live loop's clock (combine compares it with
    the time the screen last changed). With `tmux` and `secret` it also takes installed hooks'
    reports (`{"tmux", "tmux_pane", "token": the user secret, …}`): `tmux` names the pane they are for.
    """

    def __init__(self, on_report: OnReport, *, path: Path | None = None,
                 clock: Callable[[], float] = time.monotonic, tmux: TmuxResolver | None = None,
                 secret: UserSecret | None = None, agents: OnAgentReport | None = None) -> None:
        self.on_report = on_report
        self.on_agent = agents
        self._path = path or paths.runtime_dir() / f"reports-{os.getpid()}-{secrets.token_hex(3)}.sock"
        self._clock = clock
        self._tokens: dict[str, bytes] = {}
        self._tmux = tmux
        self._secret = secret
        self._inode: int | None = None  # of the socket file we bound: close() removes only that one
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.accepted = 0
        self.rejected: Counter[str] = Counter()
        self.callback_errors = 0

    @property
    def path(self) -> Path:
        return self._path

    async def start(self) -> None:
        """Listen at `path`, replacing whatever socket is there: bound aside, then renamed into place, so
        the path always answers (a listener it replaces keeps running but gets nothing more)."""
        temp = self._path.with_name(f".{os.getpid()}{secrets.token_hex(2)}")
        system.check_socket_path(str(self._path))  # a clear error, not bind()'s "AF_UNIX path too long"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(temp))
            # Before listen(): nobody can connect while the file still has the umask's mode.
            os.chmod(temp, 0o600)
            self._server = await asyncio.start_unix_server(self._handle, sock=sock, limit=MAX_MESSAGE + 1)
            os.rename(temp, self._path)
            self._inode = os.stat(self._path).st_ino
        except BaseException:
            sock.close()
            with contextlib.suppress(OSError):
                temp.unlink()
            raise

    @property
    def listening(self) -> bool:
        return self._server is not None

    def owns_path(self) -> bool:
        """Whether `path` is still our socket (another process may have taken it over since)."""
        try:
            return self._inode is not None and os.stat(self._path).st_ino == self._inode
        except OSError:
            return False

    async def close(self) -> None:
        owned = self.owns_path()
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
            self._server = None
        if owned:  # never another listener's socket that replaced ours
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()
        self._inode = None

    def register(self, pane_id: str) -> str:
        """Allow reports for `pane_id`; returns its fresh secret token (replacing any older one)."""
        token = secrets.token_hex(16)
        self._tokens[pane_id] = token.encode()
        return token

    def unregister(self, pane_id: str) -> None:
        self._tokens.pop(pane_id, None)

    def pane_env(self, pane_id: str) -> dict[str, str]:
        """Register `pane_id` and return the environment its process needs to report."""
        return {ENV_PANE_ID: pane_id, ENV_TOKEN: self.register(pane_id), ENV_SOCKET: str(self._path)}

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            data = await asyncio.wait_for(self._read_line(reader), READ_TIMEOUT)
            if data is not None:
                sock = writer.get_extra_info("socket")
                if self.on_agent is not None and sock is not None:  # the hook's pid, as the kernel says
                    self._accept(data, system.peer_pid(sock))
                else:
                    self._accept(data)
        except TimeoutError:
            self.rejected["timeout"] += 1
        except OSError:  # the client went away mid-message: nothing to judge
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_line(self, reader: asyncio.StreamReader) -> bytes | None:
        buf = b""
        while b"\n" not in buf:
            chunk = await reader.read(MAX_MESSAGE + 1 - len(buf))
            if not chunk:
                break
            buf += chunk
            if len(buf) > MAX_MESSAGE:
                self.rejected["too_large"] += 1
                return None
        return buf.split(b"\n", 1)[0]

    def _accept(self, data: bytes, peer: int | None = None) -> None:
        """Validate one message; count and drop it if anything is wrong. `peer`: the sender's pid (the kernel's)."""
        try:
            msg = json.loads(data)
        except ValueError:
            msg = None
        if not isinstance(msg, dict) or not isinstance(msg.get("token"), str):
            self.rejected["bad_json"] += 1
            return
        if "hook_pid" in msg:
            self._agent_report(msg, peer)
            return
        pane = self._installed_pane(msg) if "tmux_pane" in msg else self._launched_pane(msg)
        if pane is None:
            return
        state = report_state(msg.get("state"))
        if state is None:
            self.rejected["bad_state"] += 1
            return
        self.accepted += 1
        report = Report(state, self._clock(), "hook", hook_detail(msg.get("event"), msg.get("payload")))
        try:
            self.on_report(pane, report)
        except Exception:  # the runtime's bug must not take the socket down
            self.callback_errors += 1

    def _agent_report(self, msg: dict[str, Any], peer: int | None) -> None:
        """An installed hook outside any watched pane: the secret, then the pids (the kernel's word wins)."""
        if self._secret is None or self.on_agent is None or not self._secret.matches(msg["token"]):
            self.rejected["bad_secret"] += 1
            return
        hook_pid, parent, t, terminal = msg.get("hook_pid"), msg.get("parent"), msg.get("t"), msg.get("terminal", {})
        try:
            hook_time = float(t) if isinstance(t, str) else math.nan
        except ValueError:
            hook_time = math.nan
        if not (isinstance(hook_pid, str) and _PID.fullmatch(hook_pid) and isinstance(parent, str)
                and _PID.fullmatch(parent) and math.isfinite(hook_time) and isinstance(terminal, dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in terminal.items())):
            self.rejected["bad_json"] += 1
            return
        if peer is not None and peer != int(hook_pid):
            self.rejected["bad_pid"] += 1  # it says it is another process than the one that connected
            return
        state = report_state(msg.get("state"))
        if state is None:
            self.rejected["bad_state"] += 1
            return
        payload = msg.get("payload") if isinstance(msg.get("payload"), dict) else {}
        assert isinstance(payload, dict)

        def text(key: str) -> str:
            value = payload.get(key)
            return value[:300] if isinstance(value, str) else ""

        self.accepted += 1
        report = Report(state, self._clock(), "hook", hook_detail(msg.get("event"), payload))
        try:
            self.on_agent(AgentReport(int(hook_pid), int(parent), hook_time, report,
                                      {k[:64]: v[:300] for k, v in list(terminal.items())[:32]},
                                      text("session_id"), text("cwd"), text("tool_input")))
        except Exception:  # the runtime's bug must not take the socket down
            self.callback_errors += 1

    def _launched_pane(self, msg: dict[str, Any]) -> str | None:
        """A per-launch hook's pane, if its token is that pane's."""
        if not isinstance(msg.get("pane"), str):
            self.rejected["bad_json"] += 1
            return None
        expected = self._tokens.get(msg["pane"])
        if expected is None:
            self.rejected["unknown_pane"] += 1
            return None
        if not hmac.compare_digest(expected, msg["token"].encode("utf-8", "replace")):
            self.rejected["bad_token"] += 1
            return None
        pane: str = msg["pane"]
        return pane

    def _installed_pane(self, msg: dict[str, Any]) -> str | None:
        """An installed hook's pane: the secret first (a forged report learns nothing), then the tmux pane."""
        tmux, tmux_pane = msg.get("tmux"), msg.get("tmux_pane")
        if not isinstance(tmux, str) or not isinstance(tmux_pane, str):
            self.rejected["bad_json"] += 1
            return None
        if self._secret is None or self._tmux is None or not self._secret.matches(msg["token"]):
            self.rejected["bad_secret"] += 1
            return None
        pane = self._tmux(tmux, tmux_pane)
        if pane is None:
            self.rejected["unknown_pane"] += 1
        return pane


def remove_stale_sockets(directory: Path | None = None) -> list[Path]:
    """Remove the report sockets of processes that died without removing them (a `kill -9`); those
    of a live process are never touched. The daemon and `run` call this as they start."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(paths.runtime_dir() if directory is None else directory))
    except OSError:
        return removed
    for entry in entries:
        match = _SOCKET_NAME.fullmatch(entry.name)
        with contextlib.suppress(OSError):
            if match is None or _pid_alive(int(match[1])) or not stat.S_ISSOCK(entry.stat(follow_symlinks=False)
                                                                                 .st_mode):
                continue
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a process: not ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process, or no pid at all: not ours to judge
        return True
    return True


class PaneHooks:
    """panewatch's hooks for the panes one process starts (`run`, the daemon, the real-agent runner):
    one ReportServer, started with the first pane that gets hooks, and the per-agent injection
    (runtime/hookinject.py: Claude `--settings`, Codex `-c` overrides with their trust, Gemini and Qwen a
    per-launch settings file).

        hooks = PaneHooks(on_report, clock=loop.time)
        argv = await hooks.wire(pane_id, argv, env, cwd=cwd, manifests=watcher.get)   # env gains the pane's
        ...                                                                               # token and socket
        hooks.unwire(pane_id); await hooks.close()

    `wire` leaves a command it does not know alone (only a command that *is* the agent takes its
    hook options: a wrapper like npx would take them as its own) and raises OSError when the report
    socket cannot be made or the agent cannot take hooks this way (HooksUnavailable, saying why), so
    the caller says "hooks disabled" and the screen still detects everything.
    """

    AGENTS = tuple(HOOK_STATES)

    def __init__(self, on_report: OnReport, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._on_report = on_report
        self._clock = clock
        self.server: ReportServer | None = None
        self._files: dict[str, Path] = {}  # pane id -> its per-launch settings file (Gemini, Qwen), plugin (Copilot)

    @classmethod
    def agent_of(cls, argv: list[str], manifests: Callable[[str], Any]) -> str | None:
        """The agent whose hooks `argv` can take: the manifest's `processes` name the command itself."""
        if not argv:
            return None
        name = Path(argv[0]).name
        for agent in cls.AGENTS:
            manifest = manifests(agent)
            if manifest is not None and name in manifest.processes:
                return agent
        return None

    async def wire(self, pane_id: str, argv: list[str], env: dict[str, str], *, cwd: str | None,
                   manifests: Callable[[str], Any] | None = None, agent: str | None = None) -> list[str]:
        """`argv` with the hooks of its agent (`agent`, or found with `manifests`); `env` gains the pane's
        reporting environment. Unchanged when no agent with hooks runs it."""
        agent = agent or (self.agent_of(argv, manifests) if manifests is not None else None)
        if agent not in self.AGENTS or not argv:
            return list(argv)
        launcher = hook_launcher()
        if agent == "gemini":  # before the socket: a launch that cannot take hooks gets no token either
            path = inject_gemini_hooks(env, launcher, f"gemini-{os.getpid()}-{secrets.token_hex(4)}.json")
            self._files[pane_id] = path
        elif agent == "qwen":
            path = inject_qwen_hooks(env, launcher, f"qwen-{os.getpid()}-{secrets.token_hex(4)}.json")
            self._files[pane_id] = path
        elif agent == "copilot":
            argv, path = inject_copilot_hooks(argv, launcher, f"copilot-{os.getpid()}-{secrets.token_hex(4)}")
            self._files[pane_id] = path
        if self.server is None:
            server = ReportServer(self._on_report, clock=self._clock)
            await server.start()
            self.server = server
        env.update(self.server.pane_env(pane_id))
        if agent == "codex":
            return inject_codex_hooks(argv, launcher)
        if agent == "claude":
            return inject_claude_hooks(argv, launcher, cwd=cwd)
        return list(argv)

    def unwire(self, pane_id: str) -> None:
        if self.server is not None:
            self.server.unregister(pane_id)
        if (path := self._files.pop(pane_id, None)) is not None:
            remove_quietly(path)

    async def close(self) -> None:
        for pane_id in list(self._files):
            self.unwire(pane_id)
        if self.server is not None:
            await self.server.close()
            self.server = None
