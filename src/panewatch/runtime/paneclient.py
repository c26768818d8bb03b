"""The hook side: `panewatch pane report STATE [--event NAME]` and `panewatch pane notify`; with `hook`
in front (`panewatch pane hook report …`), the hooks `panewatch hooks install` puts in the user's settings.

Runs inside agent hooks (Claude Code waits for PreToolUse hooks before it runs the tool), so it
must never fail and never slow the agent down:

* stdlib only, and only light modules (no asyncio, no argparse, no typing; from panewatch only the
  plain data of core/hookevents.py): startup dominates its cost. hooks.py, the runtime side, imports
  its constants from here rather than the other way round, so there is one definition and this stays
  light;
* always exits 0 and never writes to stdout (Claude shows a hook's stdout in some cases);
* without the pane environment (not started by panewatch) it does nothing at all;
* socket connect + send bounded by SOCKET_TIMEOUT; stdin read bounded by STDIN_TIMEOUT.

Wire format: one JSON line per connection,
`{"pane": ..., "token": ..., "event": ..., "state": ..., "payload": {...}}`, at most MAX_MESSAGE bytes.

Installed hooks (`pane hook …`, agents started by hand in tmux) name their pane by tmux's own
environment instead: `{"tmux": SOCKET_PATH, "tmux_pane": "%3", "token": USER_SECRET, …}`, sent to
`hooks-CRC.sock` in the private runtime dir (CRC: `tmux_socket_name` of the server's socket path), where
whoever watches that tmux server listens (runtime/tmux_watch.py). The token is the per-user secret
in SECRET_FILE there (0600). In a pane panewatch launched (PANEWATCH_PANE_ID/TOKEN set) they do
nothing: the per-launch hooks report that pane. No runtime dir, no secret, no listener: nothing, without
even reading the hook's stdin.

Outside a watched tmux pane (no `$TMUX`, or a server nobody watches) an installed hook reports the agent
itself, a *hook-only* pane (board/hookonly.py), to the daemon's AGENTS_SOCKET:
`{"hook_pid", "parent", "t", "terminal": {...}, "token": USER_SECRET, "event", "state", "payload"}`:
its own pid and its parent's (the daemon walks up from there past `sh -c` to the agent, with psutil, on
Linux and macOS alike: Claude Code runs hooks through `/bin/sh -c` in a new session, so the hook has no
terminal of its own), the time it started (`t`: one agent's hooks may arrive out of order), the terminal
variables it inherited from the agent (TERMINAL_KEYS: which terminal, which window) and the payload's
session id and cwd. It then waits (bounded by SOCKET_TIMEOUT) for the daemon to close the connection:
the walk happens while this process and its shell still exist.
"""

from __future__ import annotations

import _socket  # the C module: `socket` drags in enum and selectors, ~4 ms at every hook call
import os
import sys
import time
import zlib

from panewatch.core.hookevents import NOTIFICATION_STATES  # plain data, no costly imports

ENV_PANE_ID = "PANEWATCH_PANE_ID"
ENV_TOKEN = "PANEWATCH_TOKEN"
ENV_SOCKET = "PANEWATCH_SOCKET"

ENV_RUNTIME_DIR = "PANEWATCH_RUNTIME_DIR"
SECRET_FILE = "hooks.secret"
AGENTS_SOCKET = "agents.sock"  # the daemon's listener for hook-only panes (board/hookonly.py)

# What says which terminal (and which of its windows) an agent runs in; inherited by its hooks.
TERMINAL_KEYS = ("TERM_PROGRAM", "TERM_PROGRAM_VERSION", "TERM", "KITTY_WINDOW_ID", "KITTY_LISTEN_ON", "KITTY_PID",
                 "WEZTERM_PANE", "WEZTERM_UNIX_SOCKET", "ITERM_SESSION_ID", "TERM_SESSION_ID", "VSCODE_PID",
                 "VSCODE_INJECTION", "GHOSTTY_RESOURCES_DIR", "WT_SESSION", "ALACRITTY_WINDOW_ID",
                 "KONSOLE_DBUS_SESSION", "GNOME_TERMINAL_SCREEN", "WINDOWID", "STY", "ZELLIJ", "SSH_TTY", "TMUX_PANE")
