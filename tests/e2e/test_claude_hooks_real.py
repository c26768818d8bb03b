"""Our `--settings` hooks inside the pinned real Claude Code, against the mock model server.

Checks what the unit tests cannot: that Claude accepts the injected settings, that the events we
subscribe to exist and fire in the expected order with the payloads we read (PermissionRequest
with the tool name, as the dialog is shown), and that the user's own hooks keep running.
Needs the pinned CLIs (scripts/install-agents; PANEWATCH_SKIP=agents opts out). Waits poll with
deadlines; times are printed, not asserted.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from panewatch.core.combine import Report
from panewatch.runtime.hooks import ReportServer, hook_launcher, inject_claude_hooks
from panewatch.testing.drive import PtyAgent
from panewatch.testing.homes import MOCK_KIND, find_agents_bin, prepare
from panewatch.testing.mock import MockServer

BIN = find_agents_bin()
pytestmark = pytest.mark.needs("agents")  # tests/components.py: fails without them unless PANEWATCH_SKIP=agents

DIALOG = "Do you want to proceed?"


class ServerThread:
    """A ReportServer on its own event loop, for a test that drives a pty synchronously."""

    def __init__(self) -> None:
        self.reports: list[tuple[float, Report]] = []
        self.server: ReportServer | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self.server = ReportServer(lambda _pane, report: self.reports.append((time.monotonic(), report)))
        await self.server.start()
        self._ready.set()
        await self._stop.wait()
        await self.server.close()

    def __enter__(self) -> ReportServer:
        self._thread.start()
        assert self._ready.wait(10)
        assert self.server is not None
        return self.server

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def wait_for(self, cond: Callable[[list[Report]], bool], timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond([r for _, r in self.reports]):
                return time.monotonic()
            time.sleep(0.01)
        return None


@pytest.fixture
def reports() -> Iterator[ServerThread]:
    thread = ServerThread()
    with thread:
        yield thread


def test_injected_hooks_report_every_step_and_the_users_hooks_still_run(reports: ServerThread,
                                                                        tmp_path: Path) -> None:
    assert reports.server is not None and BIN is not None
    with MockServer(MOCK_KIND["claude"], clock=time.monotonic) as mock:
        launch = prepare("claude", tmp_path / "claude", mock.url, bin_dir=BIN)
        # The user's own hook, in their settings file: it must keep running next to ours.
        marker = tmp_path / "user-hook-ran"
        settings_file = Path(launch.home) / ".claude" / "settings.json"
        settings = json.loads(settings_file.read_text())
        settings["hooks"] = {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": f"touch {marker}"}]}]}
        settings_file.write_text(json.dumps(settings))

        argv = inject_claude_hooks(launch.argv, hook_launcher())
        pane = PtyAgent(argv, env=launch.env | reports.server.pane_env("e2e"), cwd=launch.cwd)
        pane.start()
        try:
            assert pane.wait_for("? for shortcuts", 60) is not None, pane.text()
            pane.type("SCN=bash DELAY=1 please create the marker file")
            asked = reports.wait_for(lambda rs: any(r.detail.startswith("PermissionRequest") for r in rs), 45)
            assert asked is not None, f"no PermissionRequest report; screen:\n{pane.text()}"
            assert pane.wait_for(DIALOG, 15) is not None, pane.text()
            drawn = time.monotonic()
            assert pane.answer("1", DIALOG, timeout=15) is not None, pane.text()
            done = reports.wait_for(lambda rs: any(r.state == "done" for r in rs), 45)
            assert done is not None, pane.text()
        finally:
            pane.close()

    got = [(r.state, r.detail) for _, r in reports.reports]
    assert got[:4] == [("working", "UserPromptSubmit"), ("working", "PreToolUse Bash"),
                       ("blocked", "PermissionRequest Bash"), ("working", "PostToolUse Bash")], got
    assert got[-1] == ("done", "Stop")
    assert reports.server.accepted == len(got) and not reports.server.rejected
    assert marker.exists()  # --settings merged with the user's settings: their hook ran too
    print(f"\nPermissionRequest report -> dialog seen on screen: {drawn - asked:+.3f} s")
