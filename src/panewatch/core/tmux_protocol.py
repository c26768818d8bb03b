"""tmux control mode (`tmux -C`), the wire: bytes in, events out; commands out as lines. Pure.

What a control client reads, line by line (measured with tmux 3.3a):

    %begin TIME NUM FLAGS        a command's reply starts; FLAGS 1: a command this client sent
    ...lines...                  its output, raw
    %end TIME NUM FLAGS          ... succeeded, or `%error TIME NUM FLAGS`: it failed (the lines say why)
    %output %ID DATA             bytes pane %ID wrote; bytes below 32 and backslash as 3-digit octal
    %extended-output %ID AGE ... : DATA    the same once `pause-after` is set (AGE: ms behind)
    %pause %ID / %continue %ID   flow control: tmux stopped (resumed) sending that pane's output
    %NAME ARGS                   any other notification (%layout-change, %window-add, %exit, ...)

`ControlParser.feed(bytes)` returns `Output`, `Reply` and `Notification` events; a line it cannot read
is a `Notification` named "" (never an exception: garbage never crashes the reader). Bytes above 127
are passed as they are, so a UTF-8 character split across two notifications stays split: the screen
joins it. `command(...)` quotes each argument for tmux's parser (single quotes; `#` and `%` and `;`
inside them are plain text, a `'` is closed, written as `"'"` and reopened).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

MAX_LINE = 16 * 1024 * 1024  # a line longer than this (no newline in sight) is dropped, not buffered for ever


@dataclass(frozen=True, slots=True)
class Output:
    pane: str  # "%3"
    data: bytes
    age: int | None = None  # ms behind, from %extended-output


@dataclass(frozen=True, slots=True)
class Reply:
    number: int
    ok: bool
    lines: tuple[bytes, ...]
    ours: bool  # FLAGS 1: the reply to a command this client sent (0: e.g. the attach in argv)


@dataclass(frozen=True, slots=True)
class Notification:
    name: str  # "layout-change" (without the %), or "" for a line that is not one
    args: tuple[str, ...]  # the words after the name (split on single spaces)
    line: bytes = b""


Event = Output | Reply | Notification

_BEGIN = re.compile(rb"%begin (\d+) (\d+) (\d+)\Z")


_ESCAPES = {f"{n:03o}".encode(): bytes((n,)) for n in range(256)}
# A backslash that does not start a 3-digit octal escape of one byte: never in tmux's own output (it
# writes a backslash as \134), only in garbage, which the slow path below keeps as it is.
_NOT_AN_ESCAPE = re.compile(rb"\\(?![0-3][0-7][0-7])")


def decode_output(data: bytes) -> bytes:
    """`%output` data to the bytes the pane wrote: `\\ooo` escapes decoded; anything else as it is."""
    if b"\\" not in data:
        return data
    if _NOT_AN_ESCAPE.search(data) is None:  # every escape is one: C decodes them (a spinner frame has dozens)
        decoded: bytes = codecs.escape_decode(data)[0]
        return decoded
    parts = data.split(b"\\")
    out = [parts[0]]
    for part in parts[1:]:  # one dict lookup per escape: a flood of control bytes stays cheap
        byte = _ESCAPES.get(part[:3])
        out.append(byte + part[3:] if byte is not None else b"\\" + part)
    return b"".join(out)


@dataclass
class _Block:
    time: bytes
    number: int
    flags: bytes
    lines: list[bytes] = field(default_factory=list)


class ControlParser:
    """Feed bytes read from a control client's stdout; get events, in the order tmux sent them."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._block: _Block | None = None
        self._skipping = False  # inside an over-long line: drop until its newline

    def feed(self, data: bytes) -> list[Event]:
        events: list[Event] = []
        self._buffer += data
        start = 0
        while (end := self._buffer.find(b"\n", start)) >= 0:
            line = bytes(self._buffer[start:end])
            start = end + 1
            if self._skipping:
                self._skipping = False
                continue
            event = self._line(line[:-1] if line.endswith(b"\r") else line)
            if event is not None:
                events.append(event)
        del self._buffer[:start]
        if len(self._buffer) > MAX_LINE:
            self._buffer.clear()
            self._skipping = True
        return events

    def _line(self, line: bytes) -> Event | None:
        block = self._block
        if block is not None:
            for word in (b"%end ", b"%error "):
                if line == word + block.time + b" " + str(block.number).encode() + b" " + block.flags:
                    self._block = None
                    return Reply(block.number, word == b"%end ", tuple(block.lines), block.flags == b"1")
            block.lines.append(line)
            return None
        if match := _BEGIN.match(line):
            self._block = _Block(match.group(1), int(match.group(2)), match.group(3))
            return None
        if line.startswith(b"%output "):
            pane, _, data = line[8:].partition(b" ")
            return Output(pane.decode("ascii", "replace"), decode_output(data))
        if line.startswith(b"%extended-output "):
            head, sep, data = line[17:].partition(b" : ")
            words = head.split(b" ")
            if sep and len(words) >= 2 and words[1].isdigit():
                return Output(words[0].decode("ascii", "replace"), decode_output(data), int(words[1]))
            return Notification("", (), line)
        if line.startswith(b"%") and len(line) > 1:
            text = line[1:].decode("utf-8", "replace").split(" ")
            return Notification(text[0], tuple(text[1:]), line)
        return Notification("", (), line)


