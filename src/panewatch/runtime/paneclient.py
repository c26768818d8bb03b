"""The hook side: `panewatch pane report STATE [--event NAME]` and `panewatch pane notify`.

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
"""

from __future__ import annotations

import _socket  # the C module: `socket` drags in enum and selectors, ~4 ms at every hook call
import os
import sys

from panewatch.core.hookevents import NOTIFICATION_STATES  # plain data, no costly imports

ENV_PANE_ID = "PANEWATCH_PANE_ID"
ENV_TOKEN = "PANEWATCH_TOKEN"
ENV_SOCKET = "PANEWATCH_SOCKET"

MAX_MESSAGE = 64 * 1024
SOCKET_TIMEOUT = 0.5
STDIN_TIMEOUT = 0.2
STDIN_LIMIT = 1024 * 1024  # Edit/Write payloads carry whole files; read (to drain the pipe), keep little

# Hook payload fields worth forwarding (small, useful for the board and notifications).
_PAYLOAD_KEYS = ("hook_event_name", "tool_name", "notification_type", "message", "reason", "error")
_FIELD_LIMIT = 300

_USAGE = "usage: panewatch pane report STATE [--event NAME] | panewatch pane notify"


def main(argv: list[str]) -> int:
    try:  # noqa: SIM105 - contextlib would be one more import on the hook's path
        _run(argv)
    except BaseException:  # a hook must never fail, whatever happened (even Ctrl-C, SystemExit)
        pass
    return 0


def _run(argv: list[str]) -> None:
    command = argv[0] if argv else ""
    if command == "report" and len(argv) >= 2:
        state, event = argv[1], _option(argv[2:], "--event")
        payload = _hook_input()
        _send(event or str(payload.get("hook_event_name", "")), state, payload)
    elif command == "notify":
        payload = _hook_input()
        notification_state = NOTIFICATION_STATES.get(str(payload.get("notification_type", "")))
        if notification_state is not None:
            _send("Notification", notification_state, payload)
    elif sys.stderr.isatty():  # a person typed it; a hook's stderr stays clean
        print(_USAGE, file=sys.stderr)


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
    return {k: v[:_FIELD_LIMIT] for k in _PAYLOAD_KEYS if isinstance(v := doc.get(k), str)}


def _send(event: str, state: str, payload: dict[str, str]) -> None:
    pane, token, path = (os.environ.get(k, "") for k in (ENV_PANE_ID, ENV_TOKEN, ENV_SOCKET))
    if not (pane and token and path):
        return
    data = _dumps({"pane": pane, "token": token, "event": event[:64], "state": state, "payload": payload}) + b"\n"
    if len(data) > MAX_MESSAGE:
        return
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(SOCKET_TIMEOUT)
        sock.connect(path)
        sock.sendall(data)
    finally:
        sock.close()


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
