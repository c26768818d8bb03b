"""A frame inside a synchronized update (DEC mode 2026, `CSI ? 2026 h` ... `CSI ? 2026 l`) is half drawn:
a terminal shows none of it until the program ends the update, and panewatch judges none of it.

Found live: Qwen Code redraws its whole screen after a grant in two writes up to 70 ms apart, the first
showing only its logo; a hook report landing between them made the pane `idle` (no rule matches a logo).
The corpus test below re-creates that moment at every open update of every capture."""

from __future__ import annotations

import pytest

from panewatch.core.detector import SYNC_HOLD
from panewatch.core.machine import PaneMachine
from panewatch.core.manifest import load_all
from panewatch.core.screen import Screen
from panewatch.golden.cases import GoldenCase, find_cases

MANIFESTS = load_all().list()
BEGIN, END = b"\x1b[?2026h", b"\x1b[?2026l"


def test_the_screen_knows_when_an_update_is_open_even_split_across_reads() -> None:
    screen = Screen(40, 5)
    assert not screen.synchronized
    screen.feed(b"\x1b[?20")
    assert not screen.synchronized
    screen.feed(b"26hhalf a frame")
    assert screen.synchronized
    screen.feed(b" the rest" + END)
    assert not screen.synchronized
    screen.feed(END + BEGIN)  # one frame ended, the next begun in the same read
    assert screen.synchronized
    screen.close()
    assert not screen.synchronized


def _machine(cols: int = 80, rows: int = 24) -> PaneMachine:
    return PaneMachine(lambda: MANIFESTS, cols, rows, agent="qwen")


HEAD = "\x1b[2J\x1b[H  >_ Qwen Code (v0.24.4)\r\n"
QWEN_IDLE = (HEAD + "\r\n" * 19 + "─" * 80 + "\r\n> \r\n" + "─" * 80
             + "\r\n  ⏸ Ask permissions (shift + tab to cycle)").encode()
QWEN_DIALOG = (HEAD + "\r\n" * 15 + "  ? Shell touch x ←\r\n  Allow execution of: 'touch'?\r\n"
               + "  › 1. Yes, allow once\r\n\r\n  ⠏ Waiting for user confirmation...").encode()
LOGO_ONLY = HEAD.encode()  # the first write of a full redraw


def test_a_half_drawn_frame_is_not_judged_by_the_schedule_nor_by_a_check() -> None:
    machine = _machine()
    machine.output(0.0, QWEN_DIALOG)
    machine.tick(machine.next_due())
    assert machine.state.state == "blocked"
    machine.output(1.0, BEGIN + LOGO_ONLY)
    assert machine.next_due() >= 1.0 + SYNC_HOLD  # not at the settle
    machine.check(1.05)  # a hook report or a foreground change lands mid-frame
    assert machine.state.state == "blocked", machine.state
    machine.output(1.07, QWEN_IDLE[len(LOGO_ONLY):] + END)  # the update ends: judged as usual
    assert machine.next_due() < 1.07 + SYNC_HOLD
    machine.tick(machine.next_due())
    assert machine.state.state == "idle" and machine.verdict.rule == "composer-mode-hint", machine.state


def test_an_update_never_ended_is_judged_after_the_hold() -> None:
    machine = _machine()
    machine.output(0.0, QWEN_DIALOG)
    machine.tick(machine.next_due())
    machine.output(1.0, BEGIN + QWEN_IDLE)
    machine.output(1.2, b"\x1b[H")  # still no end: the hold counts from the update's start
    assert machine.next_due() == pytest.approx(1.0 + SYNC_HOLD)
    machine.tick(machine.next_due())
    assert machine.state.state == "idle"


def _wrong_checks_mid_frame(case: GoldenCase, hold: float) -> list[str]:
    """Check the pane at every moment a synchronized update of the capture is open across a pause (as a
    hook report arriving then would), and list the checks that moved it to a state its truth denies."""
    cast = case.cast()
    machine = PaneMachine(lambda: MANIFESTS, cast.header.width, cast.header.height, agent=case.agent)
    machine.detector.sync_hold = hold
    events = [e for e in cast.events if e.kind in ("o", "r")]
    wrong = []
    for event, following in zip(events, [*events[1:], None], strict=True):
        while machine.next_due() <= event.t:
            machine.tick(machine.next_due())
        if event.kind == "r" and (size := event.size) is not None:
            machine.resize(event.t, *size)
            continue
        machine.output(event.t, event.data.encode("utf-8", "surrogateescape"))
        if machine.screen.synchronized and following is not None and following.t - event.t >= 0.002:
            before, t = machine.state.state, event.t + 0.001
            machine.check(t)
            truth = [state for start, state in case.timeline if start <= t][-1:] or ["ignore"]
            if machine.state.state not in (before, truth[0]) and truth[0] != "ignore":
                wrong.append(f"t={t:.3f}: {before} -> {machine.state.state} ({machine.verdict.rule}), truth {truth[0]}")
    return wrong


CASES = [c for c in find_cases() if c.agent in ("qwen", "codex", "opencode", "claude", "copilot")]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_no_check_mid_frame_moves_a_captured_pane_to_a_wrong_state(case: GoldenCase) -> None:
    assert _wrong_checks_mid_frame(case, SYNC_HOLD) == []


def test_without_the_hold_the_corpus_has_half_drawn_frames_that_mislead() -> None:
    """What the test above guards against is in the corpus: Qwen after a grant (blocked -> idle)."""
    qwen = [c for c in CASES if c.name == "qwen/0.24.4/bash_120x32"]
    assert qwen and any("blocked -> idle" in w for w in _wrong_checks_mid_frame(qwen[0], 0.0))
