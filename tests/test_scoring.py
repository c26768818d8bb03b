"""Scoring a detected timeline against truth: latency, wrong time, the early next state, widened bounds."""

from __future__ import annotations

import pytest

from panewatch.scoring import LATENCY_BOUND, LEAD, score

TRUTH = [(0.0, "idle"), (2.0, "working"), (5.0, "blocked"), (8.0, "idle")]


def test_latency_and_wrong_time() -> None:
    s = score(TRUTH, [(0.0, "idle"), (2.05, "working"), (5.1, "blocked"), (8.3, "idle")], 10.0)
    assert [seg.latency for seg in s.scored] == pytest.approx([0.0, 0.05, 0.1, 0.3])
    assert not s.scored[-1].ok and s.scored[-1].wrong_seconds == pytest.approx(0.3 - LATENCY_BOUND)
    assert not s.ok()


def test_the_next_state_seen_a_frame_early_is_not_wrong() -> None:
    """Codex's title spinner shows 39 ms before its 'esc to interrupt' (codex/0.171.0/bash_200x50)."""
    early = score(TRUTH, [(0.0, "idle"), (2.0 - 0.039, "working"), (5.0, "blocked"), (8.0, "idle")], 10.0)
    assert early.ok()
    too_early = score(TRUTH, [(0.0, "idle"), (2.0 - LEAD - 0.01, "working"), (5.0, "blocked"), (8.0, "idle")], 10.0)
    assert too_early.scored[0].wrong_seconds == pytest.approx(0.01) and not too_early.ok()
    # Another state than the next one is wrong however briefly it shows.
    flicker = score(TRUTH, [(0.0, "idle"), (1.99, "blocked"), (2.0, "working"), (5.0, "blocked"), (8.0, "idle")],
                    10.0)
    assert flicker.false_blocked == pytest.approx(0.01)


def test_a_truth_entry_can_widen_its_own_bound() -> None:
    detected = [(0.0, "idle"), (2.0, "working"), (5.0, "blocked"), (8.25, "idle")]
    assert not score(TRUTH, detected, 10.0).ok()
    widened = score(TRUTH, detected, 10.0, bounds={8.0: 0.3})
    assert widened.ok() and widened.scored[-1].bound == 0.3 and widened.scored[0].bound == LATENCY_BOUND
