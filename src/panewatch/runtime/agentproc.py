"""The agent behind an installed hook, and the terminal it runs in (hook-only panes, board/hookonly.py).

An agent runs its hooks as children: Claude Code 2.1.332 through `/bin/sh -c` in a new session (so the
hook has no terminal of its own), others through a shell or directly. `find_agent` walks up from the hook's
parent past shells and launchers to the first process a manifest names (else the first that is neither),
and reads its controlling tty, cwd and start time there: psutil on Linux and macOS alike (no /proc of our
own). The walk must run while the hook still exists: ReportServer calls its sink before closing the
connection the hook waits on.

`Terminal` says, from the variables the hook inherited (paneclient.TERMINAL_KEYS), which terminal program
shows the agent and which of its windows: what the card says, and what runtime/goto.py can focus.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import psutil

from panewatch.core.identity import WRAPPERS, base_name, is_shell_name, match_agent
from panewatch.core.manifest import Manifest

MAX_WALK = 8  # ancestors looked at: hook ← sh ← (npx/node launcher) ← agent, with room to spare


@dataclass(frozen=True)
class AgentProcess:
    pid: int
    started: float  # psutil's create_time: with the pid, what makes it this process (pids are reused)
    name: str
    agent: str | None  # the manifest naming it; None: not an agent we know (the first non-shell ancestor)
    tty: str  # its controlling terminal ("/dev/pts/3", "/dev/ttys004"); "" if none
    cwd: str
    process: psutil.Process = field(compare=False, repr=False)

    def alive(self) -> bool:
        """Still this process (not a reused pid) and not a zombie."""
        try:
            return self.process.is_running() and self.process.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def find_agent(parent: int, manifests: Iterable[Manifest]) -> AgentProcess | None:
    """The agent that ran a hook whose parent is `parent`; None if that process is gone or unreadable."""
    known = list(manifests)
    fallback: psutil.Process | None = None
    try:
        proc: psutil.Process | None = psutil.Process(parent)
    except psutil.Error:
        return None
    for _ in range(MAX_WALK):
        if proc is None or proc.pid <= 1:
            break
        try:
            with proc.oneshot():
                name, cmdline = proc.name(), proc.cmdline()
        except psutil.Error:
            return None
        agent = match_agent(name, cmdline, known)
        if agent is not None:
            return _described(proc, name, agent)
        if fallback is None and not (is_shell_name(name) or base_name(name) in WRAPPERS):
            fallback = proc
        try:
            proc = proc.parent()
        except psutil.Error:
            break
    return _described(fallback, fallback.name(), None) if fallback is not None else None


def _described(proc: psutil.Process, name: str, agent: str | None) -> AgentProcess | None:
    try:
        with proc.oneshot():
            started, tty = proc.create_time(), terminal_of(proc)
    except psutil.Error:
        return None
    cwd = ""
    with contextlib.suppress(psutil.Error, OSError):
        cwd = proc.cwd()
    return AgentProcess(proc.pid, started, name, agent, tty, cwd, proc)


def terminal_of(proc: psutil.Process) -> str:
    """The process's controlling terminal ("" if none). psutil maps device numbers to /dev names once per process
    (`_psposix.get_terminal_map` is memoized): a terminal opened after the daemon's first look is not in that map,
    and psutil says None. On a miss the map is read again."""
    tty = proc.terminal()
    if tty is None:
        refresh = getattr(getattr(getattr(psutil, "_psposix", None), "get_terminal_map", None), "cache_clear", None)
        if callable(refresh):
            refresh()
            tty = proc.terminal()
    return tty or ""


# TERM_PROGRAM values and markers → the terminal's name for people.
_PROGRAMS = {"iTerm.app": "iTerm2", "Apple_Terminal": "Terminal.app", "vscode": "VS Code", "WezTerm": "WezTerm",
             "ghostty": "Ghostty", "tmux": "tmux", "kitty": "kitty", "Hyper": "Hyper", "WarpTerminal": "Warp",
             "Tabby": "Tabby", "rio": "Rio", "zed": "Zed"}
_MARKERS = (("KITTY_WINDOW_ID", "kitty"), ("WEZTERM_PANE", "WezTerm"), ("ITERM_SESSION_ID", "iTerm2"),
            ("GHOSTTY_RESOURCES_DIR", "Ghostty"), ("WT_SESSION", "Windows Terminal"),
            ("KONSOLE_DBUS_SESSION", "Konsole"), ("GNOME_TERMINAL_SCREEN", "GNOME Terminal"),
            ("ALACRITTY_WINDOW_ID", "Alacritty"), ("STY", "screen"), ("ZELLIJ", "zellij"), ("SSH_TTY", "ssh"))


@dataclass(frozen=True)
class Terminal:
    """The terminal program an agent runs in, as its environment says (the hook inherited it)."""

    env: dict[str, str]

    @property
    def name(self) -> str:
        if self.env.get("TMUX_PANE"):  # a tmux server nobody watches (a watched one's pane has the report)
            return "tmux"
        program = self.env.get("TERM_PROGRAM", "")
        if program in _PROGRAMS and program != "tmux":
            return _PROGRAMS[program]
        for key, name in _MARKERS:
            if self.env.get(key):
                return name
        return _PROGRAMS.get(program, program) or "terminal"  # $TERM names a terminal type, not a program

    @property
    def window(self) -> str:
        """Which of its windows, for people ("window 3", "pane 7"): "" when it does not say."""
        if (kitty := self.env.get("KITTY_WINDOW_ID", "")).isdigit():
            return f"window {kitty}"
        if (wezterm := self.env.get("WEZTERM_PANE", "")).isdigit():
            return f"pane {wezterm}"
        if session := self.env.get("ITERM_SESSION_ID", ""):
            return f"session {session.split(':')[0]}"
        if (pane := self.env.get("TMUX_PANE", "")).startswith("%") and pane[1:].isdigit():
            return f"pane {pane}"
        return ""


def where(terminal: Terminal, tty: str, cwd: str) -> str:
    """Where an agent is, for a person to go there: 'kitty window 3 · /dev/pts/4 · ~/src/app'."""
    home = ""
    with contextlib.suppress(RuntimeError, KeyError):
        from pathlib import Path

        home = str(Path.home())
    shown = "~" + cwd[len(home):] if home and (cwd == home or cwd.startswith(home + "/")) else cwd
    parts = [" ".join(p for p in (terminal.name, terminal.window) if p), tty, shown]
    return " · ".join(p for p in parts if p)
