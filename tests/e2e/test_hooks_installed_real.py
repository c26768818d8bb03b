"""`panewatch hooks install` with the pinned REAL CLIs started by hand in a tmux pane (not by panewatch),
against the mock model servers: the installed hooks in the agent's own user settings fire, report the
pane by `$TMUX_PANE` to the watcher of that tmux server, and the permission dialog is reported by the
hook; the answer goes through the guard as send-keys; `hooks uninstall` gives the settings file back
byte for byte.

Gemini is the case that needs this most: its per-launch hooks need root (runtime/hookinject.py), user
settings do not. Needs the pinned CLIs and tmux (PANEWATCH_SKIP=agents,tmux opts out). Every wait polls
with a deadline; no latency is asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from panewatch.core.combine import PaneState, Report
from panewatch.runtime.guard import InputGuard
from panewatch.runtime.hooks import ReportServer
from panewatch.runtime.hooksinstall import settings_file
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher
from panewatch.testing.capture import PROFILES
from panewatch.testing.homes import MOCK_KIND, find_agents_bin, prepare
from panewatch.testing.mock import MockServer
from tmuxutil import Tmux, until
from tmuxutil import tmux as tmux

BIN = find_agents_bin()
pytestmark = pytest.mark.needs("agents", "tmux")
STARTUP, STEP = 60.0, 45.0
# The first events each agent's hooks report in the bash scenario (the dialog's report third), and its last.
EVENTS = {
    "claude": (["UserPromptSubmit", "PreToolUse", "PermissionRequest"], "Stop"),
    "codex": (["UserPromptSubmit", "PreToolUse", "PermissionRequest"], "Stop"),
    "gemini": (["BeforeAgent", "BeforeTool", "Notification"], "AfterAgent"),
    "qwen": (["UserPromptSubmit", "PermissionRequest", "PreToolUse"], "Stop"),  # PreToolUse after the grant
    "copilot": (["userPromptSubmitted", "preToolUse", "Notification"], "agentStop"),  # a hooks file of ours
}
# The event whose report is the permission request (else PermissionRequest): Gemini's and Copilot's
# notification (Copilot's permissionRequest fires before its own approval rules: not subscribed).
BLOCKED_BY = {"gemini": "Notification", "copilot": "Notification"}


@pytest.mark.parametrize("name", list(EVENTS))
def test_installed_hooks_report_a_real_agent_started_by_hand_in_tmux(name: str, tmux: Tmux, tmp_path: Path) -> None:
    assert BIN is not None
    profile = PROFILES[name]
    dialog = profile.dialogs["bash"][0]
    with MockServer(MOCK_KIND[name], clock=time.monotonic) as mock:
        launch = prepare(name, tmp_path / name, mock.url, bin_dir=BIN)
        config = settings_file(name, launch.env)
        original = config.read_bytes() if config.exists() else None  # Copilot: install makes a file of its own
        install = subprocess.run([sys.executable, "-m", "panewatch", "hooks", "install", "--agent", name],
                                 env={**launch.env, **_panewatch_env()}, capture_output=True, text=True, timeout=60)
        assert install.returncode == 0 and "installed" in install.stdout, install
        env_args = [arg for key, value in launch.env.items() for arg in ("-e", f"{key}={value}")]
        # a pane inherits the tmux server's environment, i.e. the test run's: Gemini CLI (ink's is-in-ci) with
        # CI=true in it, as on CI machines, runs non-interactively and exits at once; a user's shell has no CI
        ci = [arg for key in os.environ if key in ("CI", "CONTINUOUS_INTEGRATION") or key.startswith("CI_")
              for arg in ("-u", key)]
        tmux("new-session", "-d", "-s", "agents", "-x", "120", "-y", "32", "-c", launch.cwd, *env_args,
             " ".join(_quote(a) for a in ["env", *ci, *launch.argv]))
        pane_id = tmux("display-message", "-p", "-t", "agents:0", "#{pane_id}")
        got: list[Report] = []
        servers: list[ReportServer] = []
        after: list[PaneState] = []

        async def main() -> None:
            panes: dict[str, TmuxPane] = {}
            watcher = TmuxWatcher(tmux.server, ManifestWatcher(), on_added=lambda p: panes.setdefault(p.pane_id, p),
                                  hooks="share")
            await watcher.start()
            try:
                assert watcher.hooks is not None and watcher.hooks.reports is not None
                server = watcher.hooks.reports
                deliver = server.on_report

                def record(pane: str, report: Report) -> None:
                    assert pane == pane_id
                    got.append(report)
                    deliver(pane, report)
                    after.append(panes[pane].state)  # what the report did to the watched pane

                server.on_report = record
                servers.append(server)
                await until(lambda: any(r in _screen(tmux, pane_id) for r in profile.ready), STARTUP, "ready")
                tmux("send-keys", "-t", pane_id, "-l", "SCN=bash DELAY=1 run the scripted scenario")
                for _attempt in range(5):  # Gemini CLI just drawn may take the Enter as part of the text
                    await asyncio.sleep(0.3)  # text and Enter together would be a paste
                    tmux("send-keys", "-t", pane_id, "Enter")
                    with contextlib.suppress(AssertionError):
                        await until(lambda: bool(got), 3, "the prompt taken (its first hook)")
                        break
                asked = BLOCKED_BY.get(name, "PermissionRequest")
                await until(lambda: any(r.detail.startswith(asked) for r in got), STEP, f"the {asked} report")
                index = next(i for i, r in enumerate(got) if r.detail.startswith(asked))
                assert got[index].state == "blocked", got[index]
                # the dialog reported by the hook: the pane blocked by it (or by the dialog already drawn)
                assert after[index].state == "blocked" and after[index].source in ("hook", "screen"), after[index]
                pane = panes[pane_id]
                await until(lambda: dialog in _screen(tmux, pane_id) and pane.verdict.state == "blocked", 15,
                            "the dialog on screen")
                guard = InputGuard(pane, pane_id=pane_id)
                for _attempt in range(3):  # Codex under load may drop the first key on a fresh approval
                    prompt = guard.prompt()
                    allow = prompt.option("allow_once")
                    assert allow is not None, prompt.options
                    if (await guard.answer(allow.number, prompt.fingerprint, timeout=5)).cleared:
                        break
                last = EVENTS[name][1]
                await until(lambda: any(r.detail.startswith(last) for r in got), STEP, f"the {last} report")
                assert server.accepted == len(got) and not server.rejected, server.rejected
            finally:
                await watcher.close()

        try:
            asyncio.run(asyncio.wait_for(main(), 150))
        finally:
            rejected = dict(servers[0].rejected) if servers else None
            print(f"\n{name}: " + ", ".join(f"{r.state}:{r.detail}" for r in got) + f"; rejected: {rejected}; "
                  + "pane after each: " + ", ".join(f"{a.state}/{a.source}" for a in after))
    events = [r.detail.split()[0] for r in got]
    assert events[:3] == EVENTS[name][0] and events[-1] == EVENTS[name][1], events
    uninstall = subprocess.run([sys.executable, "-m", "panewatch", "hooks", "uninstall", "--agent", name],
                               env={**launch.env, **_panewatch_env()}, capture_output=True, text=True, timeout=60)
    assert uninstall.returncode == 0, uninstall
    print(uninstall.stdout.strip())
    if original is None:
        assert not config.exists() and "removed" in uninstall.stdout, uninstall.stdout
        return
    now = config.read_bytes()
    if "byte for byte" in uninstall.stdout:
        assert now == original
    else:  # the agent wrote its settings meanwhile (Claude adds `env` it was started with): its edit stays
        assert "kept the changes" in uninstall.stdout, uninstall
        assert b"pane hook" not in now
        if name == "codex":  # Codex 0.171.0 appends a [tui] table at its first start (inside our block): kept
            assert now.startswith(original), now
        before, doc = (tomllib.loads(original.decode()), tomllib.loads(now.decode())) if name == "codex" \
            else (json.loads(original), json.loads(now))
        assert {k: doc.get(k) for k in before} == before, doc


def _panewatch_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("PANEWATCH_")}


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def _screen(tmux: Tmux, pane_id: str) -> str:
    return tmux("capture-pane", "-p", "-t", pane_id)
