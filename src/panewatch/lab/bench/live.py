"""`panewatch bench live`: the published experiment, reproduced and beaten.

A fake agent that draws like Claude Code runs in a real 32x120 PTY with a seeded bot user. A
supervisor feeds its output to six detectors and records, on the real clock, when each one says
"needs you": (a) our rules under the published fixed 700 ms sweep, (b) our rules under our timing
policy, (c) the same rules on the last 8 KB with escapes stripped, (d) output-idle timers,
(e) "a screen line ends with ?", (f) the process state sampled twice a second. The fake agent's
truth file (written right after the bytes that show each state) is what they are scored against.
"""

from __future__ import annotations

import contextlib
import itertools
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import psutil

from panewatch.core.classify import classify
from panewatch.core.detector import PaneDetector
from panewatch.core.manifest import Manifest, load_all, load_manifest_text
from panewatch.core.policy import ChangeDrivenSchedule, FixedSweepSchedule
from panewatch.core.screen import Screen
from panewatch.lab.baseline import TAIL_BYTES, tail_snapshot
from panewatch.lab.botuser import BotUser, FakeAgentProcess, TruthLine, TruthReader

SAMPLE = 0.05  # the supervisor logs every detector every 50 ms
IDLE_TIMERS = (1.0, 2.0, 3.0, 5.0, 8.0)
PROCESS_SAMPLE = 0.5


@dataclass
class Track:
    """One detector's "needs you" signal as exact transitions [(t, on)]."""

    name: str
    transitions: list[tuple[float, bool]] = field(default_factory=list)

    def set(self, t: float, on: bool) -> None:
        if not self.transitions or self.transitions[-1][1] != on:
            self.transitions.append((t, on))

    def on_at(self, t: float) -> bool:
        state = False
        for when, on in self.transitions:
            if when > t:
                break
            state = on
        return state


@dataclass
class ProcessSample:
    t: float
    status: str
    cpu_percent: float


@dataclass
class LiveRun:
    truth: list[TruthLine]
    tracks: list[Track]
    process: list[ProcessSample]
    seconds: float
    checks: dict[str, int]


class Supervisor:
    """Feeds one PTY's output to every detector and evaluates each at its own moments."""

    def __init__(self, manifest: Manifest, published: Manifest, clock: Callable[[], float]) -> None:
        manifests = [manifest]
        self.published = published
        self.clock = clock
        start = clock()
        self.sweep = PaneDetector(lambda: manifests, Screen(120, 32), FixedSweepSchedule(0.7, start), "claude")
        self.ours = PaneDetector(lambda: manifests, Screen(120, 32), ChangeDrivenSchedule(start=start), "claude")
        self.manifest = manifest
        self.tail = bytearray()
        self.last_output = start
        self.tracks = {name: Track(name) for name in
                       ["screen rules, 700 ms sweep", "screen rules, our policy", "byte tail (8 KB), our rules",
                        "byte tail (8 KB), published rules",
                        *(f"idle timer {t:g} s" for t in IDLE_TIMERS), "a line ends with ?"]}

    def output(self, now: float, data: bytes) -> None:
        self.sweep.feed(now, data)
        self.ours.feed(now, data)
        self.tail += data
        del self.tail[:-TAIL_BYTES]
        self.last_output = now
        for threshold in IDLE_TIMERS:
            self.tracks[f"idle timer {threshold:g} s"].set(now, False)

    def next_due(self) -> float:
        return min(self.sweep.next_due(), self.ours.next_due())

    def tick(self, now: float) -> None:
        for name, det in (("screen rules, 700 ms sweep", self.sweep), ("screen rules, our policy", self.ours)):
            due = det.next_due()
            if due <= now:
                det.tick(now)
                self.tracks[name].set(now, det.verdict.state == "blocked")

    def sample(self, now: float) -> None:
        tail = tail_snapshot(bytes(self.tail), after_last_cr=False)
        self.tracks["byte tail (8 KB), our rules"].set(now, classify(tail, self.manifest).state == "blocked")
        published = classify(tail, self.published).state == "blocked"
        self.tracks["byte tail (8 KB), published rules"].set(now, published)
        for threshold in IDLE_TIMERS:  # exact: the timer fires `threshold` after the last output
            if now - self.last_output >= threshold:
                self.tracks[f"idle timer {threshold:g} s"].set(self.last_output + threshold, True)
        rows = self.ours.screen.snapshot().rows
        self.tracks["a line ends with ?"].set(now, any(r.rstrip().endswith("?") for r in rows))


