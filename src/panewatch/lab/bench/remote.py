"""`panewatch bench remote --hosts H --panes N`: H "remote" hosts, each a real sshd on a loopback port
(testing/sshd.py) in front of its own tmux server with N fake agents, watched through ssh (ours:
`panewatch tmux --host`'s RemoteWatcher) and, in the same run with the same load (same seeds), the same
kind of panes watched locally (TmuxWatcher on the tmux socket, no ssh hop).

Each pane runs `cat FIFO`; one load generator per host draws the fakes and writes the true states
(scoring is bench/scale.py's). CPU, % of one core over the measured window:
  watcher     this process + its children (ssh or tmux control clients) + each host's ssh master (ssh
              detaches it: not our child);
  far side    what the link costs the host: sshd's per-connection processes and the tmux control
              clients they run (the tmux servers apart, as bench/tmux.py reports them);
latency runs from the prompt written (the generator's clock) to the pane's blocked state change (ours),
both this machine's wall clock: the ssh hop is loopback, so the difference is the hop's own cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from panewatch.core.tmux_formats import PANE_FORMAT, parse_pane
from panewatch.lab.bench.scale import Phase, _fmt, _score
from panewatch.lab.bench.tmux import WARMUP, _cpu, _self_cpu
from panewatch.lab.loadgen import fifo_path, fifo_reader
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.remote import RemoteServer, RemoteWatcher
from panewatch.runtime.ssh import SshOptions, ssh_options
from panewatch.runtime.tmux import TmuxServer
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher
from panewatch.testing.sshd import Sshd


@dataclass
class Row:
    phase: Phase
    hosts: int
    far_cpu: float = 0.0  # sshd connections + the tmux clients they run, % of one core
    tmux_servers_cpu: float = 0.0


def _tmux(server: TmuxServer, *args: str) -> str:
    return subprocess.run(server.argv(*args), capture_output=True, text=True, timeout=60, check=True).stdout


def _master(sshd: Sshd) -> psutil.Process | None:
    check = subprocess.run([*ssh_options(SshOptions(config_file=str(sshd.ssh_config)), sshd.alias), "-O", "check",
                            "--", sshd.alias], capture_output=True, text=True, timeout=10)
    found = re.search(r"pid=(\d+)", check.stderr)
    with contextlib.suppress(psutil.Error):
        return psutil.Process(int(found.group(1))) if found else None
    return None


def _far(hosts: list[Sshd]) -> list[psutil.Process]:
    procs: list[psutil.Process] = []
    for sshd in hosts:
        for session in sshd.sessions():
            procs.append(session)
            with contextlib.suppress(psutil.Error):
                procs += session.children(recursive=True)
    return procs


def _start_servers(root: Path, hosts: int, panes: int) -> list[tuple[TmuxServer, dict[str, str], psutil.Process]]:
    out = []
    for h in range(hosts):
        folder = root / f"h{h}"
        folder.mkdir()
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
        index_of = {}
        for line in _tmux(server, "list-panes", "-a", "-F", PANE_FORMAT).splitlines():
            info = parse_pane(line)
            if info is not None:
                index_of[info.pane_id] = f"{h}:{info.window_name[1:]}"
        out.append((server, index_of, psutil.Process(int(_tmux(server, "display-message", "-p", "#{pid}").strip()))))
    return out


async def _phase(name: str, hosts: list[Sshd], panes: int, seconds: float, seed: int, remote: bool) -> Row:
    phase = Phase(name, panes * len(hosts))
    events: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="pwr-", dir="/tmp") as tmp:
        root = Path(tmp)
        servers = _start_servers(root, len(hosts), panes)
        watchers: list[TmuxWatcher] = []
        for (server, index_of, _), sshd in zip(servers, hosts, strict=True):
            def on_added(pane: TmuxPane, index_of: dict[str, str] = index_of) -> None:
                pane.subscribe(lambda c: events.append((index_of.get(pane.pane_id, c.pane), c.wall or time.time(),
                                                        c.new.state)))

            if remote:
                link = RemoteServer(socket_path=server.socket_path, host=sshd.alias,
                                    ssh=SshOptions(config_file=str(sshd.ssh_config)))
                watchers.append(RemoteWatcher(link, ManifestWatcher(), on_added=on_added))
            else:
                watchers.append(TmuxWatcher(server, ManifestWatcher(), on_added=on_added))
        await asyncio.gather(*(w.start() for w in watchers))
        gens = [subprocess.Popen([sys.executable, "-m", "panewatch.lab.loadgen", "--fifo-dir", str(root / f"h{h}"),
                                  "--panes", str(panes), "--truth", str(root / f"truth{h}.jsonl"), "--seconds",
                                  str(seconds), "--seed", str(seed + h)]) for h in range(len(hosts))]
        tmux_procs = [proc for _, _, proc in servers]
        try:
            await asyncio.sleep(WARMUP)
            me = psutil.Process()
            gen_pids = {g.pid for g in gens}
            ours = [p for p in me.children(recursive=True) if p.pid not in gen_pids]
            if remote:
                ours += [m for m in (_master(s) for s in hosts) if m is not None]
            far = _far(hosts) if remote else []
            cpu0, ours0, far0, tmux0, wall0 = _self_cpu(), _cpu(ours), _cpu(far), _cpu(tmux_procs), time.monotonic()
            await asyncio.sleep(max(1.0, seconds - WARMUP - 1.0))
            phase.window = time.monotonic() - wall0
            phase.cpu_percent_of_core = (_self_cpu() - cpu0 + _cpu(ours) - ours0) / phase.window * 100
            far_cpu = (_cpu(far) - far0) / phase.window * 100
            tmux_cpu = (_cpu(tmux_procs) - tmux0) / phase.window * 100
            while any(g.poll() is None for g in gens):
                await asyncio.sleep(0.1)
        finally:
            for gen in gens:
                if gen.poll() is None:
                    gen.kill()
                gen.wait()
            end = time.time()
            await asyncio.gather(*(w.close() for w in watchers), return_exceptions=True)
            for server, _, _ in servers:
                subprocess.run(server.argv("kill-server"), capture_output=True, timeout=60)
        truth = []
        for h in range(len(hosts)):
            for line in (root / f"truth{h}.jsonl").read_text().splitlines():
                if line.strip():
                    entry = json.loads(line)
                    entry["pane"] = f"{h}:{entry['pane']}"
                    truth.append(entry)
        _score(phase, truth, events, end)
    return Row(phase, len(hosts), far_cpu, tmux_cpu)


def run_remote(hosts: int, panes: int, seconds: float = 30.0, seed: int = 7) -> list[Row]:
    if shutil.which("tmux") is None:
        raise SystemExit("panewatch bench remote: tmux is not installed")
    with contextlib.suppress(ValueError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8 * hosts * panes + 256)), hard))
    with tempfile.TemporaryDirectory(prefix="pwr-sshd-", dir="/tmp") as tmp:
        servers = [Sshd(Path(tmp) / f"sshd{h}", alias=f"bench{h}") for h in range(hosts)]
        try:
            for sshd in servers:
                sshd.start()

            async def both() -> list[Row]:
                return [await _phase("remote, through ssh (panewatch)", servers, panes, seconds, seed, True),
                        await _phase("local, same panes (no ssh hop)", servers, panes, seconds, seed, False)]

            return asyncio.run(both())
        finally:
            for sshd in servers:
                sshd.close()


def report(rows: list[Row]) -> str:
    out = ["| hosts x panes | watched | watcher CPU (% of one core) | far side CPU % | tmux servers CPU % | prompts "
           "| missed | latency median / max (s) | false blocked |", "|" + "---|" * 9]
    for row in rows:
        p = row.phase
        out.append(f"| {row.hosts} x {p.panes // max(1, row.hosts)} | {p.name} | {p.cpu_percent_of_core:.1f} | "
                   f"{row.far_cpu:.1f} | {row.tmux_servers_cpu:.1f} | {p.prompts} | {p.missed} | "
                   f"{_fmt(p.latencies)} | {p.false_blocked} |")
    return "\n".join(out)


def run(hosts: int = 2, panes: int = 10, seconds: float = 30.0, seed: int = 7) -> str:
    return report(run_remote(hosts, panes, seconds, seed))
