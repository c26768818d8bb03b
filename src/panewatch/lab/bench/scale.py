"""`panewatch bench scale --panes N`: many fake agents in real PTYs, watched by the real runtime.

Each pane is a real `LivePane` (PTY, screen, detector, foreground polling, combine) running
`sleep`; one load-generator process (`panewatch.lab.loadgen`, its own process: its CPU is not the
watcher's) draws N fake agents straight into the panes' pty slaves, so the fakes do not swamp the
machine and nothing stands between a fake's write and the pane (no `cat` per pane: 1000 more
processes to schedule, and a hop whose delay was the box's, not ours). Each true state is stamped
right after the write that draws it, so a starved fake agent delays its own stamp, not our latency:
what is measured, stamp to event, is the watcher's (the kernel's pty, our loop, our policy).

The watcher's own CPU (this process, children excluded), its loop's lateness and the time its
thread waited for a CPU (a starved watcher runs late however cheap it is), and memory, are measured
over the same window for our timing policy and for the published design's fixed 700 ms sweep, one
phase after the other in the same run, with the same seeds and load; the load average at both ends
of the window says how busy the shared box was.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from panewatch.core.machine import StateChange
from panewatch.core.policy import ChangeDrivenSchedule, FixedSweepSchedule, Schedule
from panewatch.runtime.live import LivePane, ManifestWatcher

_START_NICE = os.getpriority(os.PRIO_PROCESS, 0)
WARMUP = 4.0  # seconds before the CPU window opens: panes started, fakes drawing
LAG_PROBE = 0.05  # seconds: how often the event loop's lateness is sampled


@dataclass
class Phase:
    name: str
    panes: int
    cpu_percent_of_core: float = 0.0  # the watcher process (children excluded), over the window ...
    sys_percent_of_core: float = 0.0  # ... of which in the kernel (pty reads, epoll, tcgetpgrp, /proc)
    loadgen_cpu_percent: float = 0.0
    rss_per_pane_mb: float = 0.0
    latencies: list[float] = field(default_factory=list)  # prompt drawn -> pane state blocked
    # Where a latency is spent: after the pane's last output was read (the schedule + the loop) ...
    after_output: list[float] = field(default_factory=list)
    # ... and the rest, before it was read (the fake's write -> `cat` -> the pty -> our read: the box).
    before_output: list[float] = field(default_factory=list)
    loop_lags: list[float] = field(default_factory=list)  # a 50 ms timer's lateness, over the window
    residuals: list[float] = field(default_factory=list)  # answer -> pane leaves blocked
    missed: int = 0
    missed_at: list[tuple[str, float, float]] = field(default_factory=list)  # (pane, prompt t, answer t)
    prompts: int = 0
    false_blocked: int = 0
    checks: int = 0  # times a pane's schedule fired
    classifications: int = 0  # times rules actually ran (the screen differed from the one last judged)
    window: float = 0.0
    load_start: float = 0.0  # the machine's 1-minute load average as the window opens (a shared box) ...
    load_average: float = 0.0  # ... and as it closes
    nice: int = 0  # the watcher's niceness (`--nice`); the load generator's is the bench's
    # The runtime's main thread runnable but waiting for a CPU, % of the window (/proc schedstat): a
    # starved process cannot use more CPU than its share, and its loop runs late however cheap it is.
    runqueue_wait_percent: float = 0.0


def _runqueue_wait() -> float:
    """Seconds this thread has waited on a run queue (0 where /proc/self/schedstat is missing)."""
    try:
        return int(Path("/proc/self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _slave_path(pane: LivePane) -> str:
    """The pane's pty slave, as its program holds it (Popen returns once the child exec'd)."""
    assert pane.pid is not None
    return os.readlink(f"/proc/{pane.pid}/fd/1")


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _sys_seconds() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def _score(phase: Phase, truth: list[dict[str, object]], events: list[tuple[str, float, str]], end: float,
           after: dict[tuple[str, float], float] | None = None) -> None:
    """`after`: per (pane, unix time) of a change, seconds since that pane's last output was read."""
    by_pane: dict[str, list[tuple[float, str]]] = {}
    for pane, t, state in events:
        by_pane.setdefault(pane, []).append((t, state))
    truths: dict[str, list[tuple[float, str]]] = {}
    for line in truth:
        truths.setdefault(str(line["pane"]), []).append((float(str(line["t"])), str(line["state"])))
    for pane, timeline in truths.items():
        seen = by_pane.get(pane, [])
        for i, (t, state) in enumerate(timeline):
            t_end = timeline[i + 1][0] if i + 1 < len(timeline) else end
            if state != "blocked":
                continue
            next_state = timeline[i + 1][1] if i + 1 < len(timeline) else "exited"
            if next_state == "exited":
                continue  # cut off by the end of the run (the fake left its prompt): not scored
            phase.prompts += 1
            hit = next((et for et, es in seen if es == "blocked" and t - 0.05 <= et <= t_end + 0.05), None)
            if hit is None:
                phase.missed += 1
                phase.missed_at.append((pane, t, t_end))
                continue
            phase.latencies.append(max(0.0, hit - t))
            if after is not None and (pane, hit) in after:
                waited = min(after[(pane, hit)], hit - t)
                phase.after_output.append(max(0.0, waited))
                phase.before_output.append(max(0.0, hit - t - waited))
            leave = next((et for et, es in seen if es != "blocked" and et >= t_end), None)
            if leave is not None:
                phase.residuals.append(max(0.0, leave - t_end))
        blocked_spans = [(t, timeline[i + 1][0] if i + 1 < len(timeline) else end)
                         for i, (t, s) in enumerate(timeline) if s == "blocked"]
        for et, es in seen:
            if es == "blocked" and not any(a - 0.05 <= et <= b + 0.05 for a, b in blocked_spans):
                phase.false_blocked += 1


