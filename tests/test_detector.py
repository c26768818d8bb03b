"""PaneDetector: what it tells the schedule, and when a check runs."""

from __future__ import annotations

import io

from panewatch.core.cast import CastWriter, parse_cast
from panewatch.core.detector import PaneDetector
from panewatch.core.manifest import load_all
from panewatch.core.policy import PolicyConfig
from panewatch.core.replay import replay
from panewatch.core.screen import Screen

MANIFESTS = load_all().list()


def test_a_tick_before_the_check_is_due_does_nothing() -> None:
    """A live timer armed for an earlier due time can fire after more output moved the check later."""
    detector = PaneDetector(lambda: MANIFESTS, Screen(80, 24), agent_id="claude")
    detector.feed(0.0, b"hello")
    detector.tick(detector.next_due())
    detector.feed(1.0, b" world")
    early = detector.next_due() - 0.02
    assert not detector.due(early)
    assert detector.tick(early) is None and detector.stats.checks == 1  # not run
    assert detector.due(detector.next_due())
    detector.tick(detector.next_due())
    assert detector.stats.checks == 2


def test_a_spinning_title_is_an_animation_not_a_change() -> None:
    """Codex spins a braille glyph in its title at ~12 Hz for whole turns: the matched text changes at
    every frame, the verdict (working, title-spinner) does not. Counting the glyph as a change kept
    such a pane at the fast rate (10 checks/s); it is backed off like any animation."""
    fh = io.StringIO()
    cast = CastWriter(fh, 120, 32, 0.0)
    glyphs = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    seconds, period = 10.0, 0.08
    for i in range(int(seconds / period)):
        cast.write(i * period, "o", f"\x1b]0;{glyphs[i % len(glyphs)]} Fix the tests | ws\x07")
    result = replay(parse_cast(fh.getvalue().splitlines()), MANIFESTS, agent="codex", tail=0.0)
    assert {c.verdict.rule for c in result.changes[1:]} == {"title-spinner"}
    assert result.checks <= seconds / PolicyConfig().steady_interval + 5


def test_a_pane_with_no_agent_is_not_rejudged_on_an_unchanged_screen() -> None:
    """Every manifest's rules run on an unknown pane's screen: a seed, foreground news and a tick that
    find the same screen reuse the verdict; new output, or a manifest reload, judges again."""
    detector = PaneDetector(lambda: manifests, Screen(80, 24))
    manifests = MANIFESTS
    detector.feed(0.0, b"$ ls\r\nREADME\r\n")
    first = detector.classify_now()
    assert detector.stats.classifications == 1
    assert detector.classify_now() == first and detector.classify_now() == first
    assert detector.stats.classifications == 1
    detector.feed(1.0, b"$ ")
    detector.classify_now()
    assert detector.stats.classifications == 2
    manifests = list(MANIFESTS)  # a reload: a new list, maybe new rules
    detector.classify_now()
    assert detector.stats.classifications == 3
    detector.screen.invalidate()  # an equal screen read again is still the same screen
    detector.classify_now()
    assert detector.stats.classifications == 3
