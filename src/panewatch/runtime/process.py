"""Who holds the pane: the tty's foreground process group → process name and command line → agent.

`tcgetpgrp` on the master is one cheap syscall; psutil runs only when the group changed. Every
psutil call tolerates the process vanishing under us (a command that just exited is the common
case, not an error).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath

import psutil

from panewatch.core.manifest import Manifest

SHELLS = frozenset({
    "sh", "bash", "zsh", "fish", "dash", "ash", "ksh", "mksh", "oksh", "loksh", "yash", "tcsh", "csh",
    "nu", "elvish", "xonsh", "pwsh", "busybox",
})
# A script run by one of these is named by its script path, not by the interpreter.
INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno", "python", "ruby", "perl", "env", *SHELLS})
# Package layouts put the real name above a generic entry point: .../@anthropic-ai/claude-code/cli.js
# Launchers that may start the agent as a child in the same group: their children are looked at.
WRAPPERS = frozenset({"npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "uv", "uvx", "pipx", "sudo", "doas", "timeout",
                      "nice", "nohup", "time", "script", "xargs", "watch", "direnv", "mise", "asdf", "nix", "make",
                      "just"})
_GENERIC_STEMS = frozenset({"cli", "index", "main", "entry", "run", "start", "app", "bundle"})
_GENERIC_DIRS = frozenset({"dist", "bin", "build", "lib", "src", "out", "esm", "cjs", "node_modules"})


@dataclass(frozen=True, slots=True)
class Foreground:
    pgid: int
    pid: int | None  # the process described: the group leader, else the group's newest process
    name: str
    cmdline: tuple[str, ...]
    is_shell: bool  # a shell holds the pane (no agent found anywhere in the group)
    agent_id: str | None  # the manifest whose `processes` match a member of the group


def _base(name: str) -> str:
    name = name.lstrip("-")  # login shells run as "-bash"
    return PurePath(name).name if name else ""


def _interpreter(name: str) -> bool:
    base = _base(name)
    return base in INTERPRETERS or base.startswith(("python", "node", "ruby", "perl"))


def _script(cmdline: tuple[str, ...]) -> str | None:
    """The script an interpreter runs: `-m module` for python, else the first non-option argument."""
    args = list(cmdline[1:])
    while args:
        arg = args.pop(0)
        if arg == "-m" and args:
            return args[0]
        if arg in ("-c", "-e", "--eval"):
            return None  # inline code names nothing
        if not arg.startswith("-"):
            return arg
    return None


def _path_names(path: str) -> list[str]:
    """Names a script path may carry: `.../bin/gemini` → gemini; `.../claude-code/cli.js` → claude-code."""
    p = PurePath(path)
    names = [p.name, p.stem]
    if p.stem in _GENERIC_STEMS or p.name in _GENERIC_STEMS:
        for parent in p.parents:
            if parent.name and parent.name not in _GENERIC_DIRS:
                names.append(parent.name)
                for suffix in ("-cli", "-code", "-agent"):
                    if parent.name.endswith(suffix):
                        names.append(parent.name[: -len(suffix)])
                break
    return names


def candidate_names(name: str, cmdline: Iterable[str]) -> list[str]:
    """Every name under which a process may be known, most specific first."""
    argv = tuple(cmdline)
    out: list[str] = []
    for value in (name, argv[0] if argv else ""):
        base = _base(value)
        if base:
            out.append(base)
    if argv and (_interpreter(name) or _interpreter(argv[0])):
        script = _script(argv)
        if script:
            out.extend(_path_names(script))
    return list(dict.fromkeys(out))


def match_agent(name: str, cmdline: Iterable[str], manifests: Iterable[Manifest]) -> str | None:
    """The id of the first manifest listing one of the process's names in `processes`."""
    names = candidate_names(name, cmdline)
    for manifest in manifests:
        wanted = set(manifest.processes)
        if any(n in wanted for n in names):
            return manifest.id
    return None


def is_shell_name(name: str) -> bool:
    return _base(name) in SHELLS


def _info(proc: psutil.Process) -> tuple[str, tuple[str, ...], float] | None:
    """Name, command line and start time; None for a process that is gone or a zombie (a command
    that just ended lingers as one until its shell reaps it, and must not hold the pane)."""
    try:
        with proc.oneshot():
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc.name(), tuple(proc.cmdline()), proc.create_time()
    except (psutil.Error, OSError):
        return None


