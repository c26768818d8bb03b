"""Scoring a detected timeline against truth: latency, wrong time, the next state seen early (screen, report)."""

from __future__ import annotations

import pytest

from panewatch.golden.scoring import LATENCY_BOUND, LEAD, score

TRUTH = [(0.0, "idle"), (2.0, "working"), (5.0, "blocked"), (8.0, "idle")]


def test_latency_and_wrong_time() -> None:
    s = score(TRUTH, [(0.0, "idle"), (2.05, "working"), (5.1, "blocked"), (8.3, "idle")], 10.0)
    assert [seg.latency for seg in s.scored] == pytest.approx([0.0, 0.05, 0.1, 0.3])
    assert not s.scored[-1].ok() and s.scored[-1].wrong_seconds == pytest.approx(0.3 - LATENCY_BOUND)
    assert not s.ok()


def test_the_next_state_seen_a_frame_early_is_not_wrong() -> None:
    """Codex's title spinner shows 39 ms before its 'esc to interrupt' (codex/0.171.0/bash_200x50)."""
    early = score(TRUTH, [(0.0, "idle"), (2.0 - 0.039, "working"), (5.0, "blocked"), (8.0, "idle")], 10.0)
    assert early.ok()
    too_early = score(TRUTH, [(0.0, "idle"), (2.0 - LEAD - 0.01, "working"), (5.0, "blocked"), (8.0, "idle")], 10.0)
    assert too_early.scored[0].wrong_seconds == pytest.approx(LEAD + 0.01) and not too_early.ok()
    # Another state than the next one is wrong however briefly it shows.
    flicker = score(TRUTH, [(0.0, "idle"), (1.99, "blocked"), (2.0, "working"), (5.0, "blocked"), (8.0, "idle")],
                    10.0)
    assert flicker.false_blocked == pytest.approx(0.01)


def test_a_report_may_say_the_next_state_sooner_than_the_screen() -> None:
    """Claude's Stop hook fires ~0.05 s before the idle screen; a hook's state up to REPORT_LEAD early is
    early, a screen verdict that early is wrong."""
    hook = [(0.0, "idle", "screen"), (2.0, "working", "screen"), (5.0, "blocked", "screen"), (7.8, "idle", "hook")]
    assert score(TRUTH, hook, 10.0).ok()
    screen = [(0.0, "idle"), (2.0, "working"), (5.0, "blocked"), (7.8, "idle")]
    assert not score(TRUTH, screen, 10.0).ok()
