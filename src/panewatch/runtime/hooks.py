"""The runtime side of hook reports: a unix-socket server, and the Claude Code `--settings` hooks.

A pane started by panewatch carries PANEWATCH_PANE_ID, PANEWATCH_TOKEN and PANEWATCH_SOCKET in
its environment; the agent's hooks run `panewatch pane report|notify` (paneclient.py), which
sends one JSON line to `ReportServer`. The server checks the pane id and its secret token, so a
stray or forged report cannot move another pane, and turns good lines into `combine.Report`s.
Anything wrong is counted in `ReportServer.rejected` by reason and dropped; nothing raises.

Which Claude Code hook events are used and what each reports: core/hookevents.py (one table,
also read by the hook client and by replays of recorded hooks).

Hooks run synchronously (no `"async": true`): Claude waits for each one, which keeps reports in
order (PreToolUse 'working' must not overtake PermissionRequest 'blocked'); the client's own
timeouts bound the wait and `HOOK_TIMEOUT` is Claude's backstop.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import re
import secrets
import shlex
import socket
import stat
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from panewatch.core.combine import Report
from panewatch.core.hookevents import CLAUDE_HOOK_STATES, CLAUDE_TOOL_EVENTS, hook_detail
from panewatch.core.states import report_state
from panewatch.runtime import paths
from panewatch.runtime.paneclient import ENV_PANE_ID, ENV_SOCKET, ENV_TOKEN, MAX_MESSAGE

__all__ = [
    "ENV_PANE_ID",
    "ENV_SOCKET",
    "ENV_TOKEN",
    "REJECT_REASONS",
    "PaneHooks",
    "ReportServer",
    "claude_hook_settings",
    "hook_launcher",
    "inject_claude_hooks",
    "remove_stale_sockets",
]

REJECT_REASONS = ("bad_token", "unknown_pane", "bad_json", "too_large", "bad_state", "timeout")
READ_TIMEOUT = 2.0  # a client that connects and says nothing is dropped after this
HOOK_TIMEOUT = 5  # seconds; Claude kills a hook after this (ours finishes in tens of ms)

# event -> `panewatch pane ...` arguments; the events whose notification_type decides run `pane notify`.
CLAUDE_HOOKS: dict[str, tuple[str, ...]] = {
    event: ("notify",) if state is None else ("report", state) for event, state in CLAUDE_HOOK_STATES.items()
}

OnReport = Callable[[str, Report], None]
_SOCKET_NAME = re.compile(r"reports-(\d{1,10})-[0-9a-f]+\.sock")  # `reports-{pid}-{hex}.sock`, see ReportServer


class ReportServer:
    """Receives hook reports on a unix socket (mode 0600) in the private runtime dir.

    `clock` stamps each Report's `t`; it must be the live loop's clock (combine compares it with
    the time the screen last changed).
    """

    def __init__(self, on_report: OnReport, *, path: Path | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.on_report = on_report
        self._path = path or paths.runtime_dir() / f"reports-{os.getpid()}-{secrets.token_hex(3)}.sock"
        self._clock = clock
        self._tokens: dict[str, bytes] = {}
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.accepted = 0
        self.rejected: Counter[str] = Counter()
        self.callback_errors = 0

    @property
    def path(self) -> Path:
        return self._path

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(self._path))
            # Before listen(): nobody can connect while the file still has the umask's mode.
            os.chmod(self._path, 0o600)
            self._server = await asyncio.start_unix_server(self._handle, sock=sock, limit=MAX_MESSAGE + 1)
        except BaseException:
            sock.close()
            raise

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self._path.unlink()

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

    def _accept(self, data: bytes) -> None:
        """Validate one message; count and drop it if anything is wrong."""
        try:
            msg = json.loads(data)
        except ValueError:
            msg = None
        if not isinstance(msg, dict) or not isinstance(msg.get("pane"), str) or not isinstance(msg.get("token"), str):
            self.rejected["bad_json"] += 1
            return
        expected = self._tokens.get(msg["pane"])
        if expected is None:
            self.rejected["unknown_pane"] += 1
            return
        if not hmac.compare_digest(expected, msg["token"].encode("utf-8", "replace")):
            self.rejected["bad_token"] += 1
            return
        state = report_state(msg.get("state"))
        if state is None:
            self.rejected["bad_state"] += 1
            return
        self.accepted += 1
        report = Report(state, self._clock(), "hook", hook_detail(msg.get("event"), msg.get("payload")))
        try:
            self.on_report(msg["pane"], report)
        except Exception:  # the runtime's bug must not take the socket down
            self.callback_errors += 1


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


def hook_launcher() -> list[str]:
    """The fastest robust way for a hook to start `panewatch ...`: argv to pass as `panewatch_argv`.

    `python -I -S` skips site (no .pth scanning, no site-packages: the pane client is stdlib only)
    and isolates from the agent's cwd and PYTHON* variables, so a `panewatch/` or `json.py` in
    the project being edited cannot shadow ours. About twice as fast as the console script.
    """
    package_parent = str(Path(__file__).resolve().parents[2])
    code = f"import sys;sys.path.insert(0,{package_parent!r});from panewatch.cli import main;sys.exit(main())"
    return [sys.executable, "-I", "-S", "-c", code]


def claude_hook_settings(panewatch_argv: list[str]) -> dict[str, Any]:
    """The `--settings` JSON object that adds panewatch's hooks to one Claude Code launch.

    `panewatch_argv` runs panewatch: `hook_launcher()` (fastest), or e.g. the console script.
    """
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event, args in CLAUDE_HOOKS.items():
        extra = ("--event", event) if args[0] == "report" else ()
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": shlex.join([*panewatch_argv, "pane", *args,
                                                                                      *extra]),
                                            "timeout": HOOK_TIMEOUT}]}
        if event in CLAUDE_TOOL_EVENTS:  # all tools
            entry = {"matcher": "*", **entry}
        hooks[event] = [entry]
    return {"hooks": hooks}


def inject_claude_hooks(argv: list[str], panewatch_argv: list[str], *, cwd: str | None = None) -> list[str]:
    """`argv` (a claude command line) with panewatch's hooks added through `--settings`.

    `--settings` merges with the user's settings files, so their own hooks keep running. If the
    command already has `--settings FILE-or-JSON`, ours are merged into (the last) one rather than
    clobbering it; if that value cannot be read we leave the command as it is (screen detection
    still works, and the user's settings must win).
    """
    ours = claude_hook_settings(panewatch_argv)
    if not argv:
        return list(argv)
    out = list(argv)
    found: tuple[int, str, bool] | None = None  # (index of the value, value, was `--settings=`)
    for i, arg in enumerate(out[1:], start=1):
        if arg == "--":
            break
        if arg == "--settings" and i + 1 < len(out):
            found = (i + 1, out[i + 1], False)
        elif arg.startswith("--settings="):
            found = (i, arg.partition("=")[2], True)
    if found is None:
        return [out[0], "--settings", json.dumps(ours, separators=(",", ":")), *out[1:]]
    index, value, inline = found
    theirs = _load_settings_value(value, cwd)
    if theirs is None:
        return out
    merged = json.dumps(_merge_hooks(theirs, ours), separators=(",", ":"))
    out[index] = f"--settings={merged}" if inline else merged
    return out


def _load_settings_value(value: str, cwd: str | None) -> dict[str, Any] | None:
    """Claude's `--settings` takes a JSON string or a path to a JSON file."""
    text = value
    if not value.lstrip().startswith("{"):
        path = Path(value).expanduser()
        if cwd is not None and not path.is_absolute():
            path = Path(cwd) / path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _merge_hooks(theirs: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    merged = dict(theirs)
    their_hooks = theirs.get("hooks")
    hooks: dict[str, Any] = dict(their_hooks) if isinstance(their_hooks, dict) else {}
    for event, entries in ours["hooks"].items():
        existing = hooks.get(event)
        hooks[event] = [*(existing if isinstance(existing, list) else []), *entries]
    merged["hooks"] = hooks
    return merged


class PaneHooks:
    """panewatch's hooks for the panes one process starts (`run`, the daemon, the real-agent runner):
    one ReportServer, started with the first pane that gets hooks, and the per-agent injection.

        hooks = PaneHooks(on_report, clock=loop.time)
        argv = await hooks.wire(pane_id, argv, env, cwd=cwd, manifests=watcher.get)   # env gains the pane's
        ...                                                                               # token and socket
        await hooks.close()

    `wire` leaves a command it does not know alone (only a command that *is* the agent takes its
    hook options: a wrapper like npx would take them as its own) and raises OSError when the report
    socket cannot be made, so the caller says "hooks disabled" and the screen still detects everything.
    """

    def __init__(self, on_report: OnReport, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._on_report = on_report
        self._clock = clock
        self.server: ReportServer | None = None

    @staticmethod
    def agent_of(argv: list[str], manifests: Callable[[str], Any]) -> str | None:
        """The agent whose hooks `argv` can take: the manifest's `processes` name the command itself."""
        claude = manifests("claude")
        if argv and claude is not None and Path(argv[0]).name in claude.processes:
            return "claude"
        return None

    async def wire(self, pane_id: str, argv: list[str], env: dict[str, str], *, cwd: str | None,
                   manifests: Callable[[str], Any] | None = None, agent: str | None = None) -> list[str]:
        """`argv` with the hooks of its agent (`agent`, or found with `manifests`); `env` gains the pane's
        reporting environment. Unchanged when no agent with hooks runs it."""
        agent = agent or (self.agent_of(argv, manifests) if manifests is not None else None)
        if agent != "claude":
            return list(argv)
        if self.server is None:
            server = ReportServer(self._on_report, clock=self._clock)
            await server.start()
            self.server = server
        env.update(self.server.pane_env(pane_id))
        return inject_claude_hooks(argv, hook_launcher(), cwd=cwd)

    def unwire(self, pane_id: str) -> None:
        if self.server is not None:
            self.server.unregister(pane_id)

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()
            self.server = None