def published_rules() -> Manifest:
    """The published design's whole-screen Claude rules (bench_data/), for the byte-tail detector."""
    text = (resources.files("panewatch.lab.bench") / "data" / "published-claude.toml").read_text(encoding="utf-8")
    return load_manifest_text(text, "panewatch/bench_data/published-claude.toml", "bundled")


def run_live(seed: int = 7, tasks: int = 30, time_scale: float = 1.0,
             progress: Callable[[str], None] | None = None) -> LiveRun:
    clock = time.time
    manifest = load_all().manifests["claude"]
    with tempfile.TemporaryDirectory(prefix="panewatch-live-") as tmp:
        truth_path = Path(tmp) / "truth.jsonl"
        bot = BotUser(tasks, seed=seed, time_scale=time_scale)
        reader = TruthReader(truth_path)
        truth: list[TruthLine] = []
        process: list[ProcessSample] = []
        with FakeAgentProcess(seed=seed, tasks=tasks, time_scale=time_scale, truth_path=truth_path) as agent:
            sup = Supervisor(manifest, published_rules(), clock)
            ps = psutil.Process(agent.pid)
            ps.cpu_percent(None)
            start = clock()
            next_sample, next_ps, eof_sent = start, start + PROCESS_SAMPLE, False
            while not agent.closed:
                now = clock()
                wake = min(sup.next_due(), next_sample, next_ps, bot.pending.at if bot.pending else now + 1)
                data = agent.read(max(0.0, wake - now))
                now = clock()
                if data:
                    sup.output(now, data)
                sup.tick(now)
                if now >= next_sample:
                    sup.sample(now)
                    while next_sample <= now:
                        next_sample += SAMPLE
                if now >= next_ps:
                    next_ps = now + PROCESS_SAMPLE
                    with contextlib.suppress(psutil.Error):
                        process.append(ProcessSample(now, ps.status(), ps.cpu_percent(None)))
                for line in reader.read_new():
                    truth.append(line)
                    bot.observe(line.state, line.t)
                    if progress is not None and line.state == "blocked":
                        progress(f"prompt {line.prompt} at {line.t - start:6.1f} s")
                keys = bot.due(clock())
                if keys is not None:
                    agent.write(keys.data)
                if bot.done and not eof_sent:
                    agent.send_eof()
                    eof_sent = True
            agent.wait(timeout=5)
            truth += reader.read_new()
        checks = {"700 ms sweep": sup.sweep.stats.checks, "our policy": sup.ours.stats.checks}
        return LiveRun(truth, list(sup.tracks.values()), process, clock() - start, checks)


# --- analysis ------------------------------------------------------------------------------------

