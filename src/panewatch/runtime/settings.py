"""User settings from `config_dir()/config.toml`. No file is needed: every key has a default.

    [notify]
    backends = ["desktop", "terminal"]   # which notifiers fire: desktop, terminal, command
    terminal = "osc9"                    # terminal backend: "osc9", "osc777" or "bell"
    on_turn_end = false                  # also notify when a working turn ends (working → idle)
    cooldown = 30                        # seconds between two notifications per pane and state
    command = ""                         # run via /bin/sh -c on each notification (set = enabled);
                                         # PANEWATCH_PANE/STATE/AGENT/PROMPT/HOST in its environment
    command_timeout = 10                 # seconds before a hanging command is killed
    urls = []                            # Apprise URLs (runtime/push.py): phones and chats; `${NAME}` reads the
                                         # environment; $PANEWATCH_NOTIFY_URLS adds more

    [tmux]
    watch = "auto"                       # the daemon watches every tmux server of the user ("off": none)
    new = "auto"                         # `panewatch new` opens a window in tmux when installed ("off": headless)
    attach_hooks = "skip"                # a session whose tmux hooks would run for panewatch's client is not
                                         # watched (said once); "run": attach anyway
    [board]
    port = 0                             # the board's loopback TCP port; 0: the last daemon's if free, else any
                                         # (`serve --port N` and $PANEWATCH_BOARD_PORT override it)
    exited_ttl = 600                     # seconds the card of a pane that is gone stays (0: until dismissed)

    [[remote]]                           # a host whose tmux panewatch watches through ssh (one table each)
    host = "user@box"                    # what you would type after `ssh`: user@host or a Host alias
    tmux_socket = ""                     # optional: the remote server's socket (tmux -S); default server else
    name = ""                            # optional: how its panes are named (NAME:%ID); the host by default
    alive_interval = 3                   # optional: ssh keepalive every N s ...
    alive_count = 3                      # ... N unanswered = the link is dead (unreachable after 9 s)
    connect_timeout = 5                  # optional: seconds to wait for the host to answer

A problem never stops panewatch: a bad value falls back to that key's default, a file that is not
TOML falls back to all defaults, and each problem becomes a warning naming the file and the key.
`strict=True` (for a checker) raises SettingsError with every problem instead.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from panewatch.errors import SettingsError
from panewatch.runtime.paths import config_dir

BACKENDS = ("desktop", "terminal", "command")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://\S+")
TERMINAL_KINDS = ("osc9", "osc777", "bell")


@dataclass(frozen=True)
class NotifySettings:
    backends: tuple[str, ...] = ("desktop", "terminal")
    terminal: str = "osc9"
    on_turn_end: bool = False
    cooldown: float = 30.0
    command: str = ""
    command_timeout: float = 10.0
    urls: tuple[str, ...] = ()  # Apprise URLs: never logged (runtime/push.py names them by scheme and host)


@dataclass(frozen=True)
class AgentsSettings:
    update_from: str = ""  # where `panewatch agents update` fetches manifests (URL or directory)


@dataclass(frozen=True)
class TmuxSettings:
    watch: str = "auto"  # "auto": the daemon watches every tmux server of the user; "off": none
    new: str = "auto"  # "auto": `panewatch new` opens a window in tmux when tmux is installed; "off": headless
    attach_hooks: str = "skip"  # "skip": not watched where the user's hooks would run for our client; "run"


@dataclass(frozen=True)
class BoardSettings:
    port: int = 0  # 0: the last daemon's port if free, else any free port
    exited_ttl: float = 600.0  # seconds a gone pane's card stays on the board (0: until dismissed)


@dataclass(frozen=True)
class RemoteSettings:
    """One `[[remote]]` host."""

    host: str
    tmux_socket: str | None = None
    name: str = ""  # "" = the host
    alive_interval: int = 3
    alive_count: int = 3
    connect_timeout: int = 5

    @property
    def label(self) -> str:
        """The host's name on the board and in pane ids (`label:%3`)."""
        return self.name or self.host


@dataclass(frozen=True)
class Settings:
    notify: NotifySettings = field(default_factory=NotifySettings)
    agents: AgentsSettings = field(default_factory=AgentsSettings)
    tmux: TmuxSettings = field(default_factory=TmuxSettings)
    board: BoardSettings = field(default_factory=BoardSettings)
    path: str = ""  # the file read; "" when only defaults apply
    warnings: tuple[str, ...] = ()
    remotes: tuple[RemoteSettings, ...] = ()


