"""Who holds the pane: the tty's foreground process group → process name and command line → agent
(what the names mean: core/identity.py).

`tcgetpgrp` on the master is one cheap syscall; psutil runs only when the group changed. Every
psutil call tolerates the process vanishing under us (a command that just exited is the common
case, not an error).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import replace

import psutil

from panewatch.core.identity import WRAPPERS, base_name, is_interpreter, is_shell_name, match_agent
from panewatch.core.machine import Foreground
from panewatch.core.manifest import Manifest
from panewatch.runtime import system


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
    or a plain program (`cat`, `vim`) that cannot be wrapping one: no interpreter, no known launcher,
    no child of its own (a compiled wrapper may start the agent as its child: its members are read, and
    core/panekind.py judges the group by all of them). Listing a group's members means
    walking every process on the machine (psutil's children()); with hundreds of panes that walk,
    not detection, would dominate the runtime's CPU."""
    with contextlib.suppress(psutil.Error, OSError):
        leader = psutil.Process(pgid)
        info = _info(leader)
        if info is None or os.getpgid(pgid) != pgid:
            return None
        name, cmdline, _ = info
        agent_id = match_agent(name, cmdline, manifests)
        plain = not (is_interpreter(name) or base_name(name) in WRAPPERS) and _children(pgid) == b""
        if agent_id is not None or plain:
            return Foreground(pgid, name, cmdline, False, agent_id, pgid, pgid if agent_id else None)
    return None


def _children(pid: int) -> bytes | None:
    """The pids of `pid`'s children as the kernel lists them per thread (`/proc/PID/task/TID/children`,
    one read a thread): b"" for none. None when that cannot be read (not Linux, or no such process)."""
    if not system.has_proc():  # macOS: no /proc; the description goes through psutil (sysctl)
        return None
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        return b" ".join(part for tid in sorted(tasks) if (part := _read_proc(f"/proc/{pid}/task/{tid}/children")
                                                            .strip()))
    except OSError:
        return None


def leader_fingerprint(pgid: int) -> tuple[bytes, ...] | None:
    """What a leader-alone description (`_leader_alone`) depends on, read from /proc with plain reads
    (psutil's Process, oneshot, name, cmdline and create_time take several opens and the boot time): the
    leader's name, whether it is a zombie, its group, its start time, its command line and its children.
    None if it cannot be read (the process is gone, or not Linux): then describe in full."""
    if not system.has_proc():
        return None
    try:
        stat = _read_proc(f"/proc/{pgid}/stat")
        cmdline = _read_proc(f"/proc/{pgid}/cmdline")
    except OSError:
        return None
    children = _children(pgid)
    if children is None:
        return None
    name, _, rest = stat.partition(b" (")[2].rpartition(b")")
    fields = rest.split()
    if len(fields) < 20:
        return None
    # After "pid (comm)": state(0) ppid(1) pgrp(2) ... starttime(19). Only "zombie or not" of the state:
    # a live process flips between running and sleeping all the time, which changes nothing described.
    gone = b"1" if fields[0] in (b"Z", b"X") else b"0"
    return name, gone, fields[2], fields[19], cmdline, children


def _read_proc(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def describe_group(pgid: int, session_pid: int, manifests: Iterable[Manifest]) -> Foreground:
    return _describe(pgid, session_pid, list(manifests))[0]


def _describe(pgid: int, session_pid: int, manifests: list[Manifest]) -> tuple[Foreground, bool]:
    """The description, and whether the leader alone settled it."""
    if (alone := _leader_alone(pgid, manifests)) is not None:
        return alone, True
    infos: list[tuple[psutil.Process, str, tuple[str, ...], float]] = []
    for proc in group_members(pgid, session_pid):
        info = _info(proc)
        if info is not None:
            infos.append((proc, *info))
    if not infos:
        return Foreground(pgid, "", (), False, None), False
    # The leader names the job (`claude | tee log` is claude); without it the newest member does.
    infos.sort(key=lambda item: (item[0].pid != pgid, -item[3]))
    proc, name, cmdline, _ = infos[0]
    agent_id = agent_pid = None
    for member, member_name, member_cmdline, _ in infos:  # a wrapper (npx, a shell script) may run the agent
        agent_id = match_agent(member_name, member_cmdline, manifests)
        if agent_id is not None:
            agent_pid = member.pid
            break
    # Only shells in the group: a shell waits at its prompt (a shell running a command has children here).
    shell = agent_id is None and all(is_shell_name(item[1]) for item in infos)
    members = tuple((member_name, member_cmdline) for _, member_name, member_cmdline, _ in infos[1:])
    return Foreground(pgid, name, cmdline, shell, agent_id, proc.pid, agent_pid, members=members), False


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
        self.skipped = 0  # re-describes answered by the leader's fingerprint (nothing it depends on moved)
        self.read = False  # whether the last poll read the group (see poll)
        # The last description came from the leader alone: it stands while the leader's fingerprint and
        # the manifests are as then (compared by identity first: the watcher keeps its objects until a reload).
        self._alone_key: tuple[object, ...] | None = None
        self.versions: dict[int, str | None] = {}  # agent pid -> its version, as learnt (runtime/version.py)

    def poll(self, now: float, pgid: int | None, session_pid: int, manifests: Iterable[Manifest]) -> bool:
        """Update `current` for group `pgid` seen at `now`; True if the description changed. `read` says
        whether this poll read the group (False: too soon after the last read, or the group was gone)."""
        self.read = False
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
        manifests = list(manifests)
        fingerprint = leader_fingerprint(pgid)
        key = None if fingerprint is None else (pgid, fingerprint, *manifests)
        if key is not None and key == self._alone_key and self.current is not None:
            self.skipped += 1  # the leader alone said who holds the pane, and nothing about it changed
            self.read = True
            return False
        self.describes += 1
        new, alone = _describe(pgid, session_pid, manifests)
        if not new.name and not new.cmdline and self.current is not None and self.current.name:
            # The group was gone by the time it was read (a `cat` that just ended, its shell taking the
            # terminal back): not "a program we cannot read", whose screen would be judged by agent rules.
            # The last description stands; the next look (soon: the group changed) describes again.
            return False
        # A fingerprint read before the description: a change in between makes the next poll describe again.
        self._alone_key = key if alone else None
        if new.agent_pid is not None and (version := self.versions.get(new.agent_pid)) is not None:
            new = replace(new, version=version)
        changed = new != self.current
        if changed:
            self._refresh = self.refresh
        self.current, self.read = new, True
        return changed

    def learn_version(self, pid: int, version: str | None) -> bool:
        """The version of agent process `pid` is known now; True if that changed `current`."""
        self.versions[pid] = version
        current = self.current
        if current is None or current.agent_pid != pid or current.version == version:
            return False
        self.current = replace(current, version=version)
        return True
