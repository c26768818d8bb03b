"""tmux formats panewatch asks for, and what their answers mean. Pure.

* `PANE_FORMAT`, `parse_pane`: one line per pane (`list-panes -a -F` / `display-message -p`) →
  `PaneInfo` (ids, target, size, cursor, alternate screen, mode, tty, pid, synchronize-panes, the server's
  identity, current command, names, title, current directory). The free-text fields come last and
  tmux itself replaces every control character in them (`free_text()`): a process named `x\nFORGED` or a
  directory with a tab in its name cannot split a line or shift a field (nor, in a notification, forge
  a line of the control protocol). A line that is not exactly one pane's fields is None: unknown.
* `parse_layout`: a `%layout-change` layout → each pane's cell (which panes the window has; a cell is the
  pane plus its border line with `pane-border-status`, so a pane's own size is asked of tmux).
* `parse_version`: `tmux -V` → (major, minor); `MIN_VERSION` is what panewatch needs (pause-after,
  client flags on attach).
* `WATCH_HOOKS`, `tripping_hooks`: the user's tmux hooks that panewatch's own clients and commands
  would run (`show-hooks` output → "name: command" each), so that watching never runs them.
* `CLIENT_FORMAT`, `parse_client`: one line per client (`list-clients -F`) → `ClientInfo` (its process, whether
  it is a control client, the pane it shows, its tty, whether its terminal has the focus).
* `seed_bytes`: tmux's view of a pane (`capture-pane -p -e -N`, its cursor and title) → bytes that
  draw the same screen into a fresh Screen, so a pane already showing a dialog is judged at once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MIN_VERSION = (3, 2)

# What tmux runs hooks for while panewatch watches: its control clients attaching and leaving, and each command it
# sends (`after-NAME`). tmux has no client flag to leave a client out of hooks: a user's hook there (say
# `select-window`) would change the user's current window, layout or options because panewatch attached.
WATCH_HOOKS = ("client-attached", "client-detached", "client-session-changed", "after-attach-session",
               "after-refresh-client", "after-display-message", "after-capture-pane", "after-list-panes",
               "after-list-sessions", "after-set-option", "after-list-clients")
# A hook that reads one of these formats tells clients apart on purpose: `if -F '#{client_control_mode}' '' …`
# (set when a client attaches and for its commands), or `#{hook_client}` (what a `client-detached` hook still
# knows: a terminal client is named after its tty, `/dev/pts/N`; a control client `client-PID`).
CONTROL_GUARDS = ("client_control_mode", "hook_client")

# A format that expands to `name`'s value with every control character (tab, newline, ESC, DEL...) replaced
# by U+FFFD: a regex substitution done by tmux. `[[:cntrl:]]` is written inside `#{l:...}` because tmux ends a
# modifier at its first `:` (a bare `s/[[:cntrl:]]/...` expands to nothing); the argument is expanded first.
# A control byte spelt out in the format would be fragile (a range follows the locale's collation) and a
# newline cannot travel in a command line at all.
TEXT_REPLACEMENT = "\ufffd"


def free_text(name: str) -> str:
    """The format for free-text variable `name` (a process name, a directory, a title) with control characters
    replaced: its value is one field on one line, whatever the program, the repository or the user named."""
    return "#{s/#{l:[[:cntrl:]]}/" + TEXT_REPLACEMENT + "/:" + name + "}"


_FIELDS = ("session_id", "window_id", "pane_id", "window_index", "pane_index", "pane_width", "pane_height",
           "cursor_x", "cursor_y", "cursor_flag", "alternate_on", "pane_in_mode", "pane_dead", "pane_pid",
           "pane_tty", "synchronize-panes", "window_panes", "pid", "start_time")
_TEXT_FIELDS = ("pane_current_command", "session_name", "window_name", "pane_title", "pane_current_path")
PANE_FORMAT = "\t".join(["#{" + name + "}" for name in _FIELDS] + [free_text(name) for name in _TEXT_FIELDS])
_COUNT = len(_FIELDS) + len(_TEXT_FIELDS)


@dataclass(frozen=True, slots=True)
class PaneInfo:
    session_id: str  # "$0"
    window_id: str  # "@1"
    pane_id: str  # "%3"
    window_index: int
    pane_index: int
    cols: int
    rows: int
    cursor_x: int
    cursor_y: int
    cursor_visible: bool
    alternate_on: bool
    in_mode: bool  # copy mode (or another tmux mode) is showing in the pane
    dead: bool  # remain-on-exit: the program ended, the pane stays
    pid: int
    tty: str
    current_command: str
    session_name: str
    window_name: str
    title: str
    # Fields added later: defaults, so that a PaneInfo built by hand (tests, benchmarks) stays valid.
    cwd: str = ""  # the pane's current directory (`pane_current_path`), control characters replaced
    synchronized: bool = False  # `synchronize-panes` in force for this pane: tmux copies its keys to the others
    window_panes: int = 1  # panes in its window (with synchronize-panes, the ones keys could be copied into)
    server: tuple[int, int] = (0, 0)  # the tmux server's pid and start time: who numbered this pane

    @property
    def target(self) -> str:
        """`session:window.pane`, what a user types after `-t`."""
        return f"{self.session_name}:{self.window_index}.{self.pane_index}"

    @property
    def copies_keys(self) -> bool:
        """Keys typed here would also reach other panes of the window (tmux's `synchronize-panes`)."""
        return self.synchronized and self.window_panes > 1

    def same_process(self, other: PaneInfo) -> bool:
        """Whether `other` describes the same pane process: same server (a server restarted on the same socket
        numbers its panes from %0 again), same first process and tty (respawn-pane starts another)."""
        return (self.pane_id, self.server, self.pid, self.tty) == (other.pane_id, other.server, other.pid, other.tty)


def _int(value: str) -> int:
    return int(value) if value.lstrip("-").isdigit() else 0


def parse_pane(line: bytes | str) -> PaneInfo | None:
    """One `PANE_FORMAT` line; None for a line that is not exactly one (a field too many or too few: unknown)."""
    decoded = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    values = decoded.split("\t")
    if len(values) != _COUNT or not values[2].startswith("%") or not values[0].startswith("$"):
        return None
    v = dict(zip(_FIELDS + _TEXT_FIELDS, values, strict=True))
    return PaneInfo(v["session_id"], v["window_id"], v["pane_id"], _int(v["window_index"]), _int(v["pane_index"]),
                    max(1, _int(v["pane_width"])), max(1, _int(v["pane_height"])), _int(v["cursor_x"]),
                    _int(v["cursor_y"]), v["cursor_flag"] != "0", v["alternate_on"] == "1",
                    v["pane_in_mode"] not in ("", "0"), v["pane_dead"] == "1", _int(v["pane_pid"]), v["pane_tty"],
                    v["pane_current_command"], v["session_name"], v["window_name"], v["pane_title"],
                    cwd=v["pane_current_path"], synchronized=v["synchronize-panes"] not in ("", "0"),
                    window_panes=max(1, _int(v["window_panes"])), server=(_int(v["pid"]), _int(v["start_time"])))


_CELL = re.compile(r"(\d+)x(\d+),\d+,\d+(?:,(\d+))?")


def parse_layout(layout: str) -> dict[str, tuple[int, int]]:
    """Pane id ("%3") → (cols, rows) from a window layout such as
    `b25f,160x40,0,0{80x40,0,0,1,79x40,81,0[79x20,81,0,2,79x19,81,21,3]}`. Garbage gives {}."""
    _, _, body = layout.partition(",")
    sizes: dict[str, tuple[int, int]] = {}
    for match in _CELL.finditer(body):
        if match.group(3) is not None:
            sizes["%" + match.group(3)] = (int(match.group(1)), int(match.group(2)))
    return sizes


def parse_version(text: str) -> tuple[int, int] | None:
    """`tmux 3.3a` → (3, 3); `tmux next-3.4` → (3, 4); `tmux master` → None (unknown: assume new)."""
    match = re.search(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def seed_bytes(info: PaneInfo, rows: Sequence[bytes]) -> bytes:
    """Bytes that draw `rows` (`capture-pane -p -e -N`: each visible row with its SGR attributes) on a
    fresh screen of the pane's size: the alternate screen if the pane is on it, the title, the cursor."""
    out = bytearray(b"\x1bc")  # a full reset: whatever the screen held before is gone
    if info.alternate_on:
        out += b"\x1b[?1049h"
    if info.title:
        out += b"\x1b]2;" + info.title.encode("utf-8", "replace").replace(b"\x07", b"").replace(b"\x1b", b"") + b"\x07"
    for y, row in enumerate(rows[: info.rows]):
        # Each row placed absolutely: a full-width row leaves a pending wrap, never a scroll.
        # No reset between rows: tmux writes each row's attributes relative to where the last row left them.
        out += b"\x1b[%d;1H" % (y + 1) + row.rstrip(b"\r\n")
    out += b"\x1b[0m\x1b[%d;%dH" % (info.cursor_y + 1, info.cursor_x + 1)
    if not info.cursor_visible:
        out += b"\x1b[?25l"
    return bytes(out)


def tripping_hooks(lines: Sequence[str]) -> list[str]:
    """`show-hooks` lines (`NAME[i] COMMAND`; a bare NAME is unset) → "NAME: COMMAND" for each hook in WATCH_HOOKS
    that would run for panewatch's clients: every set one that does not tell clients apart (CONTROL_GUARDS)."""
    found = []
    for line in lines:
        name, _, command = line.strip().partition(" ")
        if command and name.split("[", 1)[0] in WATCH_HOOKS and not any(g in command for g in CONTROL_GUARDS):
            found.append(f"{name.split('[', 1)[0]}: {command}")
    return found


_CLIENT_FIELDS = ("client_pid", "client_control_mode", "pane_id", "session_id", "client_flags", "client_tty",
                  "client_name")
CLIENT_FORMAT = "\t".join("#{" + name + "}" for name in _CLIENT_FIELDS)


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """A client of a tmux server, as `list-clients -F CLIENT_FORMAT` tells it."""

    pid: int
    control: bool  # a control-mode client (panewatch's own, or another program's): nobody looks through it
    pane_id: str  # the pane it shows: its session's current window's active pane
    session_id: str
    focused: bool  # its terminal has the focus (tmux knows only with focus-events on; else it says focused)
    tty: str
    name: str


def parse_client(line: bytes | str) -> ClientInfo | None:
    """One `CLIENT_FORMAT` line; None for a line that is not one."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    values = text.split("\t", len(_CLIENT_FIELDS) - 1)
    if len(values) != len(_CLIENT_FIELDS) or not values[0].isdigit() or not values[2].startswith("%"):
        return None
    v = dict(zip(_CLIENT_FIELDS, values, strict=True))
    return ClientInfo(int(v["client_pid"]), v["client_control_mode"] == "1", v["pane_id"], v["session_id"],
                      "focused" in v["client_flags"].split(","), v["client_tty"], v["client_name"])
