from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panewatch.core.policy import ChangeDrivenSchedule, FixedSweepSchedule, PolicyConfig, Schedule

CONFIG = PolicyConfig()


def drive(schedule: Schedule, outputs: Sequence[float | tuple[float, int]], until: float,
          changed: Callable[[int], bool] = lambda i: False) -> list[float]:
    """Virtual-time loop: returns the times at which checks ran. Outputs are times or (time, bytes);
    `changed(i)` says whether the i-th check found a different verdict."""
    checks: list[float] = []
    pending = sorted((o, 60) if isinstance(o, float) else o for o in outputs)
    while True:
        due = schedule.next_due()
        if pending and pending[0][0] < due:
            schedule.on_output(*pending.pop(0))
            continue
        if due > until:
            return checks
        schedule.on_classified(due, changed=changed(len(checks)))
        checks.append(due)


def animation(start: float, frames: int, period: float, size: int = 60) -> list[tuple[float, int]]:
    """A spinner: one write of `size` bytes every `period`."""
    return [(round(start + i * period, 6), size) for i in range(frames)]


def test_quiet_pane_is_checked_only_by_the_sweep() -> None:
    checks = drive(ChangeDrivenSchedule(CONFIG), [], until=60.0)
    assert checks[0] == CONFIG.settle  # a new pane's first screen is judged at once
    assert len(checks) == 1 + int((60.0 - CONFIG.settle) // CONFIG.sweep)  # then one per sweep


def test_single_change_is_checked_once_output_settles() -> None:
    checks = drive(ChangeDrivenSchedule(CONFIG), [5.0], until=5.9)
    after = [t for t in checks if t >= 5.0]
    assert after and after[0] == 5.0 + CONFIG.settle


def test_continuous_output_is_bounded_in_latency_and_rate() -> None:
    outputs = [5.0 + i * 0.01 for i in range(500)]  # 100 writes/s for 5 s
    checks = drive(ChangeDrivenSchedule(CONFIG), outputs, until=10.0)
    during = [t for t in checks if 5.0 <= t <= 10.0]
    gaps = [b - a for a, b in itertools.pairwise(during)]
    bound = max(CONFIG.max_delay, CONFIG.steady_interval)
    assert max(gaps) <= bound + 1e-9
    assert max(gaps) >= CONFIG.steady_interval - 1e-9  # a steady verdict is looked at less often
    assert min(gaps) >= CONFIG.min_interval - 1e-9
    for t in outputs[:-50]:  # every write is seen by a check within the bound
        assert any(t <= c <= t + bound for c in checks)


def test_an_animation_is_checked_every_steady_interval() -> None:
    spinner = animation(1.0, 100, 0.1)  # Claude Code's 10 Hz spinner, 60-byte frames, for 10 s
    checks = [t for t in drive(ChangeDrivenSchedule(CONFIG), spinner, until=10.9) if 3.0 <= t <= 10.9]
    gaps = [b - a for a, b in itertools.pairwise(checks)]
    assert min(gaps) >= CONFIG.steady_interval - 1e-9  # its frames are not judged one by one


def test_an_animation_that_stops_is_judged_at_once() -> None:
    """Gemini's frames come every 56 ms; the dialog is its last one. The previous policy waited out
    the steady interval after the last check (0.29 s on gemini/0.61.0/write_120x32)."""
    frames = animation(1.0, 60, 0.056, size=2000)
    last = frames[-1][0]
    checks = drive(ChangeDrivenSchedule(CONFIG), frames, until=last + 1.0)
    before = [t for t in checks if t <= last]
    assert before[-1] - before[-2] >= CONFIG.steady_interval - 1e-9  # it was being backed off from
    after = next(t for t in checks if t > last)
    assert after - last <= CONFIG.stopped * 0.056 + 1e-6


def test_a_big_frame_in_an_animation_is_judged_once_it_settles() -> None:
    """A dialog drawn over Claude Code's spinner: 2.7 KB in two writes among 20-60 byte frames (the
    previous policy: 0.27 s on claude/2.1.332/bash_200x50)."""
    spinner = animation(1.0, 30, 0.1)
    schedule = ChangeDrivenSchedule(CONFIG)
    checks = drive(schedule, spinner, until=3.95)
    drawn = checks[-1] + CONFIG.min_interval  # the steady interval would hold it 0.2 s more
    checks += drive(schedule, [(drawn, 1400), (drawn + 0.002, 1300)], until=drawn + 1.0)
    first = next(t for t in checks if t > drawn)
    assert first == pytest.approx(drawn + 0.002 + CONFIG.settle)  # the settled frame, not half of it


def test_output_after_the_animation_stopped_is_a_new_burst() -> None:
    """Codex's Enter after the user stopped typing (idle verdict held by the typing echo): a small
    write, but after a pause the animation never had (the previous policy: 0.24 s on
    codex/0.171.0/multi_80x24)."""
    typing = animation(1.0, 40, 0.04, size=50)
    schedule = ChangeDrivenSchedule(CONFIG)
    checks = drive(schedule, typing, until=typing[-1][0] + 0.25)
    enter = checks[-1] + 0.15  # 0.25 s after the last key
    checks += drive(schedule, [(enter, 100), (enter + 0.05, 43), (enter + 0.09, 43)], until=enter + 1.0)
    assert next(t for t in checks if t > enter) == pytest.approx(enter + CONFIG.settle)


outputs_strategy = st.lists(st.tuples(st.floats(0.0, 8.0), st.integers(0, 20_000)), max_size=400)


@settings(max_examples=300, deadline=None)
@given(outputs=outputs_strategy, flips=st.lists(st.booleans(), min_size=1, max_size=50))
def test_no_output_makes_more_than_ten_checks_in_any_second(outputs: list[tuple[float, int]],
                                                            flips: list[bool]) -> None:
    """The rate bound, whatever the writes (times, sizes) and verdicts: checks are min_interval apart,
    so at most 1 / min_interval = 10 in any second; and every write is judged within
    max(max_delay, steady_interval)."""
    schedule = ChangeDrivenSchedule(CONFIG)
    bound = max(CONFIG.max_delay, CONFIG.steady_interval)
    unjudged: list[float] = []  # writes since the last check

    class Judging:  # the schedule under test, holding every check to the latency bound
        def on_output(self, now: float, size: int = 0) -> None:
            schedule.on_output(now, size)
            unjudged.append(now)
            assert schedule.next_due() >= now  # never due in the past of what it saw

        def next_due(self) -> float:
            return schedule.next_due()

        def on_classified(self, now: float, changed: bool = False) -> None:
            assert all(now - t <= bound + 1e-9 for t in unjudged), f"writes {unjudged} judged at {now}"
            unjudged.clear()
            schedule.on_classified(now, changed)

    end = 10.0
    checks = drive(Judging(), [(round(t, 4), n) for t, n in outputs], until=end,
                   changed=lambda i: flips[i % len(flips)])
    assert all(t + bound >= end for t in unjudged)
    assert all(b - a >= CONFIG.min_interval - 1e-9 for a, b in itertools.pairwise(checks))
    for i, t in enumerate(checks):
        assert bisect.bisect_left(checks, t + 1.0 - 1e-9) - i <= round(1 / CONFIG.min_interval)


def test_fixed_sweep_checks_every_period_whatever_happens() -> None:
    checks = drive(FixedSweepSchedule(0.7), [1.0, 1.01, 3.3], until=7.05)
    assert len(checks) == 11
    assert all(abs((b - a) - 0.7) < 1e-9 for a, b in itertools.pairwise(checks))
