"""core/history.py: a pane's bounded history replays to the screen and the states the pane had."""

from __future__ import annotations

from collections.abc import Iterator

from panewatch.core.combine import PaneState, Report
from panewatch.core.history import History, Recent, screen_seed
from panewatch.core.machine import PaneMachine, StateChange
from panewatch.core.manifest import load_all
from panewatch.core.replay import replay
from panewatch.core.screen import Screen
from panewatch.lab.fakeagent import FakeAgentScript, ReadLine, Sleep, Write

MANIFESTS = load_all().list()
IDLE = PaneState("idle", "screen", None)


def fake_session(machine: PaneMachine, steps: int, *, answer_at: int | None = None) -> Iterator[StateChange]:
    """Drive the fake agent's script through `machine` in virtual time; the state changes it published."""
    script = FakeAgentScript(seed=7)
    gen = script.steps()
    step, t = next(gen), 0.0

    def checks_until(limit: float) -> Iterator[StateChange]:
        while (due := machine.next_due()) <= limit:
            yield from machine.tick(due)

    for _ in range(steps):
        reply = None
        if isinstance(step, Write):
            yield from checks_until(t)
            yield from machine.output(t, step.data)
            t += 0.001
        elif isinstance(step, Sleep):
            t += step.seconds
        elif isinstance(step, ReadLine):
            t += 1.0
            reply = "do it\n" if step.purpose == "task" else "1"
        step = gen.send(reply)
    yield from checks_until(t + 3.0)


def states_after(changes: list[tuple[float, str]], start: float) -> list[str]:
    return [s for t, s in changes if t > start + 1e-6]


def collapsed(states: list[str]) -> list[str]:
    return [s for i, s in enumerate(states) if i == 0 or states[i - 1] != s]


def test_the_history_replays_to_the_screen_and_the_states_the_pane_had() -> None:
    machine = PaneMachine(lambda: MANIFESTS, 120, 32, history=8 * 1024)
    live = [(c.t, c.new.state) for c in fake_session(machine, 400)]
    history = machine.history
    assert history is not None and history.rollovers > 2  # the budget was used up several times
    recent = history.recent()
    assert 4 * 1024 - 2048 <= recent.output_bytes <= 8 * 1024 + 2048  # half the budget to all of it (± a write)
    assert recent.seed  # it starts from a screen, not from nothing
    result = replay(recent.cast(), MANIFESTS)
    assert result.final.rows == machine.screen.snapshot().rows
    assert result.final.title == machine.screen.snapshot().title
    # A replay starts idle (a blank screen), judges the seed (the pane's state at the start), then
    # goes through what the pane went through.
    after = states_after(live, recent.start)
    assert after and [s.state for _, s in recent.changes] == after
    assert collapsed([c.state for c in result.changes]) == collapsed(["idle", recent.start_state.state, *after])


def test_without_a_rollover_it_starts_from_the_blank_screen() -> None:
    machine = PaneMachine(lambda: MANIFESTS, 120, 32, history=1024 * 1024)
    live = [(c.t, c.new.state) for c in fake_session(machine, 120)]
    assert machine.history is not None and machine.history.rollovers == 0
    recent = machine.history.recent()
    assert recent.seed == b"" and recent.start == 0.0
    result = replay(recent.cast(), MANIFESTS)
    assert [c.state for c in result.changes][1:] == [s for _, s in live]
    assert result.final.rows == machine.screen.snapshot().rows


def test_bytes_resizes_reports_and_the_exit_survive_the_round_trip() -> None:
    screen = Screen(40, 10)
    history = History(screen, 5.0, IDLE, max_bytes=1 << 20)
    chunks = ["é".encode()[:1], "é".encode()[1:] + b"llo ", b"\xff\xfebad bytes ", "✳ done".encode()]
    for i, chunk in enumerate(chunks):
        screen.feed(chunk)
        history.output(5.0 + i, chunk)
    history.resize(9.0, 30, 8)
    history.report(Report("blocked", 9.5, "hook", "PermissionRequest Bash"))
    history.exited(10.0, 3)
    recent = history.recent()
    cast = recent.cast()
    assert cast.output_bytes() == b"".join(chunks)  # the split é whole, the invalid bytes kept
    assert [e.kind for e in cast.events] == ["o", "o", "o", "r", "x"]  # the first chunk held half a character
    assert [e.t for e in cast.events] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert cast.events[3].data == "30x8" and cast.events[4].data == "3"
    assert recent.reports[0].state == "blocked" and recent.relative(recent.reports[0].t) == 4.5


def test_a_seed_repaints_the_alternate_screen_title_and_cursor() -> None:
    screen = Screen(60, 12)
    screen.feed(b"\x1b[?1049h\x1b]0;\xe2\x9c\xb3 Claude Code\x07\x1b[3;5Hhello"
                b"\x1b[10;1H\x1b[1mbold\x1b[0m there\x1b[6;7H")
    copy = Screen(60, 12)
    copy.feed(screen_seed(screen))
    assert copy.snapshot() == screen.snapshot()


def test_a_seed_keeps_the_soft_wraps_so_a_wrapped_line_stays_one_piece() -> None:
    """A wrapped line (a secret among them) repainted row by row with CR LF would be cut in two in the
    case's cast, and a replay would not know the rows were one line (issue 23, item 7)."""
    key = "sk-ant-api03-" + "Hq8Lz2Vx7Nw4" * 4
    screen = Screen(20, 8)
    screen.feed(f"KEY={key} ok\r\n0123456789abcdefghij\r\nnext\r\nwide 中文中文中文中文中".encode())
    seed = screen_seed(screen)
    assert key.encode() in seed  # one piece: no CR LF inside it
    copy = Screen(20, 8)
    copy.feed(seed)
    assert copy.snapshot() == screen.snapshot()
    assert copy.soft_wraps() == screen.soft_wraps() == (True, True, True, False, False, False, True, False)


def test_recent_times_are_relative_to_its_start() -> None:
    recent = Recent(10.0, 80, 24, b"", IDLE, (), (), ())
    assert recent.relative(12.5) == 2.5 and recent.relative(9.0) == 0.0
