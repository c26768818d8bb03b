"""A pinned real agent CLI in a headless LivePane against a mock model server (e2e tests, bench).

    async with LiveAgent("codex", tmp_path) as agent:
        await agent.submit("SCN=bash DELAY=1 go")
        change = await agent.wait_state("blocked", 45)
        ...
    agent.truth(), agent.detected()   # truth from capture_truth (literals + mock), the live changes

Everything lives on the event loop's clock (time.monotonic, which the mock stamps its events with
too); `t0` is the pane's start, so `detected()`, `truth()` and the recording share one time axis.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from panewatch.core.cast import Cast, CastEvent, read_cast
from panewatch.core.combine import PaneState, Report
from panewatch.core.machine import StateChange
from panewatch.runtime.guard import InputGuard
from panewatch.runtime.hooks import PaneHooks, ReportServer
from panewatch.runtime.live import LivePane, ManifestWatcher
from panewatch.testing.capture import PROFILES, AgentProfile, final_literal, literals
from panewatch.testing.capture_truth import derive_timeline
from panewatch.testing.homes import MOCK_KIND, Launch, find_agents_bin, prepare
from panewatch.testing.mock import MockServer

POLL = 0.02
TYPE_PAUSE = 0.3  # a pause before Enter: CLIs read text+Enter arriving together as one paste


class LiveAgent:
    def __init__(self, agent: str, root: Path, *, bin_dir: Path | None = None, cols: int = 120, rows: int = 32,
                 hooks: bool = False, inline: bool = False, plan_mode: bool = False, pane_id: str = "e2e",
                 setup: Callable[[Launch], None] | None = None, program_status: bool = True) -> None:
        self.agent = agent
        self.profile: AgentProfile = PROFILES[agent]
        self.root = root
        self.bin_dir = bin_dir or find_agents_bin()
        self.cols, self.rows = cols, rows
        self.hooks, self.inline, self.plan_mode, self.pane_id = hooks, inline, plan_mode, pane_id
        self.program_status = program_status  # answer the OSC 7501 probe (Claude then reports its state)
        self.setup = setup  # called with the prepared home before the CLI starts (e.g. to add the user's hooks)
        self.changes: list[StateChange] = []
        self.markers: list[tuple[float, str]] = []
        self.reports: list[tuple[Report, PaneState]] = []  # hook reports, each with the state just after
        self.first_seen: dict[str, float] = {}  # literal -> loop time of the output that first showed it
        self.watching: set[str] = set()
        self.gone_at: dict[str, float] = {}  # literal -> loop time of the output that erased it
        self.watching_gone: set[str] = set()
        self.mock = MockServer(MOCK_KIND[agent], clock=time.monotonic)
        self.server: PaneHooks | None = None
        self.report_server: ReportServer | None = None  # kept past close(): tests read its counters
        self._pane: LivePane | None = None
        self._record: IO[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.t0 = 0.0
        self.scenario = ""

    @property
    def pane(self) -> LivePane:
        assert self._pane is not None, "LiveAgent not started"
        return self._pane

    @property
    def record_path(self) -> Path:
        return self.root / "session.cast"

    async def start(self) -> LiveAgent:
        if self.bin_dir is None or not (self.bin_dir / self.agent).exists():
            raise FileNotFoundError(f"pinned {self.agent} CLI not installed (scripts/install-agents)")
        loop = self._loop = asyncio.get_running_loop()
        self.mock.start()
        launch = prepare(self.agent, self.root, self.mock.url, bin_dir=self.bin_dir, plan_mode=self.plan_mode,
                         args=self.profile.inline_args if self.inline else ())
        if self.setup is not None:
            self.setup(launch)
        argv, env = list(launch.argv), dict(launch.env) | (self.profile.inline_env if self.inline else {})
        if self.hooks:
            self.server = PaneHooks(self._on_report, clock=loop.time)
            argv = await self.server.wire(self.pane_id, argv, env, cwd=launch.cwd, agent=self.agent)
            self.report_server = self.server.server
        self._record = self.record_path.open("w", encoding="utf-8")
        no_user_manifests = self.root / "user-agents"  # hermetic: only the bundled manifests
        self._pane = LivePane(argv, pane_id=self.pane_id, cols=self.cols, rows=self.rows, env=env, cwd=launch.cwd,
                              agent=self.agent, headless=True, manifests=ManifestWatcher(no_user_manifests),
                              record=self._record, on_output=self._on_output, program_status=self.program_status)
        self._pane.subscribe(self.changes.append)
        self._pane.start()
        self.t0 = self.changes[0].t if self.changes else loop.time()
        return self

    async def close(self) -> None:
        self.markers.append((self._now(), "exit"))
        if self._pane is not None:
            await self._pane.close()
        if self.server is not None:
            await self.server.close()
        self.mock.stop()
        if self._record is not None:
            self._record.close()

    async def __aenter__(self) -> LiveAgent:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    def _now(self) -> float:
        return self._loop.time() if self._loop is not None else time.monotonic()

    def _on_report(self, _pane: str, report: Report) -> None:
        if self._pane is not None:
            self._pane.report(report)
            self.reports.append((report, self._pane.state))  # what the report made of the pane

    def _on_output(self, _data: bytes) -> None:
        # Called before the pane feeds its screen: look right after, stamped with this read's time.
        if self._loop is not None and (self.watching or self.watching_gone):
            self._loop.call_soon(self._look, self._loop.time())

    def _look(self, t: float) -> None:
        text = self.text()
        for literal in list(self.watching):
            if literal in text:
                self.first_seen[literal] = t
                self.watching.discard(literal)
        for literal in list(self.watching_gone):
            if literal not in text:
                self.gone_at[literal] = t
                self.watching_gone.discard(literal)

    # -- driving -------------------------------------------------------------------------------

    def text(self) -> str:
        return "\n".join(self.pane.snapshot().rows)

    def watch(self, literal: str) -> None:
        """Note the time of the output that first shows `literal` from now on."""
        self.first_seen.pop(literal, None)
        self.watching.add(literal)
        self._look(self._now())

    def watch_gone(self, literal: str) -> None:
        """Note the time of the output after which `literal` is no longer on screen."""
        self.gone_at.pop(literal, None)
        self.watching_gone.add(literal)

    async def until(self, cond: Callable[[], bool], timeout: float) -> bool:
        deadline = self._now() + timeout
        while not cond():
            if self._now() >= deadline or self.pane.exited:
                return cond()
            await asyncio.sleep(POLL)
        return True

    async def ready(self, timeout: float = 60.0) -> bool:
        return await self.until(lambda: any(r in self.text() for r in self.profile.ready), timeout)

    async def submit(self, prompt: str, timeout: float = 10.0) -> None:
        """Type `prompt` through the input guard (refused if the pane is blocked), then Enter."""
        self.scenario = next((w[4:] for w in prompt.split() if w.startswith("SCN=")), "")
        guard = InputGuard(self.pane, pane_id=self.pane_id)
        await guard.send(prompt, enter=False)
        tail = prompt[-12:]
        if not await self.until(lambda: tail in self.text(), timeout):
            raise TimeoutError(f"{self.agent}: typed text never showed; screen:\n{self.text()}")
        await asyncio.sleep(TYPE_PAUSE)
        self.markers.append((self._now(), "submitted"))
        await guard.send("", enter=True)

    def screen_idle(self) -> bool:
        """The turn's final reply is on screen with the composer back (what a user sees as idle)."""
        text = self.text()
        return (final_literal(self.scenario) in text and any(r in text for r in self.profile.ready)
                and not any(b in text for b in self.profile.busy))

    async def turn_over(self, timeout: float) -> bool:
        """The mock sent the final reply, the screen shows it idle, and the pane's state is idle."""
        return await self.until(lambda: bool(self.mock_reply_sent("end_turn")) and self.screen_idle()
                                and self.pane.state.state == "idle", timeout)

    async def wait_state(self, state: str, timeout: float, *, after: int = 0) -> StateChange | None:
        """The first change to `state` among changes[after:], waiting up to `timeout`."""
        def found() -> StateChange | None:
            return next((c for c in self.changes[after:] if c.new.state == state), None)
        await self.until(lambda: found() is not None, timeout)
        return found()

    def mock_reply_sent(self, stop_reason: str) -> list[float]:
        return [float(e["t"]) for e in self.mock.events if e["event"] == "reply_sent"
                and e.get("stop_reason") == stop_reason]

    # -- what happened -------------------------------------------------------------------------

    def detected(self) -> list[tuple[float, str]]:
        return [(c.t - self.t0, c.new.state) for c in self.changes]

    def mock_events(self) -> list[dict[str, Any]]:
        return [{k: e.get(k) for k in ("event", "step", "stop_reason", "tools")} | {"t": float(e["t"]) - self.t0}
                for e in self.mock.events if e["event"] in ("request", "reply_sent")]

    def recording(self) -> Cast:
        """The pane's own recording with the driver's markers added (call after close())."""
        cast = read_cast(self.record_path)
        marks = tuple(CastEvent(t - self.t0, "m", label) for t, label in self.markers)
        return replace(cast, events=tuple(sorted(cast.events + marks, key=lambda e: e.t)))

    def truth(self) -> list[tuple[float, str]]:
        """The scenario's truth for this live run, derived like a capture's (never by our classifier)."""
        lit, dialogs = literals(self.profile, self.scenario)
        timeline = derive_timeline(self.recording(), self.mock_events(), lit, dialogs)
        return [(float(e["t"]), str(e["state"])) for e in timeline]