async def _run_phase(name: str, panes: int, seconds: float, seed: int,
                     schedule: Callable[[float], Schedule], skip_unchanged: bool = True) -> Phase:
    phase = Phase(name, panes)
    loop = asyncio.get_running_loop()
    events: list[tuple[str, float, str]] = []
    after: dict[tuple[str, float], float] = {}
    with tempfile.TemporaryDirectory(prefix="panewatch-scale-") as tmp:
        work = Path(tmp)
        watcher = ManifestWatcher()
        rss_before = psutil.Process().memory_info().rss
        live: list[LivePane] = []

        def on_change(change: StateChange) -> None:
            wall = change.wall or time.time()
            events.append((change.pane, wall, change.new.state))
            after[(change.pane, wall)] = loop.time() - live[int(change.pane)].last_output

        lags: list[float] | None = None

        def lag_probe(expected: float) -> None:
            if lags is None:
                return  # the window closed
            lags.append(max(0.0, loop.time() - expected))
            loop.call_at(loop.time() + LAG_PROBE, lag_probe, loop.time() + LAG_PROBE)

        for i in range(panes):
            pane = LivePane(["sleep", "infinity"], pane_id=str(i), agent="claude", manifests=watcher,
                            schedule=schedule)
            pane.detector.skip_unchanged = skip_unchanged
            pane.subscribe(on_change)
            live.append(pane)  # before start(): its first state is published from there
            pane.start()
        targets = work / "targets"
        targets.write_text("".join(f"{_slave_path(p)}\n" for p in live))
        truth_path = work / "truth.jsonl"
        gen = subprocess.Popen([sys.executable, "-m", "panewatch.lab.loadgen", "--targets", str(targets),
                                "--panes", str(panes), "--truth", str(truth_path), "--seconds", str(seconds),
                                "--seed", str(seed)])
        gen_ps = psutil.Process(gen.pid)
        with contextlib.suppress(OSError):  # the fakes at the niceness the bench was started with (--nice)
            os.setpriority(os.PRIO_PROCESS, gen.pid, _START_NICE)
        try:
            await asyncio.sleep(WARMUP)
            lags = phase.loop_lags
            loop.call_soon(lag_probe, loop.time())
            phase.load_start = os.getloadavg()[0]
            phase.nice = os.getpriority(os.PRIO_PROCESS, 0)
            cpu0, sys0, wall0, gen0 = _cpu_seconds(), _sys_seconds(), time.monotonic(), sum(gen_ps.cpu_times()[:2])
            wait0 = _runqueue_wait()
            phase.rss_per_pane_mb = (psutil.Process().memory_info().rss - rss_before) / panes / 1e6
            checks0 = sum(p.detector.stats.checks for p in live)
            classified0 = sum(p.detector.stats.classifications for p in live)
            await asyncio.sleep(max(1.0, seconds - WARMUP - 1.0))
            phase.window = time.monotonic() - wall0
            phase.cpu_percent_of_core = (_cpu_seconds() - cpu0) / phase.window * 100
            phase.sys_percent_of_core = (_sys_seconds() - sys0) / phase.window * 100
            phase.runqueue_wait_percent = (_runqueue_wait() - wait0) / phase.window * 100
            phase.loadgen_cpu_percent = (sum(gen_ps.cpu_times()[:2]) - gen0) / phase.window * 100
            phase.checks = sum(p.detector.stats.checks for p in live) - checks0
            phase.classifications = sum(p.detector.stats.classifications for p in live) - classified0
            phase.load_average = os.getloadavg()[0]
            lags = None
            while gen.poll() is None:
                await asyncio.sleep(0.1)
        finally:
            if gen.poll() is None:
                gen.kill()
            gen.wait()
            end = time.time()
            await asyncio.gather(*(p.close() for p in live), return_exceptions=True)
        truth = [json.loads(line) for line in truth_path.read_text().splitlines() if line.strip()]
        _score(phase, truth, events, end, after)
    return phase


def _merge(runs: list[Phase]) -> Phase:
    """One row from the same policy's rounds: CPU and memory averaged, latencies pooled."""
    first = runs[0]
    merged = Phase(first.name, first.panes, nice=first.nice)
    for field_name in ("cpu_percent_of_core", "sys_percent_of_core", "loadgen_cpu_percent", "rss_per_pane_mb",
                       "load_start", "load_average",
                       "runqueue_wait_percent"):
        setattr(merged, field_name, statistics.mean(getattr(r, field_name) for r in runs))
    for r in runs:
        merged.latencies += r.latencies
        merged.after_output += r.after_output
        merged.before_output += r.before_output
        merged.loop_lags += r.loop_lags
        merged.residuals += r.residuals
        merged.missed_at += r.missed_at
        merged.missed += r.missed
        merged.prompts += r.prompts
        merged.false_blocked += r.false_blocked
        merged.checks += r.checks
        merged.classifications += r.classifications
        merged.window += r.window
    return merged


