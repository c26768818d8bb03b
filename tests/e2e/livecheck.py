"""The live-vs-truth check the real-CLI tests share: a LiveAgent's detected states against the truth
derived from its recording (never from our classifier)."""

from __future__ import annotations

import itertools

from panewatch.golden.scoring import score
from panewatch.testing.agents import LiveAgent

LIVE_GRACE = 1.0  # seconds a live change may trail or lead the screen's truth at a transition


def state_at(timeline: list[tuple[float, str]], t: float) -> str:
    state = timeline[0][1] if timeline else "idle"
    for at, s in timeline:
        if at > t:
            break
        state = s
    return state


def check_against_truth(agent: LiveAgent, early: frozenset[str] = frozenset()) -> None:
    """Every truth segment is detected, and where the live state differs from the truth it is within
    LIVE_GRACE of a truth transition (detection trails the screen, hooks lead it). A state in `early`
    may lead the truth by any time: the agent reported it before it drew it (Gemini CLI's permission
    Notification comes up to 2 s before its dialog on a loaded machine)."""
    truth, detected = agent.truth(), agent.detected()
    shown = f"\ntruth    {[(round(t, 2), s) for t, s in truth]}\ndetected {[(round(t, 2), s) for t, s in detected]}"
    for seg in score(truth, detected, truth[-1][0], grace=LIVE_GRACE).scored:
        assert seg.latency is not None, f"{seg.state} at {seg.start:.2f}s never detected" + shown
    bounds = [t for t, _ in truth[1:]]
    cuts = sorted({t for t, _ in truth + detected if t <= truth[-1][0]})
    for lo, hi in itertools.pairwise(cuts):
        want, got = state_at(truth, lo), state_at(detected, lo)
        if want == "ignore" or want == got:
            continue
        near = any(b - LIVE_GRACE <= lo and hi <= b + LIVE_GRACE for b in bounds)
        led = got in early and state_at(truth, next((b for b in bounds if b >= hi), lo)) == got
        assert near or led, f"{got} instead of {want} from {lo:.2f}s to {hi:.2f}s" + shown