def group_members(pgid: int, session_pid: int) -> list[psutil.Process]:
    """Processes of group `pgid`: searched among the session's descendants first (cheap), then everywhere."""
    def in_group(pid: int) -> bool:
        try:
            return os.getpgid(pid) == pgid
        except OSError:
            return False

    found: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        leader = psutil.Process(session_pid)
        found = [p for p in [leader, *leader.children(recursive=True)] if in_group(p.pid)]
    if not found:  # orphans re-parented away from the session
        with contextlib.suppress(psutil.Error):
            found = [p for p in psutil.process_iter() if in_group(p.pid)]
    return found


def _leader_alone(pgid: int, manifests: list[Manifest]) -> Foreground | None:
    """The group described from its leader alone, when that settles it: the leader is a known agent,
    or a plain program (`cat`, `vim`) that cannot be wrapping one. Listing a group's members means
    walking every process on the machine (psutil's children()); with hundreds of panes that walk,
    not detection, would dominate the runtime's CPU."""
    with contextlib.suppress(psutil.Error, OSError):
        leader = psutil.Process(pgid)
        info = _info(leader)
        if info is None or os.getpgid(pgid) != pgid:
            return None
        name, cmdline, _ = info
        agent_id = match_agent(name, cmdline, manifests)
        if agent_id is not None or not (_interpreter(name) or _base(name) in WRAPPERS):
            return Foreground(pgid, pgid, name, cmdline, False, agent_id)
    return None


def describe_group(pgid: int, session_pid: int, manifests: Iterable[Manifest]) -> Foreground:
    manifests = list(manifests)
    if (alone := _leader_alone(pgid, manifests)) is not None:
        return alone
    infos: list[tuple[psutil.Process, str, tuple[str, ...], float]] = []
    for proc in group_members(pgid, session_pid):
        info = _info(proc)
        if info is not None:
            infos.append((proc, *info))
    if not infos:
        return Foreground(pgid, None, "", (), False, None)
    # The leader names the job (`claude | tee log` is claude); without it the newest member does.
    infos.sort(key=lambda item: (item[0].pid != pgid, -item[3]))
    proc, name, cmdline, _ = infos[0]
    agent_id = None
    for _, member_name, member_cmdline, _ in infos:  # a wrapper (npx, a shell script) may run the agent
        agent_id = match_agent(member_name, member_cmdline, manifests)
        if agent_id is not None:
            break
    # Only shells in the group: a shell waits at its prompt (a shell running a command has children here).
    shell = agent_id is None and all(is_shell_name(item[1]) for item in infos)
    return Foreground(pgid, proc.pid, name, cmdline, shell, agent_id)


def foreground(master_fd: int, session_pid: int, manifests: Iterable[Manifest]) -> Foreground | None:
    """The foreground group of the pty whose master is `master_fd`; None if the pty is gone."""
    try:
        pgid = os.tcgetpgrp(master_fd)
    except OSError:
        return None
    if pgid <= 0:
        return None
    return describe_group(pgid, session_pid, manifests)


class ForegroundTracker:
    """Re-describes the foreground when its group changed, often for a short while after (a forked
    child shows the shell's name until it calls exec), then only every `refresh` seconds (a wrapper
    such as npx starts the agent later in the same group; a script may exec it)."""

    def __init__(self, settle: float = 2.0, min_interval: float = 0.1, refresh: float = 5.0,
                 max_refresh: float = 60.0) -> None:
        self.settle = settle
        self.min_interval = min_interval  # output can trigger hundreds of polls a second
        self.refresh = refresh
        self.max_refresh = max_refresh  # an unchanged group is re-described ever less often
        self._refresh = refresh
        self.current: Foreground | None = None
        self._changed_at = float("-inf")
        self._described_at = float("-inf")
        self.describes = 0

    def poll(self, now: float, pgid: int | None, session_pid: int, manifests: Iterable[Manifest]) -> bool:
        """Update `current` for group `pgid` seen at `now`; True if the description changed."""
        if pgid is None or pgid <= 0:
            changed = self.current is not None
            self.current = None
            return changed
        if self.current is None or pgid != self.current.pgid:
            self._changed_at = now
            self._refresh = self.refresh
        else:
            settling = now - self._changed_at <= self.settle
            interval = self.min_interval if settling else self._refresh
            if now - self._described_at < interval:
                return False
            if not settling:
                self._refresh = min(self._refresh * 2, self.max_refresh)
        self._described_at = now
        self.describes += 1
        new = describe_group(pgid, session_pid, manifests)
        changed = new != self.current
        if changed:
            self._refresh = self.refresh
        self.current = new
        return changed
