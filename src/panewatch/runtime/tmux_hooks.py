"""Installed hooks' reports for the panes of one watched tmux server (`panewatch hooks install`).

An installed hook in a pane the user started by hand sends its report to `hooks-CRC.sock` in the private
runtime dir, CRC from the pane's `$TMUX` socket path (runtime/paneclient.py). `TmuxReports` is that
listener for one TmuxWatcher: a ReportServer (runtime/hooks.py, the one implementation) checking the
per-user secret and mapping (socket path, `%ID`) to the watched pane, whose PaneDriver takes the report
as a per-launch report (source `hook`, the same staleness in core/combine.py).

Who listens, when both the daemon and a foreground `panewatch tmux` watch the same server:

    mode "take"   (the daemon, board/tmux.py) listens at once, taking the path over from anyone.
    mode "share"  (`panewatch tmux` in the foreground) listens only while nobody else does: it looks
                  again every CHECK seconds, so it takes over when the daemon goes, and steps aside
                  when the daemon comes (its socket was renamed over).

One watcher per server per process, so a server's reports always reach one process that watches it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from panewatch.core.combine import Report
from panewatch.errors import TmuxError
from panewatch.runtime import paths
from panewatch.runtime.hooks import ReportServer, UserSecret
from panewatch.runtime.paneclient import tmux_socket_name
from panewatch.runtime.tmux import TmuxServer

log = logging.getLogger("panewatch.runtime.tmux")

HookMode = Literal["take", "share"]
CHECK = 2.0  # seconds between looks at who listens (the watcher's server poll)


def someone_listens(path: Path) -> bool:
    """Whether a process accepts connections at `path` (a unix connect is immediate)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


class TmuxReports:
    """The installed hooks' listener for one tmux server's panes. `check()` (re)starts it as `mode` says."""

    def __init__(self, server: TmuxServer, mode: HookMode, pane: Callable[[str], Callable[[Report], None] | None],
                 clock: Callable[[], float]) -> None:
        self.server = server
        self.mode = mode
        self._pane = pane  # tmux pane id -> its report sink (the watched pane's `report`), None if not watched
        self._clock = clock
        self.socket_path: str | None = None  # the server's socket as tmux names it (`$TMUX`'s first field)
        self.reports: ReportServer | None = None
        self._warned = False

    @property
    def path(self) -> Path | None:
        return paths.runtime_dir() / tmux_socket_name(self.socket_path) if self.socket_path else None

    async def check(self) -> None:
        """Listen if we should and do not: at start, and every CHECK seconds. Never raises."""
        try:
            await self._check()
        except (OSError, TmuxError) as exc:
            if not self._warned:
                self._warned = True
                log.warning("tmux %s: installed hooks' reports not taken: %s", self.server.label, exc)

    async def _check(self) -> None:
        if self.socket_path is None:
            lines = await self.server.run("display-message", "-p", "#{socket_path}")
            self.socket_path = lines[0].strip() if lines and lines[0].strip() else None
        path = self.path
        if path is None or (self.reports is not None and self.reports.owns_path()):
            return
        taken_over = self.reports is not None
        if self.reports is not None:  # someone took our path over: step aside until it is free again
            await self.reports.close()
            self.reports = None
        if (self.mode == "share" or taken_over) and someone_listens(path):
            return
        server = ReportServer(self._deliver, path=path, clock=self._clock, tmux=self._resolve, secret=UserSecret())
        await server.start()
        self.reports = server

    def _resolve(self, tmux_socket: str, tmux_pane: str) -> str | None:
        return tmux_pane if tmux_socket == self.socket_path and self._pane(tmux_pane) is not None else None

    def _deliver(self, tmux_pane: str, report: Report) -> None:
        sink = self._pane(tmux_pane)
        if sink is not None:
            sink(report)

    async def close(self) -> None:
        if self.reports is not None:
            with contextlib.suppress(Exception):
                await self.reports.close()
            self.reports = None
