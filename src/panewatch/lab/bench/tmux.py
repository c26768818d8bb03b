"""`panewatch bench tmux --panes N`: N fake agents in the windows of one private tmux server, watched
through control mode (ours) and, in the same run, the peers' way: `capture-pane` of every pane every
500 ms, one subprocess per capture (as claude-squad does), each capture judged by the same pipeline.

Each pane runs `cat FIFO`; one load-generator process (`panewatch.lab.loadgen`) draws the fakes into
the FIFOs and writes the true states (only the scorer reads them; scoring is bench/scale.py's). CPU is
this process plus its tmux clients or capture subprocesses (% of one core, and in CPU seconds: the box
is shared, so wall-clock figures move with the load average printed at both ends of each phase), the
tmux server's apart; memory is this process's RSS growth per pane; latency runs from the prompt's bytes
written (the fake's truth) to the pane's event; start-up is from the watcher's start to every pane
judged (the poller: its first round over every pane), wall and CPU seconds. Where a latency is spent:
before the watcher read the prompt's last bytes (tmux delivering them, or the poller's round coming), and
after (the schedule and the loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from panewatch.core.machine import PaneMachine, StateChange
from panewatch.core.tmux_formats import PANE_FORMAT, parse_pane, seed_bytes
from panewatch.lab.bench.scale import Phase, _fmt, _score, _spread
from panewatch.lab.loadgen import fifo_path, fifo_reader
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.tmux import TmuxServer
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher

WARMUP = 4.0
POLL = 0.5  # the peers' capture interval


@dataclass
class Row:
    phase: Phase
    tmux_server_cpu: float = 0.0  # % of one core
    cpu_seconds: float = 0.0  # the watcher's CPU over the window (this process + its clients)
    start_wall: float = 0.0  # seconds from start to every pane judged once
    start_cpu: float = 0.0  # CPU seconds of this process (and reaped children) over the same
    clients: int = 0  # control clients attached at the end of the window
    load_start: float = 0.0  # 1-minute load average before the phase's server is made
    load_end: float = 0.0  # ... and at the end of its window


def _cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # capture subprocesses, once reaped
    return usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime


def _tmux(server: TmuxServer, *args: str) -> str:
    return subprocess.run(server.argv(*args), capture_output=True, text=True, timeout=60, check=True).stdout


async def _phase(name: str, panes: int, seconds: float, seed: int) -> Row:
    phase = Phase(name, panes)
    row = Row(phase, load_start=os.getloadavg()[0])
    events: list[tuple[str, float, str]] = []
    after: dict[tuple[str, float], float] = {}  # (pane, event time) -> seconds since its last bytes were read
    with tempfile.TemporaryDirectory(prefix="pwb-", dir="/tmp") as tmp:
        folder = Path(tmp)
        for i in range(panes):
            os.mkfifo(fifo_path(folder, i))
        server = TmuxServer(socket_path=str(folder / "sock"))
        conf = folder / "tmux.conf"
        conf.write_text("set -g default-size 120x32\nset -g history-limit 100\nset -g status off\n")
        subprocess.run(server.argv("-f", str(conf), "new-session", "-d", "-s", "bench", "-n", "p0",
                                   fifo_reader(folder), str(fifo_path(folder, 0))), check=True, timeout=60)
        for i in range(1, panes):
            _tmux(server, "new-window", "-d", "-t", "bench:", "-n", f"p{i}", fifo_reader(folder),
                  str(fifo_path(folder, i)))
        server_proc = psutil.Process(int(_tmux(server, "display-message", "-p", "#{pid}").strip()))
        index_of = {}
        for line in _tmux(server, "list-panes", "-a", "-F", PANE_FORMAT).splitlines():
            info = parse_pane(line)
            if info is not None:
                index_of[info.pane_id] = info.window_name[1:]
        rss_before = psutil.Process().memory_info().rss
        watcher: TmuxWatcher | None = None
        poller: asyncio.Task[None] | None = None
        judged: set[str] = set()
        cpu_start, wall_start = _self_cpu(), time.monotonic()
        if name.startswith("control"):
            def on_added(pane: TmuxPane) -> None:
                def on_change(c: StateChange) -> None:
                    judged.add(c.pane)
                    index, wall = index_of.get(c.pane, c.pane), c.wall or time.time()
                    events.append((index, wall, c.new.state))
                    after[(index, wall)] = max(0.0, c.t - pane.last_output)

                pane.subscribe(on_change)

            watcher = TmuxWatcher(server, ManifestWatcher(), on_added=on_added)
            await watcher.start()
        else:
            poller = asyncio.get_running_loop().create_task(_poll(server, index_of, events, after, judged))
        while len(judged) < panes and time.monotonic() - wall_start < 120:
            await asyncio.sleep(0.01)
        row.start_wall, row.start_cpu = time.monotonic() - wall_start, _self_cpu() - cpu_start
        gen = subprocess.Popen([sys.executable, "-m", "panewatch.lab.loadgen", "--fifo-dir", str(folder),
                                "--panes", str(panes), "--truth", str(folder / "truth.jsonl"), "--seconds",
                                str(seconds), "--seed", str(seed)])
        try:
            await asyncio.sleep(WARMUP)
            me = psutil.Process()
            clients = [p for p in me.children(recursive=True) if p.pid != gen.pid]
            cpu0, clients0, server0, wall0 = _self_cpu(), _cpu(clients), _cpu([server_proc]), time.monotonic()
            phase.rss_per_pane_mb = (me.memory_info().rss - rss_before) / panes / 1e6
            await asyncio.sleep(max(1.0, seconds - WARMUP - 1.0))
            phase.window = time.monotonic() - wall0
            clients = [p for p in clients if p.is_running()]
            row.cpu_seconds = _self_cpu() - cpu0 + _cpu(clients) - clients0
            phase.cpu_percent_of_core = row.cpu_seconds / phase.window * 100
            row.tmux_server_cpu = (_cpu([server_proc]) - server0) / phase.window * 100
            row.load_end = os.getloadavg()[0]
            row.clients = sum(len(c) for c in watcher.clients.values()) if watcher is not None else 0
            while gen.poll() is None:
                await asyncio.sleep(0.1)
        finally:
            if gen.poll() is None:
                gen.kill()
            gen.wait()
            end = time.time()
            if poller is not None:
                poller.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poller
            if watcher is not None:
                await watcher.close()
            subprocess.run(server.argv("kill-server"), capture_output=True, timeout=60)
        truth = [json.loads(line) for line in (folder / "truth.jsonl").read_text().splitlines() if line.strip()]
        _score(phase, truth, events, end, after)
    return row


async def _poll(server: TmuxServer, index_of: dict[str, str], events: list[tuple[str, float, str]],
                after: dict[tuple[str, float], float], judged: set[str]) -> None:
    """The peers' watcher: every POLL seconds, `tmux capture-pane` per pane (a subprocess each), judged."""
    manifests = ManifestWatcher()
    machines: dict[str, PaneMachine] = {}
    info_line = _tmux(server, "list-panes", "-a", "-F", PANE_FORMAT).splitlines()
    infos = [i for i in (parse_pane(line) for line in info_line) if i is not None]
    loop = asyncio.get_running_loop()
    for info in infos:
        machines[info.pane_id] = PaneMachine(manifests.current, info.cols, info.rows, pane_id=info.pane_id,
                                             start=loop.time())
    while True:
        started = loop.time()
        for info in infos:
            proc = await asyncio.create_subprocess_exec(*server.argv("capture-pane", "-p", "-e", "-t", info.pane_id),
                                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            out, _ = await proc.communicate()
            machine = machines[info.pane_id]
            now = loop.time()
            machine.output(now, seed_bytes(info, out.split(b"\n")))
            for change in machine.check(now):
                index, wall = index_of.get(info.pane_id, info.pane_id), time.time()
                events.append((index, wall, change.new.state))
                after[(index, wall)] = max(0.0, change.t - machine.last_output)
            judged.add(info.pane_id)
        await asyncio.sleep(max(0.0, POLL - (loop.time() - started)))


def run_tmux(panes: int, seconds: float = 30.0, seed: int = 7) -> list[Row]:
    if shutil.which("tmux") is None:
        raise SystemExit("panewatch bench tmux: tmux is not installed")
    with contextlib.suppress(ValueError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * panes + 256)), hard))

    async def both() -> list[Row]:
        return [await _phase("control mode (panewatch)", panes, seconds, seed),
                await _phase("capture-pane every 500 ms (peers)", panes, seconds, seed)]

    return asyncio.run(both())


