"""Installed hooks against a real tmux server (private socket per test): `panewatch hooks install` into a
private HOME, a process in a pane started by hand (not by panewatch) runs the installed hook command, the
watcher's pane moves by the report (source hook); forged secrets, unwatched panes and panes panewatch
launched itself are ignored; who listens when two watchers watch one server; uninstall gives the
settings back byte for byte."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hookutil import ORIGINAL
from hookutil import installed as installed
from panewatch.runtime import paneclient
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher
from tmuxutil import Tmux, agent_cmd, until
from tmuxutil import tmux as tmux

pytestmark = pytest.mark.needs("tmux")  # tests/components.py: fails without it unless PANEWATCH_SKIP=tmux



def panewatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "panewatch", *args], capture_output=True, text=True, timeout=60)


def by_hand(tmp_path: Path, name: str, *steps: str) -> str:
    """A stand-in agent pane that runs its hooks as a user's agent would: waits for `go-NAME`, runs `steps`
    (each a shell command line), touches `done-NAME`, then sleeps."""
    go, done = tmp_path / f"go-{name}", tmp_path / f"done-{name}"
    body = "; ".join(steps)
    return agent_cmd("sh", f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.02; done; {body}; "
                           f"touch {shlex.quote(str(done))}")


def payload(event: str, **fields: str) -> str:
    return shlex.quote(json.dumps({"hook_event_name": event, "session_id": "s", **fields}))


def send_raw(path: str, message: dict[str, str]) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall(json.dumps(message).encode() + b"\n")


def test_an_installed_hook_in_a_pane_started_by_hand_moves_its_state(tmux: Tmux, installed: dict[str, str],
                                                                     tmp_path: Path) -> None:
    asked = f"printf %s {payload('PermissionRequest', tool_name='Bash')} | {installed['PermissionRequest']}"
    as_if_launched = f"PANEWATCH_PANE_ID=x PANEWATCH_TOKEN=y {installed['Stop']} </dev/null"
    tmux("new-session", "-d", "-s", "work", "-x", "100", "-y", "30", by_hand(tmp_path, "a", asked))
    tmux("new-window", "-d", "-t", "work", "-n", "b",
         by_hand(tmp_path, "b", as_if_launched, f"{installed['PreToolUse']} </dev/null"))
    a = tmux("display-message", "-p", "-t", "work:0", "#{pane_id}")
    b = tmux("display-message", "-p", "-t", "work:b", "#{pane_id}")
    socket_path = tmux("display-message", "-p", "#{socket_path}")

    async def main() -> None:
        panes: dict[str, TmuxPane] = {}
        watcher = TmuxWatcher(tmux.server, ManifestWatcher(), on_added=lambda p: panes.setdefault(p.pane_id, p),
                              hooks="share")
        await watcher.start()
        try:
            assert watcher.hooks is not None and watcher.hooks.reports is not None, "no listener"
            reports = watcher.hooks.reports
            assert watcher.hooks.path is not None
            listen = str(watcher.hooks.path)
            await until(lambda: a in panes and panes[a].seeded and b in panes and panes[b].seeded, 10, "seeded")
            assert panes[a].state.state == "idle"
            (tmp_path / "go-a").touch()
            await until(lambda: panes[a].state.state == "blocked", 10, "the hook's blocked report")
            state = panes[a].state
            assert state.source == "hook" and "PermissionRequest Bash" in state.detail, state
            assert reports.accepted == 1 and not reports.rejected
            # forged secret, and a pane this server does not have: refused, nothing moves
            secret = paneclient.read_secret(str(watcher.hooks.path.parent))
            assert secret is not None
            send_raw(listen, {"tmux": socket_path, "tmux_pane": b, "token": "0" * 64, "state": "blocked"})
            send_raw(listen, {"tmux": socket_path, "tmux_pane": "%999", "token": secret, "state": "blocked"})
            send_raw(listen, {"tmux": "/elsewhere/tmux", "tmux_pane": b, "token": secret, "state": "blocked"})
            await until(lambda: sum(reports.rejected.values()) == 3, 5, "the refusals")
            assert reports.rejected == {"bad_secret": 1, "unknown_pane": 2}, reports.rejected
            # in a pane panewatch launched (its env), the installed hook is silent: only the next one arrives
            (tmp_path / "go-b").touch()
            await until(lambda: reports.accepted == 2, 10, "pane b's PreToolUse")
            await until(lambda: (tmp_path / "done-b").exists(), 10, "pane b's script")
            assert panes[b].state.source == "hook" and panes[b].state.detail == "PreToolUse"
            assert reports.accepted == 2 and sum(reports.rejected.values()) == 3
        finally:
            await watcher.close()
        assert not Path(listen).exists()  # our socket goes with us

    asyncio.run(asyncio.wait_for(main(), 60))
    out = panewatch("hooks", "uninstall", "--agent", "claude")
    assert out.returncode == 0 and "byte for byte" in out.stdout, out
    assert (Path(os.environ["HOME"]) / ".claude" / "settings.json").read_bytes() == ORIGINAL


def test_a_hook_nobody_watches_exits_0_silently(installed: dict[str, str], tmp_path: Path) -> None:
    """Not in tmux, a tmux server nobody watches, no runtime dir: exit 0, no output, nothing read."""
    command = installed["PermissionRequest"]
    runtime = os.environ["PANEWATCH_RUNTIME_DIR"]
    for env in ({}, {"TMUX": "/tmp/nobody-watches/default,1,0", "TMUX_PANE": "%0"},
                {"TMUX": "/tmp/x,1,0", "TMUX_PANE": "%0", "PANEWATCH_RUNTIME_DIR": str(tmp_path / "none")}):
        full = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")} | env
        out = subprocess.run(command, shell=True, env=full, capture_output=True, timeout=30,
                             input=b'{"hook_event_name": "PermissionRequest"}')
        assert (out.returncode, out.stdout, out.stderr) == (0, b"", b""), (env, out)
    assert sorted(os.listdir(runtime)) == [paneclient.SECRET_FILE]  # no socket made by a hook


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_daemon_takes_the_reports_over_and_a_foreground_watcher_steps_aside(tmux: Tmux, installed: dict[str, str],
                                                                                 tmp_path: Path) -> None:
    report = f"printf %s {payload('PermissionRequest', tool_name='Bash')} | {installed['PermissionRequest']}"
    tmux("new-session", "-d", "-s", "work", "-x", "100", "-y", "30",
         by_hand(tmp_path, "a", report) + "")
    tmux("new-window", "-d", "-t", "work", "-n", "b", by_hand(tmp_path, "b", report))
    a = tmux("display-message", "-p", "-t", "work:0", "#{pane_id}")
    b = tmux("display-message", "-p", "-t", "work:b", "#{pane_id}")

    async def main() -> None:
        foreground = TmuxWatcher(tmux.server, ManifestWatcher(), hooks="share")
        daemon = TmuxWatcher(tmux.server, ManifestWatcher(), hooks="take")
        await foreground.start()
        try:
            assert foreground.hooks is not None and foreground.hooks.reports is not None
            await daemon.start()
            assert daemon.hooks is not None and daemon.hooks.reports is not None
            assert daemon.hooks.reports.owns_path() and not foreground.hooks.reports.owns_path()
            await until(lambda: a in daemon.panes and daemon.panes[a].seeded and a in foreground.panes
                        and foreground.panes[a].seeded, 10, "seeded")
            (tmp_path / "go-a").touch()
            await until(lambda: daemon.panes[a].state.state == "blocked", 10, "the daemon's report")
            await foreground.hooks.check()  # its periodic look: someone else took the path
            assert foreground.hooks.reports is None
            assert foreground.panes[a].state.source != "hook"
            await daemon.close()
            await foreground.hooks.check()  # the daemon is gone: the foreground listens again
            assert foreground.hooks.reports is not None and foreground.hooks.reports.owns_path()
            await until(lambda: b in foreground.panes and foreground.panes[b].seeded, 10, "b seeded")
            (tmp_path / "go-b").touch()
            await until(lambda: foreground.panes[b].state.source == "hook", 10, "the foreground's report")
        finally:
            await daemon.close()
            await foreground.close()
            # KNOWN LEAK (not found yet): one connection accepted by a ReportServer during the take-over stays
            # unclosed. Collected here so its ResourceWarning stays in this test (ignored below), not in the next.
            gc.collect()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_the_daemon_shows_an_installed_hooks_report_on_the_panes_card(tmux: Tmux, installed: dict[str, str],
                                                                      tmp_path: Path) -> None:
    from boardutil import cli, start_serve, wait_for

    report = f"printf %s {payload('PermissionRequest', tool_name='Bash')} | {installed['PermissionRequest']}"
    tmux("new-session", "-d", "-s", "work", "-x", "100", "-y", "30", by_hand(tmp_path, "a", report))
    serve = start_serve()
    try:
        def card() -> dict[str, object] | None:
            out = cli("ls", "--json")
            cards = json.loads(out.stdout)["panes"] if out.returncode == 0 else []
            return next((c for c in cards if c.get("target") == "work:0.0"), None)

        wait_for(lambda: card(), "the pane's card", 20)
        (tmp_path / "go-a").touch()
        blocked = wait_for(lambda: (c := card()) and c["state"] == "blocked" and c, "blocked by the hook", 20)
        assert blocked["source"] == "hook" and "PermissionRequest" in str(blocked["detail"]), blocked
    finally:
        serve.stop()
