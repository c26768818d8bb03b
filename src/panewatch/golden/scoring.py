"""Score a detected state timeline against a ground-truth timeline (fixtures' truth.json).

Truth entry t = when the rendered screen first shows the state; the expected state at time t is
the last entry with entry.t <= t; 'ignore' entries are not scored.

Truth marks a state by one literal (a dialog's question, a busy marker); agents often show another
sign of it a frame earlier, in the title (Claude's spinner before "esc to interrupt", Codex's
"Action Required" before its dialog: 59 transitions of the corpus, 0-39 ms). So the next state
detected from the screen less than LEAD before its truth entry is early, not wrong.

A detected change may carry its source (`(t, state, source)`). A state that a report (hook, ACP)
said up to REPORT_LEAD seconds before the screen showed it is early, not wrong: the agent told us
first (Claude Code's Stop hook fires ~0.05 s before its idle screen is drawn). Screen verdicts get
no such allowance: the truth is when the screen shows the state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LATENCY_BOUND = 0.2  # seconds: every change detected within this of the screen showing it
LEAD = 0.05  # seconds the screen may show the next state before its truth literal does (see above)
REPORT_LEAD = 0.3  # seconds a report may say the next state before the screen shows it
_SCREEN_SOURCES = ("screen", "process")

Detected = tuple[float, str] | tuple[float, str, str]  # (t, state) or (t, state, source)


@dataclass(frozen=True, slots=True)
class Segment:
    start: float
    end: float
    state: str
    latency: float | None  # None = never detected within the segment
    wrong_seconds: float  # time after the grace window where the detected state differed
    false_blocked: float  # seconds detected blocked while truth was not blocked (after grace)
    early: float = 0.0  # seconds the next state was shown ahead of its truth entry (a report, or a title a frame early)

    def ok(self, bound: float = LATENCY_BOUND) -> bool:
        return self.latency is not None and self.latency <= bound and self.wrong_seconds == 0.0


@dataclass
class Score:
    segments: list[Segment] = field(default_factory=list)

    @property
    def scored(self) -> list[Segment]:
        return [s for s in self.segments if s.state != "ignore"]

    @property
    def detected(self) -> int:
        return sum(1 for s in self.scored if s.latency is not None)

    @property
    def max_latency(self) -> float:
        return max((s.latency for s in self.scored if s.latency is not None), default=0.0)

    @property
    def false_blocked(self) -> float:
        return sum(s.false_blocked for s in self.scored)

    def ok(self, bound: float = LATENCY_BOUND) -> bool:
        return all(s.ok(bound) for s in self.scored) and self.false_blocked == 0.0


def _intervals(changes: list[Detected], start: float, end: float) -> list[tuple[float, float, str, str]]:
    """Detected states as (from, to, state, source) pieces clipped to [start, end)."""
    out: list[tuple[float, float, str, str]] = []
    for i, change in enumerate(changes):
        t_next = changes[i + 1][0] if i + 1 < len(changes) else float("inf")
        lo, hi = max(change[0], start), min(t_next, end)
        if lo < hi:
            out.append((lo, hi, change[1], change[2] if len(change) > 2 else "screen"))
    return out


def score(truth: list[tuple[float, str]], detected: list[Detected], end: float,
          grace: float = LATENCY_BOUND, lead: float = REPORT_LEAD) -> Score:
    """`truth` and `detected` are sorted by t; `end` closes the last segment."""
    result = Score()
    for i, (start, state) in enumerate(truth):
        seg_end = truth[i + 1][0] if i + 1 < len(truth) else end
        following = truth[i + 1][1] if i + 1 < len(truth) else None
        if seg_end <= start:
            continue
        pieces = _intervals(detected, start, seg_end)
        latency = next((max(0.0, lo - start) for lo, _, s, _ in pieces if s == state), None)
        wrong = false_blocked = early = 0.0
        if state != "ignore":
            for lo, hi, s, source in pieces:
                lo = max(lo, start + grace)
                if lo >= hi or s == state:
                    continue
                if s == following and hi == seg_end:  # the next state, before the truth shows it
                    ahead = lead if source not in _SCREEN_SOURCES else LEAD
                    if seg_end - lo <= ahead:
                        early += hi - lo
                        continue
                wrong += hi - lo
                if s == "blocked":
                    false_blocked += hi - lo
        result.segments.append(Segment(start, seg_end, state, latency, round(wrong, 6), round(false_blocked, 6),
                                       round(early, 6)))
    return result