_STARTED = time.time()  # when this hook began: orders one agent's reports (board/hookonly.py)

MAX_MESSAGE = 64 * 1024
SOCKET_TIMEOUT = 0.5
STDIN_TIMEOUT = 0.2
STDIN_LIMIT = 1024 * 1024  # Edit/Write payloads carry whole files; read (to drain the pipe), keep little

# Hook payload fields worth forwarding (small, useful for the board and notifications).
_PAYLOAD_KEYS = ("hook_event_name", "tool_name", "notification_type", "message", "reason", "error", "session_id",
                 "cwd")
_TOOL_INPUT_KEYS = ("command", "file_path", "path", "url", "query", "pattern")  # what a tool call is about
_FIELD_LIMIT = 300

_USAGE = "usage: panewatch pane [hook] report STATE [--event NAME] | panewatch pane [hook] notify"


def main(argv: list[str]) -> int:
    try:  # (not contextlib.suppress: one more import on the hook's path)
        if argv[:1] == ["hook"]:
            _installed(argv[1:])
        else:
            _run(argv)
    except BaseException:  # a hook must never fail, whatever happened (even Ctrl-C, SystemExit)
        pass
    return 0


def _run(argv: list[str]) -> None:
    pane, token, path = (os.environ.get(k, "") for k in (ENV_PANE_ID, ENV_TOKEN, ENV_SOCKET))
    if not (pane and token and path):
        if argv[:1] not in (["report"], ["notify"]) and sys.stderr.isatty():  # a person typed it
            print(_USAGE, file=sys.stderr)
        return
    message = _message(argv)
    if message is None:
        return
    message = {"pane": pane, "token": token, **message}
    data = _dumps(message) + b"\n"
    if len(data) > MAX_MESSAGE:
        return
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(SOCKET_TIMEOUT)
        sock.connect(path)
        sock.sendall(data)
    finally:
        sock.close()


def _message(argv: list[str]) -> dict[str, str | dict[str, str]] | None:
    """The report the hook's arguments and stdin make: event, state, payload; None: nothing to say."""
    command = argv[0] if argv else ""
    if command == "report" and len(argv) >= 2:
        state, event = argv[1], _option(argv[2:], "--event")
        payload = _hook_input()
        return {"event": (event or str(payload.get("hook_event_name", "")))[:64], "state": state, "payload": payload}
    if command == "notify":
        payload = _hook_input()
        notification_state = NOTIFICATION_STATES.get(str(payload.get("notification_type", "")))
        if notification_state is not None:
            return {"event": "Notification", "state": notification_state, "payload": payload}
    elif sys.stderr.isatty():  # a person typed it; a hook's stderr stays clean
        print(_USAGE, file=sys.stderr)
    return None


def runtime_dir() -> str | None:
    """runtime/paths.py `runtime_dir()` without creating it (pathlib costs a hook ~10 ms): None when it
    does not exist or is not private to us (then nobody of ours listens there)."""
    env = os.environ
    path = env.get(ENV_RUNTIME_DIR) or (env["XDG_RUNTIME_DIR"] + "/panewatch" if env.get("XDG_RUNTIME_DIR")
                                        else f"/tmp/panewatch-{os.getuid()}")
    try:
        st = os.lstat(path)  # the name itself: a link planted in /tmp is no directory of ours
    except OSError:
        return None
    is_dir = st.st_mode & 0o170000 == 0o040000  # S_ISDIR, without importing `stat` into every hook
    return path if is_dir and st.st_uid == os.getuid() and not st.st_mode & 0o077 else None


def tmux_socket_name(tmux_socket: str) -> str:
    """The report socket's name for the tmux server on `tmux_socket` (its path, as in `$TMUX`)."""
    return f"hooks-{zlib.crc32(tmux_socket.encode('utf-8', 'surrogateescape')):08x}.sock"


