"""Benchmark: wall time of one hook call, `panewatch pane report working`, as Claude runs it.

Each call is a real subprocess fed a PreToolUse payload on stdin, talking to a real ReportServer
over its unix socket, timed from spawn to exit (what the agent waits for on a synchronous hook);
the reports are checked to have arrived.
Run it with `python -m panewatch.lab.bench.hook [N]`; a `panewatch bench` subcommand can call `run`.

`run_installed`: the same for the hook `panewatch hooks install` puts in the user's settings
(`pane hook report working`), outside tmux, in a pane of a tmux server nobody watches, and in a watched
pane (a ReportServer taking installed hooks' reports at that server's socket, as runtime/tmux_hooks.py
makes; the client only reads `$TMUX`/`$TMUX_PANE`, so no tmux server is needed to time it); and outside
tmux with the daemon's hook-only listener there (board/hookonly.py: the hook waits while the daemon walks
up from it to the agent, here the benchmark itself).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from panewatch.core.combine import Report
from panewatch.runtime.agentproc import AgentProcess, find_agent
from panewatch.runtime.hooks import AgentReport, ReportServer, UserSecret, hook_launcher
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.paneclient import AGENTS_SOCKET, tmux_socket_name

# What Claude Code 2.1.332 pipes into a PreToolUse hook (shape of a recorded payload).
PAYLOAD = json.dumps({
    "session_id": "8d182a34-f1a0-4d6a-8d0d-a0c5e0172ba0",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-ws/8d182a34-f1a0-4d6a-8d0d-a0c5e0172ba0.jsonl",
    "cwd": "/home/dev/ws", "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
    "tool_input": {"command": "touch /tmp/claude_lab_x", "description": "Create the marker file"},
    "tool_use_id": "toolu_ef7585cf46974adc96de16cd",
}).encode()


def console_script_argv() -> list[str]:
    """The installed `panewatch` script next to this Python, else `python -m panewatch`."""
    script = shutil.which("panewatch", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "panewatch"]


def run(n: int = 50, panewatch_argv: list[str] | None = None) -> dict[str, Any]:
    """Time `n` calls; returns {"n", "argv", "median_ms", "p95_ms", "max_ms", "delivered"}."""
    return asyncio.run(_run(max(1, n), panewatch_argv or hook_launcher()))


async def _run(n: int, argv: list[str]) -> dict[str, Any]:
    received: list[Report] = []
    server = ReportServer(lambda _pane, report: received.append(report))
    await server.start()
    try:
        env = {**os.environ, **server.pane_env("bench")}
        times = await _time_calls([*argv, "pane", "report", "working", "--event", "PreToolUse"], env, n)
        await _delivered(received, n)
    finally:
        await server.close()
    return _summary(n, argv, times, len(received))


async def _time_calls(argv: list[str], env: dict[str, str], n: int) -> list[float]:
    times: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(*argv, env=env, stdin=asyncio.subprocess.PIPE)
        await proc.communicate(PAYLOAD)
        times.append(time.perf_counter() - start)
    return times


async def _delivered(received: list[Report], n: int) -> None:
    deadline = time.monotonic() + 5.0
    while len(received) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


def run_installed(n: int = 50) -> dict[str, dict[str, Any]]:
    """Time `n` installed-hook calls in each case: {"not in tmux" | "unwatched tmux" | "watched pane": summary}."""
    return asyncio.run(_run_installed(max(1, n), hook_launcher()))


async def _run_installed(n: int, argv: list[str]) -> dict[str, dict[str, Any]]:
    directory = Path(tempfile.mkdtemp(prefix="pw-hookbench-"))  # a private runtime dir (mkdtemp: 0700)
    watched = "/tmp/tmux-bench/default"
    received: list[Report] = []
    server = ReportServer(lambda _pane, report: received.append(report), path=directory / tmux_socket_name(watched),
                          tmux=lambda sock, pane: pane if sock == watched and pane == "%1" else None,
                          secret=UserSecret(directory))
    await server.start()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "PANEWATCH_PANE", "PANEWATCH_TOKEN"))}
    base["PANEWATCH_RUNTIME_DIR"] = str(directory)
    cases = {"not in tmux": base, "unwatched tmux": {**base, "TMUX": "/tmp/tmux-bench/other,1,0", "TMUX_PANE": "%1"},
             "watched pane": {**base, "TMUX": f"{watched},1,0", "TMUX_PANE": "%1"}, "hook-only": base}
    manifests = ManifestWatcher().current()
    agents: list[AgentProcess | None] = []

    def walk(report: AgentReport) -> None:  # what the daemon's HookOnlyBoard does first with each report
        agents.append(find_agent(report.parent, manifests))
        received.append(report.report)

    hook_only = ReportServer(lambda _pane, _report: None, path=directory / AGENTS_SOCKET, secret=UserSecret(directory),
                             agents=walk)
    out: dict[str, dict[str, Any]] = {}
    try:
        for label, env in cases.items():
            if label == "hook-only":
                await hook_only.start()
            before = len(received)
            times = await _time_calls([*argv, "pane", "hook", "report", "working", "--event", "PreToolUse"], env, n)
            if label in ("watched pane", "hook-only"):
                await _delivered(received, before + n)
            out[label] = _summary(n, argv, times, len(received) - before)
    finally:
        await server.close()
        await hook_only.close()
        shutil.rmtree(directory, ignore_errors=True)
    return out


def _summary(n: int, argv: list[str], times: list[float], delivered: int) -> dict[str, Any]:
    times = sorted(times)
    ms = [t * 1000 for t in times]
    return {
        "n": n,
        "argv": argv,
        "median_ms": round(statistics.median(ms), 2),
        "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2),
        "max_ms": round(ms[-1], 2),
        "delivered": delivered,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 50
    for label, launcher in (("hook_launcher()", hook_launcher()), ("console script", console_script_argv())):
        result = run(n, launcher)
        print(f"{label:16} `pane report working` x{result['n']}: median {result['median_ms']} ms, "
              f"p95 {result['p95_ms']} ms, max {result['max_ms']} ms, delivered {result['delivered']}/{result['n']}")
    for label, result in run_installed(n).items():
        print(f"installed hook, {label:14} `pane hook report working` x{result['n']}: median {result['median_ms']} "
              f"ms, p95 {result['p95_ms']} ms, max {result['max_ms']} ms, "
              f"delivered {result['delivered']}/{result['n']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
