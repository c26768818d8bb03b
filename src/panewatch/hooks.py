"""The runtime side of hook reports: a unix-socket server, and the Claude Code `--settings` hooks.

A pane started by panewatch carries PANEWATCH_PANE_ID, PANEWATCH_TOKEN and PANEWATCH_SOCKET in
its environment; the agent's hooks run `panewatch pane report|notify` (paneclient.py), which
sends one JSON line to `ReportServer`. The server checks the pane id and its secret token, so a
stray or forged report cannot move another pane, and turns good lines into `combine.Report`s.
Anything wrong is counted in `ReportServer.rejected` by reason and dropped; nothing raises.

Claude Code 2.1.332 hook events used (checked against the pinned CLI's bundle and DESIGN.md):

    UserPromptSubmit, PreToolUse, PostToolUse,        → working   (a turn or a tool is running)
    PostToolUseFailure, PermissionDenied, ElicitationResult
    PermissionRequest                                 → blocked   (fires as the dialog is displayed:
                                                                   fast and certain, unlike
                                                                   Notification's 6 s delay)
    Elicitation                                       → blocked   (an MCP server asks the user)
    Notification                                      → `pane notify` maps notification_type
                                                        (permission_prompt → blocked, idle_prompt → idle)
    Stop, StopFailure                                 → done      (turn over, or ended by an API error)

Not used: SessionStart/SessionEnd (the process signal knows about exits; SessionStart also fires
after an auto-compaction mid-turn), SubagentStart/SubagentStop, Pre/PostCompact, Setup, config and
worktree events: none says whether the user is needed.

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

from panewatch import paths
from panewatch.combine import Report
from panewatch.paneclient import ENV_PANE_ID, ENV_SOCKET, ENV_TOKEN, MAX_MESSAGE, REPORT_STATES

__all__ = [
    "ENV_PANE_ID",
    "ENV_SOCKET",
    "ENV_TOKEN",
    "REJECT_REASONS",
    "ReportServer",
    "claude_hook_settings",
    "hook_launcher",
    "inject_claude_hooks",
    "remove_stale_sockets",
]

REJECT_REASONS = ("bad_token", "unknown_pane", "bad_json", "too_large", "bad_state", "timeout")
READ_TIMEOUT = 2.0  # a client that connects and says nothing is dropped after this
HOOK_TIMEOUT = 5  # seconds; Claude kills a hook after this (ours finishes in tens of ms)

# event -> `panewatch pane ...` arguments. Tool events get matcher "*" (all tools).
CLAUDE_HOOKS: dict[str, tuple[str, ...]] = {
    "UserPromptSubmit": ("report", "working"),
    "PreToolUse": ("report", "working"),
    "PermissionRequest": ("report", "blocked"),
    "PostToolUse": ("report", "working"),
    "PostToolUseFailure": ("report", "working"),
    "PermissionDenied": ("report", "working"),
    "Elicitation": ("report", "blocked"),
    "ElicitationResult": ("report", "working"),
    "Notification": ("notify",),
    "Stop": ("report", "done"),
    "StopFailure": ("report", "done"),
}
_TOOL_EVENTS = {"PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure", "PermissionDenied"}

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
        state = msg.get("state")
        if state not in REPORT_STATES:
            self.rejected["bad_state"] += 1
            return
        self.accepted += 1
        report = Report(str(state), self._clock(), "hook", _detail(msg.get("event"), msg.get("payload")))
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


def _detail(event: object, payload: object) -> str:
    """'PermissionRequest Bash', 'Notification: Claude needs your permission', ..."""
    parts = [event] if isinstance(event, str) and event else []
    if isinstance(payload, dict):
        if isinstance(tool := payload.get("tool_name"), str):
            parts.append(tool)
        if isinstance(message := payload.get("message"), str):
            parts.append(f"({message})")
    return " ".join(parts)[:200]


def hook_launcher() -> list[str]:
    """The fastest robust way for a hook to start `panewatch ...`: argv to pass as `panewatch_argv`.

    `python -I -S` skips site (no .pth scanning, no site-packages: the pane client is stdlib only)
    and isolates from the agent's cwd and PYTHON* variables, so a `panewatch/` or `json.py` in
    the project being edited cannot shadow ours. About twice as fast as the console script.
    """
    package_parent = str(Path(__file__).resolve().parent.parent)
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
        if event in _TOOL_EVENTS:
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
