"""Property tests: any chunking gives the same screen and verdict; garbage never raises."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panewatch.core.classify import classify
from panewatch.core.manifest import load_all
from panewatch.core.screen import Screen
from panewatch.golden.cases import find_cases

MANIFESTS = load_all()
CASES = find_cases()
# A short, dialog-rich stretch of each agent's real output keeps each example fast.
SAMPLES = {c.name: c.cast().output_bytes()[:12_000] for c in CASES if c.agent in ("claude", "codex", "gemini")}


def render(chunks: list[bytes], cols: int = 120, rows: int = 32) -> Screen:
    screen = Screen(cols, rows)
    for chunk in chunks:
        screen.feed(chunk)
    return screen


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(SAMPLES)), cuts=st.lists(st.integers(min_value=0, max_value=12_000), max_size=40))
def test_any_chunking_gives_the_same_screen_and_verdict(name: str, cuts: list[int]) -> None:
    data = SAMPLES[name]
    points = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    chunks = [data[a:b] for a, b in itertools.pairwise(points)]
    whole, split = render([data]), render(chunks)
    assert split.snapshot() == whole.snapshot()
    agent = name.split("/")[0]
    manifest = MANIFESTS.manifests[agent]
    assert classify(split.snapshot(), manifest) == classify(whole.snapshot(), manifest)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20), st.integers(1, 300), st.integers(1, 100))
def test_random_bytes_never_raise(chunks: list[bytes], cols: int, rows: int) -> None:
    screen = render(chunks, cols, rows)
    snapshot = screen.snapshot()
    assert len(snapshot.rows) == rows
    for manifest in MANIFESTS:
        assert classify(snapshot, manifest).state in ("blocked", "working", "idle")


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(SAMPLES)), data=st.data())
def test_mutated_agent_output_never_raises(name: str, data: st.DataObject) -> None:
    original = bytearray(SAMPLES[name])
    for _ in range(data.draw(st.integers(1, 30))):
        i = data.draw(st.integers(0, len(original) - 1))
        original[i] = data.draw(st.integers(0, 255))
    screen = render([bytes(original)])
    screen.resize(data.draw(st.integers(1, 250)), data.draw(st.integers(1, 80)))
    assert screen.snapshot().height >= 1


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(SAMPLES)), cut=st.integers(0, 12_000), cols=st.integers(2, 200),
       rows=st.integers(2, 60))
def test_fast_visible_text_equals_the_engine_text(name: str, cut: int, cols: int, rows: int) -> None:
    screen = Screen(cols, rows)
    screen.feed(SAMPLES[name][:cut])
    assert screen._text.read(cols, rows) == screen._term.text()