def report(rows: list[Row]) -> str:
    out = ["| panes | watcher | CPU (% of one core) | CPU s | tmux server CPU % | RSS per pane (MB) | clients "
           "| start-up s (CPU s) | prompts | missed | latency median / max (s) | false blocked "
           "| load avg start → end |",
           "|" + "---|" * 13]
    for row in rows:
        p = row.phase
        out.append(f"| {p.panes} | {p.name} | {p.cpu_percent_of_core:.1f} | {row.cpu_seconds:.1f} | "
                   f"{row.tmux_server_cpu:.1f} | {p.rss_per_pane_mb:.3f} | {row.clients or '-'} | "
                   f"{row.start_wall:.2f} ({row.start_cpu:.2f}) | {p.prompts} | {p.missed} | {_fmt(p.latencies)} | "
                   f"{p.false_blocked} | {row.load_start:.2f} → {row.load_end:.2f} |")
    out += ["", "Where a latency is spent (p50 / p90 / p99 / max, s): before the watcher read the prompt's last bytes "
            "(tmux delivering them; the poller: its round reaching the pane), and after (the schedule and the loop).",
            "", "| panes | watcher | before the read | after the read |", "|---|---|---|---|"]
    for row in rows:
        p = row.phase
        out.append(f"| {p.panes} | {p.name} | {_spread(p.before_output)} | {_spread(p.after_output)} |")
    return "\n".join(out)


def run(panes: int = 10, seconds: float = 30.0, seed: int = 7) -> str:
    return report(run_tmux(panes, seconds, seed))