def read_secret(directory: str) -> str | None:
    """The per-user secret, if it is there, ours and private; else None."""
    try:
        fd = os.open(directory + "/" + SECRET_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        secret = os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return secret or None


def _installed(argv: list[str]) -> None:
    """An installed hook: report the tmux pane it runs in if someone watches that server, else the agent itself
    to the daemon (a hook-only pane)."""
    env = os.environ
    if env.get(ENV_PANE_ID) and env.get(ENV_TOKEN):
        return  # a pane panewatch launched: its per-launch hooks report it (no double report)
    if (directory := runtime_dir()) is None or (secret := read_secret(directory)) is None:
        return
    pane, tmux_socket = env.get("TMUX_PANE", ""), env.get("TMUX", "").split(",")[0]
    sock = None
    if pane and tmux_socket:
        sock = _connect(directory + "/" + tmux_socket_name(tmux_socket))
    if sock is not None:  # a watched tmux pane: the report lands on its card
        head: dict[str, str | dict[str, str]] = {"tmux": tmux_socket, "tmux_pane": pane}
    else:  # no tmux, or a server nobody watches: the agent itself, if the daemon listens
        sock = _connect(directory + "/" + AGENTS_SOCKET)
        if sock is None:
            return
        terminal = {k: v[:_FIELD_LIMIT] for k in TERMINAL_KEYS if (v := env.get(k))}
        head = {"hook_pid": str(os.getpid()), "parent": str(os.getppid()), "t": repr(_STARTED), "terminal": terminal}
    try:
        message = _message(argv)
        if message is None:
            return
        data = _dumps({**head, "token": secret, **message}) + b"\n"
        if len(data) > MAX_MESSAGE:
            return
        sock.sendall(data)
        if "hook_pid" in head:  # the daemon walks our parents while we (and our shell) still exist
            sock.recv(1)
    finally:
        sock.close()


def _connect(path: str) -> _socket.socket | None:
    """A connected socket to `path`, or None at once when nobody listens there."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(SOCKET_TIMEOUT)
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def _option(args: list[str], name: str) -> str:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return ""


def _hook_input() -> dict[str, str]:
    """The hook JSON on stdin, trimmed to a few small fields; {} if absent or unreadable."""
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    import select  # only when there is a pipe to read

    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    size = 0
    while size < STDIN_LIMIT:
        ready, _, _ = select.select([fd], [], [], STDIN_TIMEOUT)
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    doc = _loads(b"".join(chunks).decode("utf-8", "replace"))
    if not isinstance(doc, dict):
        return {}
    out = {k: v[:_FIELD_LIMIT] for k in _PAYLOAD_KEYS if isinstance(v := doc.get(k), str)}
    tool_input = doc.get("tool_input")
    if isinstance(tool_input, dict):
        about = next((v for k in _TOOL_INPUT_KEYS if isinstance(v := tool_input.get(k), str)), None)
        if about is not None:
            out["tool_input"] = about[:_FIELD_LIMIT]
    return out


# `import json` costs ~10 ms per hook call, almost all of it `re`, which only its pure-Python
# fallback scanner needs. The C parts it wraps are enough here; the full module is the fallback
# for odd input (the C scanner's own error path needs json.decoder) and for Pythons without _json.
class _ScanContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float
    memo: dict[str, str] = {}  # noqa: RUF012 - read by the C scanner, never mutated here


def _loads(text: str) -> object:
    """json.loads(text), or None if it is not JSON."""
    text = text.strip()
    if not text:
        return None
    try:
        from _json import make_scanner

        value, end = make_scanner(_ScanContext())(text, 0)  # type: ignore[arg-type]  # duck-typed context
        if end == len(text):
            return value
    except Exception:
        pass
    import json

    try:
        return json.loads(text)
    except ValueError:
        return None


def _dumps(message: dict[str, str | dict[str, str]]) -> bytes:
    """Compact JSON of a flat message whose values are strings or dicts of strings."""
    try:
        from _json import encode_basestring_ascii as quote
    except ImportError:
        import json

        return json.dumps(message).encode()

    def value(v: str | dict[str, str]) -> str:
        return quote(v) if isinstance(v, str) else "{" + ",".join(f"{quote(k)}:{quote(x)}" for k, x in v.items()) + "}"

    return ("{" + ",".join(f"{quote(k)}:{value(v)}" for k, v in message.items()) + "}").encode("ascii")
