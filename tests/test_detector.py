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


# -- busy means moving (manifest `moving`) ---------------------------------------------------------------

SPINNER = """
[agent]
id = "toy"
[[rules]]
id = "spinner"
state = "working"
region = "bottom:3"
moving = 1.5
any = ['^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] \\w+… \\(\\d+s\\)']
note = "a spinner line with its seconds"
[[rules]]
id = "prompt"
state = "idle"
region = "bottom:1"
any = ['^>']
note = "the prompt"
"""


def _toy() -> list[object]:
    from panewatch.core.manifest import load_manifest_text

    return [load_manifest_text(SPINNER, "toy.toml")]


def _run_frames(detector: PaneDetector, frames: list[tuple[float, bytes]], until: float) -> list[tuple[float, str]]:
    """Feed each frame at its time and run every check the detector asks for up to `until`: (t, state) changes."""
    changes: list[tuple[float, str]] = []
    pending = list(frames)
    while True:
        due = detector.next_due()
        if pending and pending[0][0] <= min(due, until):
            t, data = pending.pop(0)
            detector.feed(t, data)
            continue
        if due > until:
            return changes
        if (after := detector.tick(due)) is not None:
            changes.append((round(due, 3), after.state))


def test_a_busy_line_that_stands_still_is_a_copy_and_the_pane_goes_idle() -> None:
    """A reply quoting the agent's spinner line right above its prompt: the line never changes. It is set
    aside once it has stood still for the rule's `moving` (1.5 s), by a check the detector asks for then,
    with no output at all: the pane is idle from there."""
    detector = PaneDetector(_toy, Screen(40, 6), agent_id="toy")  # type: ignore[arg-type]
    quote = b"\x1b[2J\x1b[Hthe screen showed:\r\n\r\n\xe2\xa0\x8b Thinking\xe2\x80\xa6 (5s)\r\n\r\n> "
    changes = _run_frames(detector, [(0.0, quote)], until=5.0)
    assert changes == [(0.03, "working"), (1.53, "idle")]
    assert detector.verdict.rule == "prompt" and detector.stats.classifications == 2
    detector.feed(6.0, b"x")  # the user types: the copy is still set aside
    detector.tick(detector.next_due())
    assert detector.verdict.state == "idle"


def test_a_busy_line_that_keeps_moving_stays_working_and_one_drawn_again_counts_afresh() -> None:
    """A braille spinner turning every 80 ms with its seconds: working for as long as it turns, whatever the
    checks' rhythm; once it stops, idle `moving` (1.5 s) after a check last saw its line change (checks come
    steady_interval apart while it turns, so that is at most one interval before its last frame)."""
    detector = PaneDetector(_toy, Screen(40, 6), agent_id="toy")  # type: ignore[arg-type]
    glyphs = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    frames = [(i * 0.08, f"\x1b[3;1H\x1b[2K{glyphs[i % 10]} Thinking… ({int(i * 0.08)}s)\x1b[5;1H> ".encode())
              for i in range(50)]
    assert _run_frames(detector, frames, until=3.95) == [(0.03, "working")]
    # It stops (the agent froze, or its last frame was left behind): idle 1.5 s after its line last changed.
    [(t, state)] = _run_frames(detector, [], until=8.0)
    steady = PolicyConfig().steady_interval
    assert state == "idle" and frames[-1][0] + 1.5 - steady <= t <= frames[-1][0] + 1.5 + steady
    # The line goes and comes back (a new turn): it counts again at once.
    changes = _run_frames(detector, [(9.0, b"\x1b[3;1H\x1b[2K"),
                                     (10.0, "\x1b[3;1H⠋ Thinking… (0s)".encode())], until=10.5)
    assert changes == [(10.03, "working")]


def test_a_title_that_stops_saying_working_is_news_however_small_the_frame() -> None:
    """Claude's turn ends with its title's spinner giving way to '✳' (a 20-byte write) and a final frame only
    a few times its spinner's size: inside the spinner's rhythm, the idle waited for the animation's stop
    rule (1.5 usual gaps: 0.16 s at 40x12, 0.22 s for a 150 ms spinner). What the title alone says changed
    (its working rule no longer matches): the frame is judged once it settles."""
    fh = io.StringIO()
    cast = CastWriter(fh, 40, 12, 0.0)
    cast.write(0.0, "o", "\x1b[2J\x1b[H\x1b[9;1H" + "─" * 40 + "\r\n❯\r\n" + "─" * 40 + "\r\n  esc to interrupt")
    t, glyphs = 0.0, "·✢✳✶✻✽"
    for i in range(40):  # the spinner line every 150 ms, the title's half circle every second
        t = round(t + 0.15, 3)
        title = f"\x1b]0;{'◐◑'[i // 7 % 2]} Claude Code\x07" if i % 7 == 0 else ""
        cast.write(t, "o", title + f"\x1b[7;1H{glyphs[i % 6]} Noodling…\x1b[10;3H")
    end = round(t + 0.1, 3)
    cast.write(end, "o", "\x1b]0;✳ Claude Code\x07")
    last = "\x1b[7;1H\x1b[2K✻ Crunched for 6s\x1b[12;1H\x1b[2K  ? for shortcuts\x1b[10;3H"
    cast.write(round(end + 0.01, 3), "o", last)
    result = replay(parse_cast(fh.getvalue().splitlines()), MANIFESTS, agent="claude", tail=1.0)
    idle = next(c for c in result.changes if c.t > end - 0.001)
    assert idle.state == "idle" and idle.t - end <= 0.01 + PolicyConfig().settle + 0.001, (idle.t - end, idle)