@dataclass
class DetectorScore:
    name: str
    prompts: int
    detected: int
    latencies: list[float]
    residuals: list[float]
    fp_count: dict[str, int]
    fp_seconds: dict[str, float]

    @staticmethod
    def _median(values: list[float]) -> float:
        ordered = sorted(values)
        return ordered[len(ordered) // 2] if ordered else float("nan")


def truth_segments(truth: list[TruthLine], end: float) -> list[tuple[float, float, str]]:
    lines = sorted(truth, key=lambda line: line.t)
    return [(line.t, lines[i + 1].t if i + 1 < len(lines) else end, line.state) for i, line in enumerate(lines)]


def score_track(track: Track, segments: list[tuple[float, float, str]]) -> DetectorScore:
    blocked = [(a, b) for a, b, s in segments if s == "blocked"]
    result = DetectorScore(track.name, len(blocked), 0, [], [], {"working": 0, "idle": 0},
                           {"working": 0.0, "idle": 0.0})
    for b0, b1 in blocked:
        on_times = [t for t, on in track.transitions if on and b0 < t < b1]
        if track.on_at(b0) or on_times:
            result.detected += 1
            result.latencies.append(0.0 if track.on_at(b0) else on_times[0] - b0)
        if track.on_at(b1):
            off = next((t for t, on in track.transitions if not on and t > b1), segments[-1][1])
            result.residuals.append(off - b1)
        else:
            result.residuals.append(0.0)
    # Walk constant pieces of (truth state, signal) and count "needs you" outside prompts; the
    # stretch that continues straight after an answered prompt is residual, not a false positive.
    cuts = sorted({a for a, _, _ in segments} | {segments[-1][1]} | {t for t, _ in track.transitions})
    residual, episode = False, ""  # episode: the truth state of the false-positive run in progress
    for lo, hi in itertools.pairwise(cuts):
        state = next((s for a, b, s in segments if a <= lo < b), "ignore")
        on = track.on_at(lo)
        if state == "blocked":
            residual, episode = on, ""
            continue
        if not on:
            residual, episode = False, ""
            continue
        if residual or state not in result.fp_seconds:
            continue
        result.fp_seconds[state] += hi - lo
        if episode != state:  # a run that goes on from idle into the next task counts once in each
            result.fp_count[state] += 1
            episode = state
    return result


def process_table(run: LiveRun, segments: list[tuple[float, float, str]]) -> list[str]:
    out = ["| truth | samples | % S (sleeping) | % R (running) | mean CPU % of a core |", "|---|---|---|---|---|"]
    for state in ("working", "idle", "blocked"):
        samples = [p for p in run.process if any(a <= p.t < b and s == state for a, b, s in segments)]
        if not samples:
            continue
        sleeping = sum(p.status == psutil.STATUS_SLEEPING for p in samples) / len(samples) * 100
        running = sum(p.status == psutil.STATUS_RUNNING for p in samples) / len(samples) * 100
        cpu = sum(p.cpu_percent for p in samples) / len(samples)
        out.append(f"| {state} | {len(samples)} | {sleeping:.1f} | {running:.1f} | {cpu:.2f} |")
    return out


def report(run: LiveRun) -> str:
    segments = truth_segments(run.truth, run.truth[-1].t if run.truth else run.seconds)
    prompts = sum(1 for _, _, s in segments if s == "blocked")
    blocked_s = sum(b - a for a, b, s in segments if s == "blocked")
    turns = sum(1 for line in run.truth if line.state == "idle")
    out = [f"Live run: {run.seconds / 60:.1f} min, {prompts} prompts, {blocked_s:.0f} s blocked, "
           f"{turns} idle screens (turn ends + start); checks: " +
           ", ".join(f"{k} {v}" for k, v in run.checks.items()), "",
           "| detector | prompts detected | latency median / max (s) | residual after answer mean / max (s) "
           "| false 'needs you' while working: count / s | while idle: count / s |",
           "|---|---|---|---|---|---|"]
    for track in run.tracks:
        sc = score_track(track, segments)
        lat = (f"{DetectorScore._median(sc.latencies):.2f} / {max(sc.latencies):.2f}" if sc.latencies else "- / -")
        res = sc.residuals
        residual = f"{sum(res) / len(res):.2f} / {max(res):.2f}" if res else "- / -"
        out.append(f"| {sc.name} | {sc.detected}/{sc.prompts} | {lat} | {residual} | "
                   f"{sc.fp_count['working']} / {sc.fp_seconds['working']:.1f} | "
                   f"{sc.fp_count['idle']} / {sc.fp_seconds['idle']:.1f} |")
    out += ["", "Process state of the agent, sampled twice a second ((f): not a signal):", ""]
    out += process_table(run, segments)
    return "\n".join(out)


def run(seed: int = 7, tasks: int = 30, time_scale: float = 1.0, quiet: bool = False) -> str:
    def progress(msg: str) -> None:
        if not quiet:
            print(msg, flush=True)

    return report(run_live(seed=seed, tasks=tasks, time_scale=time_scale, progress=progress))