def quote(arg: str) -> str:
    """One argument for tmux's command parser, taken literally."""
    if arg and re.fullmatch(r"[A-Za-z0-9_@%=:.,/+-]+", arg) and not arg.startswith(("%", "=")):
        return arg  # plain words (`-t`, `@3`) as they are; `%...` is quoted (a `%if` directive otherwise)
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def command(*args: str) -> bytes:
    """A command line to write to a control client: its arguments quoted, newlines refused."""
    if any("\n" in a or "\r" in a for a in args):
        raise ValueError("a tmux command argument cannot hold a newline (send it as a key)")
    return (" ".join(quote(a) for a in args) + "\n").encode("utf-8")


def routes(client: str, pane_ids: list[str], state: str, per_command: int = 64) -> list[bytes]:
    """`refresh-client -t CLIENT -A %ID:STATE ...`: which panes' output this client gets (`on`, `off`,
    `continue`), `per_command` panes a line. The same lines as `command()` writes, built without quoting
    each `%ID:STATE` through the regex: a watcher of 1000 panes with 63 clients sends 63k of them."""
    if any(ch in state for ch in "'\\\n\r"):
        raise ValueError(f"not a pane state: {state!r}")
    head = command("refresh-client", "-t", client)[:-1]
    args = [f" -A '{pane_id}:{state}'" if pane_id[:1] == "%" and pane_id[1:].isdigit()
            else " -A " + quote(f"{pane_id}:{state}") for pane_id in pane_ids]
    return [head + "".join(args[i:i + per_command]).encode("utf-8") + b"\n" for i in range(0, len(args), per_command)]


# Keys by name for send-keys: what the input guard writes (Enter after text, an answer's key, a terminal
# view's arrows) reaches the pane as tmux's own key, the way a user typing in tmux would send it.
_NAMED = {b"\r": "Enter", b"\n": "Enter", b"\t": "Tab", b"\x7f": "BSpace", b"\x1b": "Escape",
          b"\x1b[A": "Up", b"\x1b[B": "Down", b"\x1b[C": "Right", b"\x1b[D": "Left",
          b"\x1bOA": "Up", b"\x1bOB": "Down", b"\x1bOC": "Right", b"\x1bOD": "Left",
          b"\x1b[H": "Home", b"\x1b[F": "End", b"\x1b[2~": "IC", b"\x1b[3~": "DC",
          b"\x1b[5~": "PPage", b"\x1b[6~": "NPage", b"\x1b[Z": "BTab"}
_KEY_TOKENS = re.compile(rb"\x1b\[[0-9;]*[A-Za-z~]|\x1bO[A-Za-z]|[\x00-\x1f\x7f]|[^\x00-\x1f\x7f]+")


def send_keys(target: str, data: bytes) -> list[bytes]:
    """Command lines that type `data` into pane `target` exactly: printable text with `-l` (literal),
    known keys by name, any other control byte or sequence as hex bytes (`-H`)."""
    lines: list[bytes] = []
    for token in _KEY_TOKENS.findall(data):
        if token in _NAMED:
            lines.append(command("send-keys", "-t", target, _NAMED[token]))
        elif token[0] >= 0x20 and token[0] != 0x7F and b"\x1b" not in token:
            text = token.decode("utf-8", "replace")
            lines.append(command("send-keys", "-t", target, "-l", "--", text))
        elif len(token) == 1 and 1 <= token[0] <= 26:
            lines.append(command("send-keys", "-t", target, "C-" + chr(token[0] + 96)))
        else:
            lines.append(command("send-keys", "-t", target, "-H", *(f"{b:02x}" for b in token)))
    return lines
