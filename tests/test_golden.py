"""Every golden case (a folder with session.cast + truth.json) replays to its truth timeline.

What is scored is the combined state: the replay drives a PaneMachine with the cast and the hook
reports recorded with it (Claude Code cases), as a live pane would get them."""

from __future__ import annotations

import pytest

from panewatch.core.manifest import load_all
from panewatch.core.policy import PolicyConfig
from panewatch.golden.cases import find_cases, frame_differences
from panewatch.golden.run import run_case
from panewatch.golden.scoring import LATENCY_BOUND

CASES = find_cases()
MANIFESTS = load_all().list()


def test_corpus_is_not_empty() -> None:
    assert len(CASES) >= 9
    assert {c.agent for c in CASES} >= {"claude", "codex", "gemini"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_replays_to_truth(case) -> None:  # type: ignore[no-untyped-def]
    changed = frame_differences(case)
    assert not changed, f"the screen changed, so the rules see another screen (tests/test_frames.py): {changed[0]}"
    outcome = run_case(case, MANIFESTS)
    for segment in outcome.score.scored:
        assert segment.latency is not None, f"{segment.state} at {segment.start:.2f}s never detected"
        assert segment.latency <= LATENCY_BOUND, f"{segment.state} at {segment.start:.2f}s: {segment.latency:.3f}s"
        assert segment.wrong_seconds == 0.0, f"{segment.state} at {segment.start:.2f}s: flickered"
    assert outcome.score.false_blocked == 0.0
    # The identification is the agent the case was recorded from.
    assert {c.verdict.agent for c in outcome.result.changes[1:]} == {case.agent}
    # A bounded number of classifications per second per pane.
    rate = outcome.result.checks / outcome.result.duration
    assert rate <= 1 / PolicyConfig().min_interval


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_replays_with_agent_pinned(case) -> None:  # type: ignore[no-untyped-def]
    assert run_case(case, MANIFESTS, agent=case.agent).ok


HOOKED = [c for c in CASES if c.reports()]


@pytest.mark.parametrize("case", HOOKED, ids=[c.name for c in HOOKED])
def test_recorded_hook_reports_are_scored_with_the_screen(case) -> None:  # type: ignore[no-untyped-def]
    """The hooks speak (UserPromptSubmit before the screen shows work, Stop before the idle screen), and
    their "blocked" (Notification, ~6 s into the dialog) ends with the dialog: no hook fires when the
    permission is granted, the screen's change supersedes the report."""
    outcome = run_case(case, MANIFESTS)
    assert {c.pane.source for c in outcome.result.changes} == {"screen", "hook"}
    assert outcome.ok, outcome.summary()


def test_the_claude_cases_with_hooks_are_there() -> None:
    assert {c.path.name for c in HOOKED} >= {"full_bash", "edit", "plan", "ask"}
