"""Score a detected state timeline against a ground-truth timeline (fixtures' truth.json).

Truth entry t = when the rendered screen first shows the state; the expected state at time t is
the last entry with entry.t <= t; 'ignore' entries are not scored. A truth entry may widen its own
latency bound (`latency_bound`, with `latency_bound_why`) where the screen cannot show the state
sooner to the agent's rules; tests/test_golden.py holds each such entry to that claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

LATENCY_BOUND = 0.2  # seconds: every change detected within this of the screen showing it
# Truth marks a state by one literal (a dialog's question, a busy marker); agents often show another
# sign of it a frame earlier, in the title (Claude's spinner before "esc to interrupt", Codex's
# "Action Required" before its dialog: 59 transitions of the corpus, 0-39 ms). The next state
# detected less than this before its truth entry is early, not wrong.
LEAD = 0.05


@dataclass(frozen=True, slots=True)
class Segment:
    start: float
    end: float
    state: str
    latency: float | None  # None = never detected within the segment
    wrong_seconds: float  # time after the grace window where the detected state differed
    false_blocked: float  # seconds detected blocked while truth was not blocked (after grace)
    bound: float = LATENCY_BOUND  # this segment's latency bound

    @property
    def ok(self) -> bool:
        return self.latency is not None and self.latency <= self.bound and self.wrong_seconds == 0.0


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

    def ok(self) -> bool:
        return all(s.ok for s in self.scored) and self.false_blocked == 0.0


def _intervals(changes: list[tuple[float, str]], start: float, end: float) -> list[tuple[float, float, str]]:
    """Detected states as (from, to, state) pieces clipped to [start, end)."""
    out: list[tuple[float, float, str]] = []
    for i, (t, state) in enumerate(changes):
        t_next = changes[i + 1][0] if i + 1 < len(changes) else float("inf")
        lo, hi = max(t, start), min(t_next, end)
        if lo < hi:
            out.append((lo, hi, state))
    return out


def score(truth: list[tuple[float, str]], detected: list[tuple[float, str]], end: float,
          grace: float | None = None, bounds: Mapping[float, float] | None = None) -> Score:
    """`truth` and `detected` are (t, state) lists sorted by t; `end` closes the last segment.
    `bounds`: widened latency bounds by truth entry t. Wrong time is counted after `grace` (default:
    the segment's bound) and not in the last LEAD seconds before a change to what was detected."""
    result = Score()
    for i, (start, state) in enumerate(truth):
        seg_end = truth[i + 1][0] if i + 1 < len(truth) else end
        if seg_end <= start:
            continue
        bound = (bounds or {}).get(start, LATENCY_BOUND)
        after_grace = start + (bound if grace is None else grace)
        following = truth[i + 1][1] if i + 1 < len(truth) else None
        pieces = _intervals(detected, start, seg_end)
        latency = next((max(0.0, lo - start) for lo, _, s in pieces if s == state), None)
        wrong = false_blocked = 0.0
        if state != "ignore":
            for lo, hi, s in pieces:
                if s == following and hi == seg_end:
                    hi = min(hi, max(lo, seg_end - LEAD))  # the next state, seen early
                lo = max(lo, after_grace)
                if lo >= hi or s == state:
                    continue
                wrong += hi - lo
                if s == "blocked":
                    false_blocked += hi - lo
        result.segments.append(Segment(start, seg_end, state, latency, round(wrong, 6), round(false_blocked, 6),
                                       bound))
    return result