POLICIES = ("ours", "sweep", "sweep-skip")


def run_scale(panes: int, seconds: float = 30.0, seed: int = 7, rounds: int = 2,
              policies: tuple[str, ...] = POLICIES, nice: int = 0) -> list[Phase]:
    """Each policy once per round; the order reverses every other round so that whatever the first
    phase of a process pays (allocator growth, caches) does not land on one policy. `policies`: which
    of POLICIES to run (ours alone for a quick look at the runtime's own cost). `nice`: added to the
    watcher's niceness (the loop's thread; the load generator keeps the bench's): negative (root) shows
    what the watcher does when other tenants of a shared box do not starve it."""
    if nice:
        os.setpriority(os.PRIO_PROCESS, 0, _START_NICE + nice)

    def sweep(now: float) -> Schedule:
        return FixedSweepSchedule(0.7, start=now)

    known: dict[str, tuple[str, Callable[[float], Schedule], bool]] = {
        "ours": ("our policy", lambda now: ChangeDrivenSchedule(start=now), True),
        # The published design: every pane's screen re-read and judged every 700 ms.
        "sweep": ("700 ms sweep", sweep, False),
        # The same sweep given our skip of unchanged screens, to show what each part buys.
        "sweep-skip": ("700 ms sweep + skip unchanged", sweep, True),
    }
    chosen = [known[key] for key in POLICIES if key in policies]
    if not chosen:
        raise ValueError(f"no policy among {policies}; known: {', '.join(POLICIES)}")

    async def phases() -> list[Phase]:
        runs: dict[str, list[Phase]] = {name: [] for name, _, _ in chosen}
        for i in range(max(1, rounds)):
            for name, schedule, skip in chosen if i % 2 == 0 else list(reversed(chosen)):
                runs[name].append(await _run_phase(name, panes, seconds, seed, schedule, skip_unchanged=skip))
        return [_merge(r) for r in runs.values()]

    with contextlib.suppress(ValueError):  # more fds for many ptys
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8 * panes + 256)), hard))
    return asyncio.run(phases())


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank: a value that was measured, never interpolated."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def _fmt(values: list[float]) -> str:
    if not values:
        return "- / -"
    return f"{statistics.median(values):.3f} / {max(values):.3f}"


def _spread(values: list[float]) -> str:
    if not values:
        return "- / - / - / -"
    return " / ".join(f"{percentile(values, q):.3f}" for q in (50, 90, 99, 100))


def report(phases: list[Phase]) -> str:
    out = ["| panes | policy | watcher CPU (% of one core) | of which kernel | per pane | loadgen CPU % "
           "| RSS per pane (MB) "
           "| checks/s | classifications/s | prompts | missed | latency p50 / p90 / p99 / max (s) "
           "| residual median / max (s) | false blocked | load average start / end "
           "| watcher waited for a CPU (% of the window) | watcher nice |",
           "|" + "---|" * 17]
    for p in phases:
        window = max(p.window, 1e-9)
        out.append(f"| {p.panes} | {p.name} | {p.cpu_percent_of_core:.1f} | {p.sys_percent_of_core:.1f} | "
                   f"{p.cpu_percent_of_core / p.panes:.3f} | "
                   f"{p.loadgen_cpu_percent:.1f} | {p.rss_per_pane_mb:.3f} | {p.checks / window:.0f} | "
                   f"{p.classifications / window:.0f} | {p.prompts} | {p.missed} | {_spread(p.latencies)} | "
                   f"{_fmt(p.residuals)} | {p.false_blocked} | {p.load_start:.1f} / {p.load_average:.1f} | "
                   f"{p.runqueue_wait_percent:.0f} | {p.nice} |")
    out += ["", "Where a latency is spent (p50 / p90 / p99 / max, s): before the watcher read the prompt's last "
            "bytes (from the fake's write into the pty: our loop busy or starved), after it (the schedule and the "
            f"loop), and how late a {LAG_PROBE * 1000:.0f} ms timer of the watcher's loop fired over the window.", "",
            "| panes | policy | before the read | after the read | loop lateness |", "|---|---|---|---|---|"]
    for p in phases:
        out.append(f"| {p.panes} | {p.name} | {_spread(p.before_output)} | {_spread(p.after_output)} "
                   f"| {_spread(p.loop_lags)} |")
    return "\n".join(out)


def run(panes: int = 10, seconds: float = 30.0, seed: int = 7, rounds: int = 2,
        policies: str = ",".join(POLICIES), nice: int = 0) -> str:
    chosen = tuple(name.strip() for name in policies.split(",") if name.strip())
    return report(run_scale(panes, seconds, seed, rounds, chosen, nice))
