"""The daemon leaves nothing behind: no orphan when it is killed, no stale socket, no pty per exited
pane, and it notices a new manifest without any pane running. All against a real `panewatch serve`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from boardutil import ServeProcess, cards, cli, start_serve, wait_for, wait_state
from panewatch.board import client
from panewatch.reaper import end_sessions

# Ignores the hangup a closing pty sends (only an explicit TERM/KILL ends it); then creates the file
# named by its argument, which also marks it in the process list.
STUBBORN = "import signal, sys, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); open(sys.argv[1], 'w').close(); " \
           "time.sleep(600)"
# Starts a hook-report server, says where its socket is, and waits to be killed.
REPORTER = "import asyncio; from panewatch.hooks import ReportServer\n" \
           "async def main():\n" \
           "    server = ReportServer(lambda pane, report: None); await server.start()\n" \
           "    print(server.path, flush=True); await asyncio.sleep(600)\n" \
           "asyncio.run(main())"


def _call(op: str, **params: Any) -> dict[str, Any]:
    return asyncio.run(client.call(op, **params))


def _processes(mark: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(mark in arg for arg in proc.info["cmdline"] or ()):
            with contextlib.suppress(psutil.Error):
                if proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
    return found


def test_kill_9_of_the_daemon_ends_its_panes_even_those_ignoring_the_hangup(tmp_path: Path) -> None:
    mark = str(tmp_path / "stubborn-ready")
    server = start_serve()
    try:
        card = _call("new", argv=[sys.executable, "-c", STUBBORN, mark], name="stubborn")["card"]
        pane = psutil.Process(card["pid"])
        wait_for(lambda: Path(mark).exists(), "the stubborn program ignores SIGHUP")
        helpers = [p for p in psutil.Process(server.proc.pid).children() if p.pid != pane.pid]
        server.proc.send_signal(signal.SIGKILL)  # no cleanup of its own: the pty hangup is all it gets
        server.proc.wait(10)
        wait_for(lambda: not _processes(mark), "the stubborn program gone with its daemon")
        wait_for(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in helpers),
                 "the daemon's helpers gone too")
    finally:
        server.stop()
        for proc in _processes(mark):
            proc.kill()


def test_the_watchdog_leaves_a_recycled_pid_alone(tmp_path: Path) -> None:
    # A session leader whose start time is not the one recorded is someone else's (its pid was reused).
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", STUBBORN, str(ready)], start_new_session=True)
    try:
        wait_for(ready.exists, "the stubborn program ignores SIGHUP")
        started = psutil.Process(proc.pid).create_time()
        assert end_sessions({proc.pid: started - 10.0}) == 0
        assert proc.poll() is None
        assert end_sessions({proc.pid: started}) == 1
        assert proc.wait(5) == -signal.SIGTERM  # the hangup was ignored; the next step ended it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _reporter() -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([sys.executable, "-c", REPORTER], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    with proc.stdout:
        path = Path(proc.stdout.readline().strip())
    assert path.name.startswith(f"reports-{proc.pid}-") and path.exists()
    return proc, path


def test_report_sockets_of_killed_processes_are_removed_at_start_and_live_ones_kept() -> None:
    live, live_path = _reporter()
    try:
        for start in ("serve", "run"):
            dead, dead_path = _reporter()
            dead.kill()  # its socket file stays behind
            dead.wait()
            assert dead_path.exists()
            if start == "serve":
                start_serve().stop()
            else:
                assert cli("run", "--", "true").returncode == 0
            assert not dead_path.exists(), start
            assert live_path.exists(), start  # its process runs: never touched
    finally:
        live.kill()
        live.wait()


def _fds(server: ServeProcess) -> int:
    return psutil.Process(server.proc.pid).num_fds()


def test_exited_panes_release_their_pty_while_their_cards_stay(serve: ServeProcess) -> None:
    def short_pane(i: int) -> str:
        pane_id: str = _call("new", argv=["sh", "-c", f"echo short pane {i}"], name=f"short{i}")["card"]["id"]
        return pane_id

    wait_state(short_pane(0), "exited")  # the first pane starts what every later one shares
    before = _fds(serve)
    count = 12
    ids = [short_pane(i) for i in range(1, count + 1)]
    for pane_id in ids:
        wait_state(pane_id, "exited")
    listed = {c["id"]: c for c in cards()}
    assert all(listed[pane_id]["state"] == "exited" for pane_id in ids)  # still on the board
    assert _fds(serve) - before <= 2, f"{_fds(serve) - before} more descriptors after {count} exited panes"


TOY = '''
[agent]
id = "toy"
name = "Toy agent"
processes = ["toy-agent"]

[[rules]]
id = "toy-waits"
state = "blocked"
region = "screen"
any = ['TOY WAITS']
note = "test rule"
'''


def test_a_manifest_added_while_no_pane_runs_is_picked_up(serve: ServeProcess) -> None:
    agents = Path(os.environ["PANEWATCH_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "toy.toml").write_text(TOY, encoding="utf-8")
    made = wait_for(lambda: (out := cli("new", "--agent", "toy", "--", "sh", "-c", "echo TOY WAITS; sleep 60"))
                    .returncode == 0 and out, "the daemon knows the new agent", interval=0.2)
    card = wait_state(made.stdout.strip(), "blocked")
    assert (card["agent"], card["rule"]) == ("toy", "toy-waits")
