"""Hook-only panes with the pinned REAL CLIs (issue 26, "done when"): Claude Code, Codex and Gemini CLI started by
hand in a plain PTY (no tmux, nothing of panewatch around them) with `panewatch hooks install` in their own
settings, against the mock model servers. The daemon's parts run in-process (the Hub, the hook-only listener,
the one notification path with an Apprise `ntfy://` URL to a loopback receiver): the card follows the
permission dialog (blocked), its answer (working) and the turn's end (idle), the notification arrives with the
question, and the card turns exited when the process ends.

Latencies are printed (hook started → card state; blocked card → notification at the receiver; process gone →
exited), never asserted. Needs the pinned CLIs (PANEWATCH_SKIP=agents opts out).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from panewatch.board.hookonly import HookOnlyBoard
from panewatch.board.model import Card
from panewatch.board.notices import Notices
from panewatch.board.panes import Hub
from panewatch.board.tmux import TmuxBoard
from panewatch.board.views import Views
from panewatch.runtime.hooks import AgentReport
from panewatch.runtime.hooksinstall import settings_file
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.settings import NotifySettings, Settings
from panewatch.testing.capture import PROFILES
from panewatch.testing.drive import PtyAgent
from panewatch.testing.homes import MOCK_KIND, find_agents_bin, prepare
from panewatch.testing.mock import MockServer
from pushutil import Receiver

BIN = find_agents_bin()
pytestmark = pytest.mark.needs("agents")
STARTUP, STEP = 60.0, 45.0


class BoardThread:
    """The daemon's hook-only listener, hub and notification path on their own loop (the test drives a pty)."""

    def __init__(self, ntfy_url: str) -> None:
        self.changes: list[tuple[float, str]] = []  # (wall time, state) of the card
        self.hook_to_card: list[tuple[str, float]] = []  # (state, seconds from the hook's start to the card)
        self.cards: dict[str, Card] = {}
        self.board: HookOnlyBoard | None = None
        self._url = ntfy_url
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        hub = Hub()
        watcher = ManifestWatcher()
        tmux = TmuxBoard(hub, watcher, watch=False)
        notices = Notices(hub, Settings(notify=NotifySettings(backends=(), urls=(self._url,), cooldown=0)),
                          Views(hub, tmux))
        notices.start()

        def on_card(pane_id: str, card: Card | None) -> None:
            if card is not None:
                if not self.changes or self.changes[-1][1] != card["state"]:
                    self.changes.append((time.time(), card["state"]))
                self.cards[pane_id] = card

        hub.listeners.add(on_card)
        self.board = board = HookOnlyBoard(hub, watcher)
        take = board.on_agent

        def timed(report: AgentReport) -> None:
            before = len(self.changes)
            take(report)
            if len(self.changes) > before:  # this hook moved the card
                self.hook_to_card.append((self.changes[-1][1], time.time() - report.hook_time))

        await board.start()
        assert board.server is not None
        board.server.on_agent = timed
        self._ready.set()
        await self._stop.wait()
        await board.close()
        notices.close()

    def __enter__(self) -> BoardThread:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def wait_state(self, state: str, timeout: float, after: int = 0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, s in self.changes[after:]:
                if s == state:
                    return t
            time.sleep(0.005)
        raise AssertionError(f"no {state} card within {timeout} s: {self.changes}")


def _panewatch_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("PANEWATCH_")}


@pytest.mark.parametrize("name", ["claude", "codex", "gemini"])
def test_a_real_agent_started_by_hand_outside_tmux_is_a_hook_only_card(name: str, tmp_path: Path) -> None:
    assert BIN is not None
    profile = PROFILES[name]
    dialog = profile.dialogs["bash"][0]
    with MockServer(MOCK_KIND[name], clock=time.monotonic) as mock, Receiver() as ntfy:
        launch = prepare(name, tmp_path / name, mock.url, bin_dir=BIN)
        install = subprocess.run([sys.executable, "-m", "panewatch", "hooks", "install", "--agent", name],
                                 env={**launch.env, **_panewatch_env()}, capture_output=True, text=True, timeout=60)
        assert install.returncode == 0 and "installed" in install.stdout, install
        assert b"pane hook" in settings_file(name, launch.env).read_bytes()
        # a terminal tab of the user's: no tmux, nothing of panewatch, no CI (Gemini CLI runs headless under CI)
        env = {k: v for k, v in {**launch.env, **_panewatch_env()}.items()
               if not k.startswith(("TMUX", "PANEWATCH_PANE", "PANEWATCH_TOKEN", "CI_"))
               and k not in ("CI", "CONTINUOUS_INTEGRATION")}
        env["PANEWATCH_BOARD"] = "off"
        with BoardThread(f"ntfy://127.0.0.1:{ntfy.port}/agents") as board:
            agent = PtyAgent(launch.argv, env=env, cwd=launch.cwd)
            agent.start()
            timings: dict[str, Any] = {}
            try:
                assert agent.wait_for(lambda s: any(r in s.text() for r in profile.ready), STARTUP), agent.text()
                agent.type("SCN=bash DELAY=1 run the scripted scenario")
                blocked_at = board.wait_state("blocked", STEP)
                assert agent.wait_for(dialog, 15) is not None, agent.text()
                card = next(iter(board.cards.values()))
                started = psutil.Process(agent.proc.pid)  # the CLI itself, or a launcher that runs it
                assert card["pid"] in {started.pid, *(p.pid for p in started.children(recursive=True))}, card
                assert card["origin"] == "hooks" and card["agent"] == name, card
                assert card["tty"].startswith("/dev/pts/") and card["cwd"] == launch.cwd, card
                question = card["prompt"]["question"]
                assert question, card
                deadline = time.monotonic() + 10
                while not ntfy.got and time.monotonic() < deadline:
                    time.sleep(0.005)
                assert ntfy.got, "no notification at the receiver"
                timings["blocked→push"] = time.time() - (time.monotonic() - ntfy.arrived[0]) - blocked_at
                sent = ntfy.got[0]["body"]
                assert f"{name} needs your answer" in sent["title"] and question in sent["message"], sent
                index = len(board.changes)
                answered = time.time()
                assert agent.answer(profile.answer, dialog, timeout=15) is not None, agent.text()
                working_at = board.wait_state("working", STEP, after=index)
                board.wait_state("idle", STEP, after=index)
                timings["answer→working"] = working_at - answered
                index = len(board.changes)
                ending = time.time()  # SIGTERM to the agent's group now: its end is at most this early
                agent.close()
                exited_at = board.wait_state("exited", 10, after=index)
                timings["SIGTERM→exited"] = exited_at - ending
            finally:
                agent.close()
            states = [s for _, s in board.changes]
            print(f"\n{name}: states {states}; hook→card " +
                  ", ".join(f"{s} {d * 1000:.0f} ms" for s, d in board.hook_to_card) +
                  "; " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in timings.items()) +
                  f"; push: {sent['message']!r}")
            assert board.board is not None and board.board.server is not None
            assert not board.board.server.rejected and board.board.counts.get("no_agent", 0) == 0
    assert states[-1] == "exited" and "blocked" in states
