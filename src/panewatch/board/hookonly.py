"""Hook-only panes: agents started by hand outside any watched terminal (a kitty, iTerm2, GNOME Terminal or VS
Code tab), known from the hooks `panewatch hooks install` put in their own settings.

    HookOnlyBoard  the daemon's listener at AGENTS_SOCKET (runtime/hooks.py ReportServer with `agents=`: the
                   per-user secret, the hook's pid checked against the kernel's word). Each report names its
                   agent by walking up from the hook (runtime/agentproc.py `find_agent`: pid, start time, tty,
                   cwd). An agent whose tty is a pane watched by its screen (a tmux pane whose hook had no
                   `$TMUX`, or whose server the daemon found after the agent's first hook: the hook-only card
                   is then handed over) lands on that pane's card, as a report: one card per agent, never two.
                   Every other agent is one HookOnlyPane, by (pid, start time). Each agent's process is looked
                   at every EXIT_CHECK seconds: `exited` within a second of it ending.
    HookOnlyPane   the card (origin "hooks": `pid`, `tty`, `cwd`, `terminal`, `where`, `session`), its state from
                   core/hookpane.py (reports in hook order, `exited` when the process ends); no screen, so no
                   input (NoScreenError says where to go), and `goto` asks the terminal to show it where it can
                   (runtime/goto.py), else says where the agent is (CannotGoThere).

`ls`, the board, `top`, `stats` (by the card's `key`) and notifications (board/notices.py) take these cards as
any other: they are on the Hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from panewatch.board.ids import card_key
from panewatch.board.model import Card, wire_error
from panewatch.board.panes import Hub, Viewer
from panewatch.board.rpc import RemoteError
from panewatch.core.combine import Report
from panewatch.core.hookpane import HookPane
from panewatch.errors import CannotGoThere, NoScreenError
from panewatch.runtime import goto, paths
from panewatch.runtime.agentproc import AgentProcess, Terminal, find_agent, where
from panewatch.runtime.driver import Manifests
from panewatch.runtime.hooks import AgentReport, ReportServer, UserSecret
from panewatch.runtime.notify import clean
from panewatch.runtime.paneclient import AGENTS_SOCKET

log = logging.getLogger("panewatch.board")

EXIT_CHECK = 0.2  # seconds between looks at each hook-only agent's process
ScreenPane = Callable[[str], Callable[[Report], None] | None]  # tty -> the report sink of a pane watched by screen


class HookOnlyPane:
    def __init__(self, hub: Hub, pane_id: str, agent: AgentProcess, first: AgentReport, key: str) -> None:
        self.id = pane_id
        self.key = key
        self.hub = hub
        self.agent = agent
        self.terminal = Terminal(first.terminal)
        self.session = first.session
        self.cwd = agent.cwd or first.cwd
        self.machine = HookPane(time.time())
        self.about = ""  # what the tool call the agent asks about does (a command, a file)
        self.last: Report | None = None  # the last report applied (handed to a screen-watched pane that takes over)
        self.card: Card = self._card()

    @property
    def where(self) -> str:
        return clean(where(self.terminal, self.agent.tty, self.cwd), 200)

    @property
    def ended(self) -> bool:
        return self.machine.ended

    def report(self, report: AgentReport) -> None:
        before = self.card
        self.session = report.session or self.session
        reports = self.machine.reports
        changed = self.machine.report(report.report.state, report.hook_time, report.report.detail, time.time())
        if self.machine.reports > reports:  # applied (not stale)
            self.last = report.report
        if changed is not None and changed.state == "blocked":
            self.about = report.tool_input
        self.card = self._card()
        if self.card != before:
            self.hub.changed(self.id)

    def check_exit(self) -> None:
        if not self.ended and not self.agent.alive() and self.machine.exited(time.time()) is not None:
            self.card = self._card()
            self.hub.changed(self.id)

    def _card(self) -> Card:
        now = self.machine.current
        state = now.state if now is not None else "idle"
        detail = now.detail if now is not None else ""
        agent = self.agent.agent
        tty = self.agent.tty.removeprefix("/dev/")
        card: Card = {
            "id": self.id, "key": self.key, "name": f"{agent or self.agent.name} {tty}".strip(), "agent": agent,
            "origin": "hooks", "pid": self.agent.pid, "tty": self.agent.tty, "cwd": self.cwd,
            "terminal": self.terminal.name, "where": self.where, "session": self.session or None,
            "command": self.agent.name, "state": state, "source": now.source if now is not None else "hook",
            "rule": None, "detail": detail, "since": now.since if now is not None else self.machine.created,
            "prompt": self._prompt(detail) if state == "blocked" else None, "exit_code": None, "cols": None,
            "rows": None, "interactive": False, "agent_version": None, "unverified": None,
            "kind": "agent" if agent else "unknown", "what": self.agent.name, "view_of": None, "shows": None,
            "answer": None, "stale_reports": self.machine.stale,
        }
        return card

    def _prompt(self, detail: str) -> dict[str, Any]:
        """What the agent asks, as far as its hook said: the tool and what it does (no screen: no options)."""
        question = detail.split(" ", 1)[1] if " " in detail else detail  # "PermissionRequest Bash" → "Bash"
        if question.startswith("(") and question.endswith(")"):  # a Notification's message: "(Allow …?)"
            question = question[1:-1]
        if self.about:
            question = f"{question}: {self.about}" if question else self.about
        return {"question": clean(question, 300), "options": [], "fingerprint": "", "body": ""}

    # -- the PaneHandle interface: no screen, so no input ------------------------------------------

    def _no_screen(self) -> RemoteError:
        return wire_error(NoScreenError(self.where))

    async def send(self, text: str, enter: bool) -> dict[str, Any]:
        raise self._no_screen()

    async def answer(self, option: str, fingerprint: str) -> dict[str, Any]:
        raise self._no_screen()

    async def keys(self, data: bytes, attached: bool) -> None:
        raise self._no_screen()

    async def report_wrong(self, expected: str | None) -> dict[str, Any]:
        raise self._no_screen()

    async def resize(self, cols: int, rows: int) -> None:
        raise RemoteError("not_resizable", "a hook-only pane has no screen here (its terminal sizes it)")

    def watch(self, viewer: Viewer) -> Callable[[], None]:
        text = f"\x1b[2J\x1b[Hpanewatch knows this agent from its hooks only: no screen to show.\r\nIt runs in " \
               f"{self.where}\r\n"
        viewer(text.encode("utf-8", "replace"), True)
        return lambda: None

    async def goto(self) -> None:
        """Ask its terminal to show it (runtime/goto.py); where it cannot, the error says where the agent is."""
        if self.ended:
            raise RemoteError("exited", f"pane {self.id}'s agent has exited")
        try:
            await goto.go(self.terminal, tty=self.agent.tty, where=self.where)
        except CannotGoThere as exc:
            raise wire_error(exc) from None

    async def close(self) -> None:
        pass


class HookOnlyBoard:
    """Every agent reporting through installed hooks from outside a watched pane, on the hub."""

    def __init__(self, hub: Hub, manifests: Manifests, *, screen_pane: ScreenPane = lambda tty: None) -> None:
        self.hub = hub
        self.manifests = manifests
        self.screen_pane = screen_pane
        self.handles: dict[tuple[int, float], HookOnlyPane] = {}
        self.server: ReportServer | None = None
        self.counts: Counter[str] = Counter()  # reports by fate: card, screen_pane, no_agent
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Listen (taking the path over from any earlier daemon's socket); never raises."""
        try:
            server = ReportServer(lambda _pane, _report: None, path=paths.runtime_dir() / AGENTS_SOCKET,
                                  secret=UserSecret(), agents=self.on_agent)
            await server.start()
        except OSError as exc:
            log.warning("hook-only panes off: agents' installed hooks outside watched panes cannot report: %s", exc)
            return
        self.server = server
        self._task = asyncio.get_running_loop().create_task(self._watch_exits())

    def on_agent(self, report: AgentReport) -> None:
        agent = find_agent(report.parent, self.manifests.current())
        if agent is None:
            self.counts["no_agent"] += 1
            return
        sink = self.screen_pane(agent.tty) if agent.tty else None
        if sink is not None:  # its pane is watched by its screen: the report goes to that card
            self.counts["screen_pane"] += 1
            sink(report.report)
            return
        self.counts["card"] += 1
        handle = self.handles.get((agent.pid, agent.started))
        if handle is None:
            key = card_key("hooks", agent.pid, agent.started)
            handle = HookOnlyPane(self.hub, self.hub.new_id(key), agent, report, key)
            self.handles[(agent.pid, agent.started)] = handle
            handle.report(report)
            self.hub.add(handle)
            log.info("hook-only pane %s: %s in %s", handle.id, agent.agent or agent.name, handle.where)
        else:
            handle.report(report)

    async def _watch_exits(self) -> None:
        while True:
            await asyncio.sleep(EXIT_CHECK)
            await self.sweep()

    async def sweep(self) -> None:
        """Each hook-only agent: exited when its process ended; handed over when a pane watched by its screen has
        its tty now (a tmux server the daemon found after the agent's first hook: SCAN seconds later), so the agent
        is one card again: the hook-only card leaves, its last report goes to the screen's card."""
        for key, handle in list(self.handles.items()):
            try:
                handle.check_exit()
                sink = self.screen_pane(handle.agent.tty) if handle.agent.tty and not handle.ended else None
                if sink is not None:
                    del self.handles[key]
                    if handle.last is not None:
                        sink(handle.last)
                    self.counts["handed_over"] += 1
                    log.info("hook-only pane %s: its tty is a watched pane's now: one card", handle.id)
                    await self.hub.remove(handle.id)
                    continue
            except Exception:  # a sweep never dies on one pane
                log.exception("hook-only pane %s: check failed", handle.id)
            if handle.ended:
                del self.handles[key]

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.server is not None:
            await self.server.close()
            self.server = None
