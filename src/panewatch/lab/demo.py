"""`panewatch demo`: fake agents with bot users in headless panes, and a live view of what
panewatch sees — each pane's state, time in state, the rule that decided, the latest
notification, and the screen of the pane that needs the user. No real agent, no configuration.

The bot "user" types through the input guard like any UI would: answers are bound to the
fingerprint of the prompt it saw, tasks are refused while a prompt waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import sys
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from panewatch.board.client import read_state
from panewatch.board.link import BoardLink
from panewatch.core.machine import StateChange
from panewatch.errors import PanewatchError
from panewatch.lab.botuser import ANSWER_DELAY, TASK_DELAY, TASK_TEXTS
from panewatch.runtime.guard import InputGuard
from panewatch.runtime.live import LivePane, ManifestWatcher
from panewatch.runtime.notify import Notifier
from panewatch.runtime.settings import load_settings

ENTER_VIEW = "\x1b[?1049h\x1b[?25l"
LEAVE_VIEW = "\x1b[?25h\x1b[?1049l"
FRAME = 0.25  # seconds between redraws
_BADGE = {"blocked": "\x1b[1;37;41m BLOCKED \x1b[0m", "working": "\x1b[1;30;43m working \x1b[0m",
          "idle": "\x1b[1;30;42m  idle   \x1b[0m", "exited": "\x1b[1;37;100m exited  \x1b[0m"}


def _stdout_write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


@dataclass
class DemoPane:
    pane: LivePane
    guard: InputGuard
    rng: random.Random
    link: BoardLink | None = None
    since: float = field(default_factory=time.monotonic)
    tasks: int = 0
    action: asyncio.Task[None] | None = None


@dataclass
class DemoLog:
    notification: str = ""
    bot: str = ""


class Demo:
    def __init__(self, panes: int = 3, seed: int = 7, time_scale: float = 1.0,
                 write: Callable[[str], None] | None = None) -> None:
        self.n, self.seed, self.time_scale = panes, seed, time_scale
        self.board = False  # the fake agents on the sessions board too (`demo --board`)
        self.write = write or _stdout_write
        self.log = DemoLog()
        self.panes: list[DemoPane] = []
        self._board_url = ""
        self.notifier = Notifier(load_settings(), time.monotonic, terminal_writer=self._terminal_notification)

    def _terminal_notification(self, data: bytes) -> None:
        self.write(data.decode("utf-8", "replace"))

    async def start(self) -> None:
        watcher = ManifestWatcher()
        cols, rows = 100, 26
        for i in range(self.n):
            argv = [sys.executable, "-m", "panewatch.lab.fakeagent", "--seed", str(self.seed + i),
                    "--time-scale", repr(self.time_scale)]
            env = {**os.environ, "TERM": "xterm-256color"}
            # The fake agent draws Claude Code's screens (lab/fakeagent.py): named so, as `run --agent claude` would.
            pane = LivePane(argv, pane_id=f"agent-{i + 1}", cols=cols, rows=rows, env=env, manifests=watcher,
                            agent="claude")
            demo_pane = DemoPane(pane, InputGuard(pane, pane_id=pane.pane_id), random.Random(self.seed * 31 + i))
            pane.subscribe(self._subscriber(demo_pane))
            self.panes.append(demo_pane)
            pane.start()
            if self.board:  # asked for (--board): on the sessions board too, marked as the demo's (no stats)
                demo_pane.link = BoardLink(pane, name=f"demo {pane.pane_id}", command="panewatch demo (fake agent)")
                demo_pane.link.where["demo"] = True
                demo_pane.link.start()

    def _subscriber(self, dp: DemoPane) -> Callable[[StateChange], None]:
        return lambda change: self._on_change(dp, change)

    def _on_change(self, dp: DemoPane, change: StateChange) -> None:
        dp.since = time.monotonic()
        state, old = change.new.state, change.old.state if change.old else ""
        question = ""
        if state == "blocked":
            with contextlib.suppress(PanewatchError):
                question = dp.guard.prompt().question
        if self.notifier.wants(old, state):
            suppressed = self.notifier.suppressed
            fired = self.notifier.on_state_change(change, prompt_text=lambda: question)
            if self.notifier.suppressed == suppressed:
                via = ", ".join(fired) if fired else "this view"
                self.log.notification = (f"{time.strftime('%H:%M:%S')} {dp.pane.pane_id} needs you: "
                                         f"{question or state}  (via {via})")
        if dp.action is not None:
            dp.action.cancel()
        if state == "blocked":
            dp.action = asyncio.get_running_loop().create_task(self._answer(dp))
        elif state == "idle" and old != "":
            dp.action = asyncio.get_running_loop().create_task(self._next_task(dp))
        elif state == "idle":
            dp.action = asyncio.get_running_loop().create_task(self._next_task(dp, first=True))

    async def _answer(self, dp: DemoPane) -> None:
        await asyncio.sleep(dp.rng.uniform(*ANSWER_DELAY) * self.time_scale)
        try:
            prompt = dp.guard.prompt()
            option = prompt.option("allow_once") or prompt.option(1)
            if option is None:
                return
            result = await dp.guard.answer(option.number, prompt.fingerprint)
        except PanewatchError as exc:
            self.log.bot = f"{dp.pane.pane_id}: answer refused: {exc}"
            return
        outcome = "prompt cleared" if result.cleared else "prompt still shown"
        self.log.bot = (f"{dp.pane.pane_id}: bot answered {option.number}. {option.label} "
                        f"({option.kind}, fingerprint {prompt.fingerprint[:8]}), {outcome}")

    async def _next_task(self, dp: DemoPane, first: bool = False) -> None:
        delay = dp.rng.uniform(0.5, 1.5) if first else dp.rng.uniform(*TASK_DELAY)
        await asyncio.sleep(delay * self.time_scale)
        dp.tasks += 1
        try:
            await dp.guard.send(f"Task {dp.tasks}: {dp.rng.choice(TASK_TEXTS)}")
        except PanewatchError as exc:
            self.log.bot = f"{dp.pane.pane_id}: task refused: {exc}"

    def render(self, width: int, height: int) -> str:
        lines = [f"\x1b[1mpanewatch demo\x1b[0m — {self.n} fake agents with bot users · Ctrl-C to quit"
                 f"{time.strftime('%H:%M:%S'):>{max(0, width - 62)}}", "",
                 f"  {'PANE':<9} {'AGENT':<8} {'STATE':<9} {'FOR':>7}  DECIDED BY"]
        now = time.monotonic()
        for dp in self.panes:
            st = dp.pane.state
            decided = f"{st.source}: {st.rule or st.detail or '-'}"
            lines.append(f"  {dp.pane.pane_id:<9} {dp.pane.agent or '?':<8} {_BADGE.get(st.state, st.state)} "
                         f"{now - dp.since:>6.1f}s  {decided}")
        lines += ["", f"  latest notification: {self.log.notification or '-'}", f"  bot user: {self.log.bot or '-'}",
                  f"  sessions board: {self._board_line()}", ""]
        needs = next((dp for dp in self.panes if dp.pane.state.state == "blocked"), None)
        shown = needs or (self.panes[0] if self.panes else None)
        if shown is not None:
            label = "needs you" if needs is not None else "(nobody needs you; showing the first pane)"
            head = f"── {shown.pane.pane_id} {label} "
            lines.append(f"\x1b[1m{head}" + "─" * max(0, width - len(head)) + "\x1b[0m")
            rows = list(shown.pane.snapshot().rows)
            while rows and not rows[-1].strip():
                rows.pop()
            room = max(0, height - len(lines) - 1)
            lines += ["  " + r for r in rows[-room:]] if room else []
        out = []
        for line in lines[:height]:
            visible = line if "\x1b" in line else line[:width]
            out.append(visible + "\x1b[K")
        return "\x1b[H" + "\r\n".join(out) + "\x1b[J"

    def _board_line(self) -> str:
        url = self.board_url()
        if not self.board:
            return "not shown there (panewatch demo --board shows these fake agents on it too)"
        return f"{url}  (run `panewatch board` to open it: it signs the browser in)" if url else "(not linked)"

    def board_url(self) -> str:
        if not any(dp.link is not None and dp.link.connected for dp in self.panes):
            return ""
        if not self._board_url:
            state = read_state() or {}
            self._board_url = str(state.get("url") or "")
        return self._board_url

    async def close(self) -> None:
        for dp in self.panes:
            if dp.action is not None:
                dp.action.cancel()
        await asyncio.gather(*(dp.pane.close() for dp in self.panes), return_exceptions=True)
        await asyncio.gather(*(dp.link.close() for dp in self.panes if dp.link is not None), return_exceptions=True)
        self.notifier.close()


async def run_demo(panes: int = 3, seconds: float | None = None, seed: int = 7, time_scale: float = 1.0,
                   board: bool = False) -> int:
    demo = Demo(panes, seed, time_scale)
    demo.board = board
    on_board = board
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    saved = None
    with contextlib.suppress(termios.error, OSError):  # typed keys must not scribble over the view
        saved = termios.tcgetattr(0)
        quiet = termios.tcgetattr(0)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(0, termios.TCSANOW, quiet)
    demo.write(ENTER_VIEW)
    summary, stays = "", ""
    try:
        await demo.start()
        deadline = None if seconds is None else loop.time() + seconds
        while not stop.is_set() and (deadline is None or loop.time() < deadline):
            size = shutil.get_terminal_size((120, 40))
            demo.write(demo.render(size.columns, size.lines))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), FRAME)
    finally:
        summary = ", ".join(f"{dp.pane.pane_id} {dp.pane.state.state}" for dp in demo.panes)
        stays = " The sessions board stays up: panewatch board (panewatch serve --stop ends it)." \
            if on_board and demo.board_url() else ""
        await demo.close()
        demo.write(LEAVE_VIEW)
        if saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(0, termios.TCSANOW, saved)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
    print(f"panewatch demo: stopped ({summary}). Watch your own agent with: panewatch run -- claude{stays}")
    return 0