def settings_path() -> Path:
    return config_dir() / "config.toml"


def load_settings(path: Path | None = None, *, strict: bool = False) -> Settings:
    path = path or settings_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings()
    except (OSError, UnicodeDecodeError) as exc:
        return _finish(path, {}, [f"{path}: cannot read ({exc}); using defaults"], strict)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return _finish(path, {}, [f"{path}: not valid TOML ({exc}); using defaults"], strict)
    problems: list[str] = []
    for key in doc:
        if key not in ("notify", "agents", "tmux", "board", "remote"):
            problems.append(f"{path}: {key}: unknown setting (known: notify, agents, tmux, board, remote)")
    table = doc.get("notify", {})
    if not isinstance(table, dict):
        problems.append(f"{path}: notify: must be a table ([notify])")
        table = {}
    remotes = remote_settings(doc.get("remote", []), path, problems)
    done = _finish(path, _notify(table, path, problems), problems, strict, _agents(doc.get("agents", {}), path,
                                                                                     problems),
                   _tmux(doc.get("tmux", {}), path, problems),
                   _board(doc.get("board", {}), path, problems))
    return replace(done, remotes=remotes)


def _tmux(table: Any, path: Path, problems: list[str]) -> TmuxSettings:
    if not isinstance(table, dict):
        problems.append(f"{path}: tmux: must be a table ([tmux])")
        return TmuxSettings()
    choices = {"watch": ("auto", "off"), "new": ("auto", "off"), "attach_hooks": ("skip", "run")}
    for key in sorted(set(table) - set(choices)):
        problems.append(f"{path}: tmux.{key}: unknown key (known: {', '.join(choices)})")
    values: dict[str, str] = {}
    for key, allowed in choices.items():
        value = table.get(key, allowed[0])
        if value not in allowed:
            problems.append(f"{path}: tmux.{key}: must be \"{allowed[0]}\" or \"{allowed[1]}\", got {value!r}; "
                            f"using \"{allowed[0]}\"")
            value = allowed[0]
        values[key] = value
    return TmuxSettings(**values)


def _agents(table: Any, path: Path, problems: list[str]) -> AgentsSettings:
    if not isinstance(table, dict):
        problems.append(f"{path}: agents: must be a table ([agents])")
        return AgentsSettings()
    for key in sorted(set(table) - {"update_from"}):
        problems.append(f"{path}: agents.{key}: unknown key (known: update_from)")
    value = table.get("update_from", "")
    if not isinstance(value, str):
        problems.append(f"{path}: agents.update_from: must be a URL or a directory (a string)")
        value = ""
    return AgentsSettings(value.strip())


def _board(table: Any, path: Path, problems: list[str]) -> BoardSettings:
    if not isinstance(table, dict):
        problems.append(f"{path}: board: must be a table ([board])")
        return BoardSettings()
    for key in sorted(set(table) - {"port", "exited_ttl"}):
        problems.append(f"{path}: board.{key}: unknown key (known: port, exited_ttl)")
    port = table.get("port", 0)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        problems.append(f"{path}: board.port: must be a TCP port 1-65535 (0: any free port), got {port!r}; "
                        "using any free port")
        port = 0
    ttl = table.get("exited_ttl", BoardSettings.exited_ttl)
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl < 0:
        problems.append(f"{path}: board.exited_ttl: must be seconds (0: until dismissed), got {ttl!r}; using "
                        f"{BoardSettings.exited_ttl:g}")
        ttl = BoardSettings.exited_ttl
    return BoardSettings(port, float(ttl))


def _finish(path: Path, notify: dict[str, Any], problems: list[str], strict: bool,
            agents: AgentsSettings | None = None, tmux: TmuxSettings | None = None,
            board: BoardSettings | None = None) -> Settings:
    if strict and problems:
        raise SettingsError(str(path), problems)
    return Settings(NotifySettings(**notify), agents or AgentsSettings(), tmux or TmuxSettings(),
                    board or BoardSettings(), str(path),
                    tuple(problems))


