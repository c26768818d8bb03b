"""`panewatch bench fixtures`: the published table for every capture — truth, the naive byte-tail
baseline and our emulated screen, judged by the same rules — plus detection latency of our timing
policy beside the published 700 ms sweep, all in virtual time."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from panewatch.core.cast import Cast, CastEvent
from panewatch.core.classify import classify
from panewatch.core.manifest import Manifest, load_all
from panewatch.core.policy import FixedSweepSchedule
from panewatch.core.replay import replay, state_at
from panewatch.golden.cases import GoldenCase, find_cases
from panewatch.golden.scoring import LATENCY_BOUND, score
from panewatch.lab.baseline import tail_snapshot

PROBE_BEFORE_END = 0.05  # judge each truth segment just before it ends: the state has settled
# The signals that are not the screen's text: window titles (OSC 0/2) and the agent's own status (OSC 7501).
_TITLE_OR_STATUS = re.compile(r"\x1b\](?:0|2|7501);[^\x07\x1b]*(?:\x07|\x1b\\)")
_OPEN_OSC = re.compile(r"\x1b\](?:0|2|7501);[^\x07\x1b]*$")


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
    size: str = ""  # the pane's size (its last one, for a case resized while it runs)
    decided: list[tuple[str, str]] = field(default_factory=list)  # (state, rule or source) of each change ours made
    screen_ok: bool = False  # the screen's text alone (no title, no OSC 7501) meets the truth
    screen_decided: list[tuple[str, str]] = field(default_factory=list)  # what decided, from the text alone


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


def screen_only(cast: Cast) -> Cast:
    """The cast without window titles and OSC 7501 statuses: what the screen rules alone must read (a pane
    whose title is not the agent's, a terminal that drops them)."""
    events: list[CastEvent] = []
    carry = ""
    for event in cast.events:
        if event.kind != "o":
            events.append(event)
            continue
        data = _TITLE_OR_STATUS.sub("", carry + event.data)
        cut = _OPEN_OSC.search(data)
        carry, data = (data[cut.start():], data[:cut.start()]) if cut else ("", data)
        events.append(CastEvent(event.t, "o", data))
    return Cast(cast.header, tuple(events))


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
        cast = case.cast()
        size = next((e.data for e in reversed(cast.events) if e.kind == "r"),
                    f"{cast.header.width}x{cast.header.height}")
        # What said each state: the screen's rule (none: no rule matched), or the signal that is not the screen.
        decided = [(c.state, (c.verdict.rule or "no rule") if c.pane.source == "screen" else c.pane.source)
                   for c in ours.changes[1:]]
        text = replay(screen_only(cast), manifests)
        text_score = score(timeline, [(c.t, c.state) for c in text.changes], text.duration)
        latencies.append(CaseLatency(case.name, lat_o, lat_s, ours.checks, sweep.checks, s_ours.false_blocked,
                                     s_sweep.false_blocked, ours.classifications, ours.duration,
                                     sum(not s.ok() for s in s_ours.scored), size, decided, text_score.ok(),
                                     [(c.state, c.verdict.rule or "no rule") for c in text.changes[1:]]))
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
    out += ["", *summary(latencies), "", *what_decided(latencies)]
    return "\n".join(out)


def what_decided(latencies: list[CaseLatency]) -> list[str]:
    """Per agent and pane size: what said each state in our replays (the deciding rule, 'no rule' = none
    matched, or the signal that is not the screen: 'terminal' = the agent's OSC 7501 status); then the same
    from the screen's text alone (titles and OSC 7501 taken out of the casts), and how many cases that meets."""
    out: list[str] = []
    for alone in (False, True):
        table: dict[tuple[str, str], dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
        passed: Counter[tuple[str, str]] = Counter()
        cases: Counter[tuple[str, str]] = Counter()
        for c in latencies:
            key = (c.case.split("/")[0], c.size)
            cases[key] += 1
            passed[key] += c.screen_ok
            for state, decider in c.screen_decided if alone else c.decided:
                table[key][state][decider] += 1
        out += ["", "What the screen's text alone reads (titles and OSC 7501 taken out; cases meeting their truth):"
                if alone else "What decided each state (our replays; per agent and pane size; × how many changes):",
                "", "| agent | size | cases | blocked | working | idle |", "|---|---|---|---|---|---|"]

        def cell(counter: Counter[str]) -> str:
            return ", ".join(f"{name} ×{n}" for name, n in counter.most_common()) or "-"
        for key, states in sorted(table.items(), key=lambda kv: (kv[0][0], _area(kv[0][1]))):
            count = f"{passed[key]}/{cases[key]} ok" if alone else str(cases[key])
            out.append(f"| {key[0]} | {key[1]} | {count} | {cell(states['blocked'])} | {cell(states['working'])} | "
                       f"{cell(states['idle'])} |")
    return out[1:]


def _area(size: str) -> int:
    cols, _, rows = size.partition("x")
    return int(cols) * int(rows) if cols.isdigit() and rows.isdigit() else 0


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
