"""`panewatch bench fixtures`: the published table for every capture — truth, the naive byte-tail
baseline and our emulated screen, judged by the same rules — plus detection latency of our timing
policy beside the published 700 ms sweep, all in virtual time."""

from __future__ import annotations

from dataclasses import dataclass

from panewatch.core.classify import classify
from panewatch.core.manifest import Manifest, load_all
from panewatch.core.policy import FixedSweepSchedule
from panewatch.core.replay import replay, state_at
from panewatch.golden.cases import GoldenCase, find_cases
from panewatch.golden.scoring import LATENCY_BOUND, score
from panewatch.lab.baseline import tail_snapshot

PROBE_BEFORE_END = 0.05  # judge each truth segment just before it ends: the state has settled


@dataclass
class Row:
    case: str
    t: float
    truth: str
    tail: str
    ours: str


@dataclass
class CaseLatency:
    case: str
    ours: list[float]  # latency of each detected truth segment
    sweep: list[float]
    ours_checks: int
    sweep_checks: int
    ours_false_blocked: float
    sweep_false_blocked: float
    ours_rule_runs: int = 0
    seconds: float = 0.0  # of recording (+ the replay's tail)
    ours_not_ok: int = 0  # segments late for their bound or wrong for a while

    @property
    def ours_max(self) -> float:
        return max(self.ours, default=0.0)

    @property
    def sweep_max(self) -> float:
        return max(self.sweep, default=0.0)

    @property
    def ours_median(self) -> float:
        return _median(self.ours)

    @property
    def sweep_median(self) -> float:
        return _median(self.sweep)


def _median(values: list[float]) -> float:
    return _quantile(values, 0.5)


def _quantile(values: list[float], q: float) -> float:
    """The value at rank q (the upper one between two): a latency some segment really had."""
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def tail_state_at(case: GoldenCase, manifest: Manifest, t: float) -> str:
    cast = case.cast()
    data = b"".join(e.data.encode("utf-8", "surrogateescape") for e in cast.events if e.kind == "o" and e.t <= t)
    return classify(tail_snapshot(data, cast.header.width), manifest).state


def table(cases: list[GoldenCase], manifests: list[Manifest]) -> tuple[list[Row], list[CaseLatency]]:
    rows: list[Row] = []
    latencies: list[CaseLatency] = []
    by_id = {m.id: m for m in manifests}
    for case in cases:
        manifest = by_id[case.agent]
        ours = replay(case.cast(), manifests)
        sweep = replay(case.cast(), manifests, schedule=lambda: FixedSweepSchedule(0.7))
        timeline = case.timeline
        for i, (start, state) in enumerate(timeline):
            end = timeline[i + 1][0] if i + 1 < len(timeline) else case.cast().duration
            if state == "ignore" or end - start <= PROBE_BEFORE_END:
                continue
            probe = end - PROBE_BEFORE_END
            rows.append(Row(case.name, probe, state, tail_state_at(case, manifest, probe),
                            state_at(ours.changes, probe)))
        s_ours = score(timeline, [(c.t, c.state) for c in ours.changes], ours.duration)
        s_sweep = score(timeline, [(c.t, c.state) for c in sweep.changes], sweep.duration, grace=0.7)
        lat_o = [s.latency for s in s_ours.scored if s.latency is not None]
        lat_s = [s.latency for s in s_sweep.scored if s.latency is not None]
        latencies.append(CaseLatency(case.name, lat_o, lat_s, ours.checks, sweep.checks, s_ours.false_blocked,
                                     s_sweep.false_blocked, ours.classifications, ours.duration,
                                     sum(not s.ok() for s in s_ours.scored)))
    return rows, latencies


def run() -> str:
    manifests = load_all().list()
    rows, latencies = table(find_cases(), manifests)
    out = ["State at the end of each truth segment (same rules; the tail sees the last 8 KB, escapes stripped):", ""]
    out.append(f"| {'capture':<36} | {'t (s)':>6} | {'truth':<7} | {'byte tail':<9} | {'screen (ours)':<13} |")
    out.append(f"|{'-' * 38}|{'-' * 8}|{'-' * 9}|{'-' * 11}|{'-' * 15}|")
    for r in rows:
        tail = r.tail + ("" if r.tail == r.truth else " ✗")
        ours = r.ours + ("" if r.ours == r.truth else " ✗")
        out.append(f"| {r.case:<36} | {r.t:>6.2f} | {r.truth:<7} | {tail:<9} | {ours:<13} |")
    n = len(rows)
    tail_ok = sum(r.tail == r.truth for r in rows)
    ours_ok = sum(r.ours == r.truth for r in rows)
    tail_idle = sum(r.tail == "idle" for r in rows)
    out += ["", f"correct: byte tail {tail_ok}/{n} (it said idle {tail_idle}/{n} times), "
            f"emulated screen {ours_ok}/{n}", ""]
    out.append("Detection latency per capture (virtual time): our policy vs the published fixed 700 ms sweep")
    out.append("")
    out.append(f"| {'capture':<36} | ours median / max | sweep median / max | checks ours / sweep |"
               " false blocked ours / sweep |")
    out.append(f"|{'-' * 38}|{'-' * 19}|{'-' * 20}|{'-' * 21}|{'-' * 28}|")
    for c in latencies:
        out.append(f"| {c.case:<36} | {c.ours_median:>6.3f} / {c.ours_max:.3f} s | {c.sweep_median:>6.3f} / "
                   f"{c.sweep_max:.3f} s  | {c.ours_checks:>8} / {c.sweep_checks:<8} | "
                   f"{c.ours_false_blocked:>10.2f} / {c.sweep_false_blocked:<.2f} s    |")
    out += ["", *summary(latencies)]
    return "\n".join(out)


def summary(latencies: list[CaseLatency]) -> list[str]:
    """Corpus-wide figures: every scored segment of every case pooled."""
    ours = [v for c in latencies for v in c.ours]
    sweep = [v for c in latencies for v in c.sweep]
    seconds = sum(c.seconds for c in latencies)
    checks = sum(c.ours_checks for c in latencies)
    over = sum(v > LATENCY_BOUND for v in ours)
    return [f"all {len(ours)} segments: ours median {_median(ours):.3f} s, p90 {_quantile(ours, 0.9):.3f} s, "
            f"worst {max(ours, default=0.0):.3f} s ({over} over {LATENCY_BOUND} s, "
            f"{sum(c.ours_not_ok for c in latencies)} failing their truth); "
            f"700 ms sweep median {_median(sweep):.3f} s, worst {max(sweep, default=0.0):.3f} s",
            f"checks: ours {checks} ({checks / seconds:.2f} per pane-second, rules run "
            f"{sum(c.ours_rule_runs for c in latencies) / seconds:.2f}), sweep "
            f"{sum(c.sweep_checks for c in latencies)} over {seconds:.0f} s of replay"]