def _notify(table: dict[str, Any], path: Path, problems: list[str]) -> dict[str, Any]:
    """Valid values of [notify]; every bad one is left out (so it keeps its default) and reported."""
    known = {f.name for f in fields(NotifySettings)}
    out: dict[str, Any] = {}

    def bad(key: str, why: str) -> None:
        problems.append(f"{path}: notify.{key}: {why}, got {table[key]!r}; using the default")

    for key, value in table.items():
        if key not in known:
            problems.append(f"{path}: notify.{key}: unknown key (known: {', '.join(sorted(known))})")
        elif key == "backends":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                bad(key, "must be a list of names")
                continue
            unknown = [v for v in value if v not in BACKENDS]
            if unknown:
                problems.append(f"{path}: notify.backends: unknown {unknown} ignored (known: {', '.join(BACKENDS)})")
            out[key] = tuple(dict.fromkeys(v for v in value if v in BACKENDS))
        elif key == "terminal":
            if value not in TERMINAL_KINDS:
                bad(key, f"must be one of {', '.join(TERMINAL_KINDS)}")
            else:
                out[key] = value
        elif key == "on_turn_end":
            if not isinstance(value, bool):
                bad(key, "must be true or false")
            else:
                out[key] = value
        elif key in ("cooldown", "command_timeout"):
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                bad(key, "must be a number of seconds >= 0")
            else:
                out[key] = float(value)
        elif key == "command":
            if not isinstance(value, str):
                bad(key, "must be a string")
            else:
                out[key] = value
        elif key == "urls":  # never quoted back: a URL holds its service's token
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                problems.append(f"{path}: notify.urls: must be a list of Apprise URLs (strings); none used")
                continue
            good = [v.strip() for v in value if _URL.match(v.strip())]
            for index, v in enumerate(value):
                if not _URL.match(v.strip()):
                    problems.append(f"{path}: notify.urls[{index}]: not a URL (scheme://…); left out")
            out[key] = tuple(dict.fromkeys(good))
    if "command" in out.get("backends", ()) and not out.get("command"):
        problems.append(f"{path}: notify.backends: 'command' is listed but notify.command is empty")
    return out


_REMOTE_INTS = {"alive_interval": (1, 300), "alive_count": (1, 100), "connect_timeout": (1, 300)}
_REMOTE_KEYS = ("host", "tmux_socket", "name", *_REMOTE_INTS)


def remote_settings(value: Any, path: Path | str, problems: list[str]) -> tuple[RemoteSettings, ...]:
    """The `[[remote]]` tables; an entry with a problem in `host` or `name` is left out, a bad optional
    value falls back to its default; each problem names the entry (`remote[1].host`)."""
    if not isinstance(value, list):
        problems.append(f"{path}: remote: must be an array of tables ([[remote]] entries)")
        return ()
    out: list[RemoteSettings] = []
    labels: set[str] = set()
    for index, entry in enumerate(value):
        where = f"{path}: remote[{index}]"
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be a table with host = \"...\"")
            continue
        for key in sorted(set(entry) - set(_REMOTE_KEYS)):
            problems.append(f"{where}.{key}: unknown key (known: {', '.join(_REMOTE_KEYS)})")
        host = entry.get("host")
        if not isinstance(host, str) or not host.strip():
            problems.append(f"{where}.host: required: what you would type after `ssh` (user@host or a Host alias)")
            continue
        host = host.strip()
        if host.startswith("-") or any(c.isspace() or c in "'\"\\;|&$`" for c in host):
            problems.append(f"{where}.host: {host!r} is not a host name (no spaces, quotes or leading '-')")
            continue
        name = entry.get("name", "")
        if not isinstance(name, str) or any(c.isspace() or c == ":" for c in name.strip()):
            problems.append(f"{where}.name: must be a word without spaces or ':' (it prefixes pane ids), got "
                            f"{name!r}")
            continue
        socket = entry.get("tmux_socket")
        if socket is not None and (not isinstance(socket, str) or "\n" in socket):
            problems.append(f"{where}.tmux_socket: must be a path (tmux -S) on the remote host; using the default "
                            "server")
            socket = None
        numbers: dict[str, int] = {}
        for key, (low, high) in _REMOTE_INTS.items():
            if key in entry:
                number = entry[key]
                if isinstance(number, bool) or not isinstance(number, int) or not low <= number <= high:
                    problems.append(f"{where}.{key}: must be a whole number of seconds from {low} to {high}, got "
                                    f"{number!r}; using the default")
                else:
                    numbers[key] = number
        remote = RemoteSettings(host, socket or None, name.strip(), **numbers)
        if remote.label in labels:
            problems.append(f"{where}: a second host named {remote.label!r} (give one a distinct name = ...)")
            continue
        labels.add(remote.label)
        out.append(remote)
    return tuple(out)
