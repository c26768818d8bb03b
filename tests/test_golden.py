"""Every golden case (a folder with session.cast + truth.json) replays to its truth timeline."""

from __future__ import annotations

import pytest

from panewatch.classify import classify
from panewatch.corpus import find_cases
from panewatch.golden import run_case
from panewatch.manifest import load_all
from panewatch.policy import PolicyConfig
from panewatch.scoring import LATENCY_BOUND
from panewatch.screen import Screen

CASES = find_cases()
MANIFESTS = load_all().list()


def test_corpus_is_not_empty() -> None:
    assert len(CASES) >= 9
    assert {c.agent for c in CASES} >= {"claude", "codex", "gemini"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_replays_to_truth(case) -> None:  # type: ignore[no-untyped-def]
    outcome = run_case(case, MANIFESTS)
    for segment in outcome.score.scored:
        assert segment.latency is not None, f"{segment.state} at {segment.start:.2f}s never detected"
        assert segment.latency <= segment.bound, f"{segment.state} at {segment.start:.2f}s: {segment.latency:.3f}s"
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


WIDENED = [(case, entry) for case in CASES for entry in case.truth["timeline"] if "latency_bound" in entry]


@pytest.mark.parametrize(("case", "entry"), WIDENED, ids=[f"{c.name}@{e['t']}" for c, e in WIDENED])
def test_a_widened_latency_bound_is_needed(case, entry) -> None:  # type: ignore[no-untyped-def]
    """A truth entry may widen its bound only where no schedule could do better: classified after
    every write, no frame shows the state to the rules within LATENCY_BOUND. When the rules or the
    truth change so that one does, this fails: drop the entry's bound."""
    assert entry["latency_bound_why"] and LATENCY_BOUND < entry["latency_bound"] <= 0.3
    manifest = next(m for m in MANIFESTS if m.id == case.agent)
    cast = case.cast()
    screen = Screen(cast.header.width, cast.header.height)
    first = None
    for event in cast.events:
        if event.kind == "o":
            screen.feed(event.data.encode("utf-8", "surrogateescape"))
        elif event.kind == "r" and (size := event.size) is not None:
            screen.resize(*size)
        else:
            continue
        if event.t >= entry["t"] and classify(screen.snapshot(), manifest).state == entry["state"]:
            first = event.t
            break
    assert first is not None and first - entry["t"] > LATENCY_BOUND
