from __future__ import annotations

import itertools

from panewatch.core.policy import ChangeDrivenSchedule, FixedSweepSchedule, PolicyConfig


def drive(schedule: ChangeDrivenSchedule | FixedSweepSchedule, outputs: list[float], until: float) -> list[float]:
    """Virtual-time loop: returns the times at which checks ran."""
    checks: list[float] = []
    pending = sorted(outputs)
    while True:
        due = schedule.next_due()
        if pending and pending[0] < due:
            schedule.on_output(pending.pop(0))
            continue
        if due > until:
            return checks
        schedule.on_classified(due)
        checks.append(due)


def test_quiet_pane_is_checked_only_by_the_sweep() -> None:
    config = PolicyConfig()
    checks = drive(ChangeDrivenSchedule(config), [], until=60.0)
    assert checks[0] == config.settle  # a new pane's first screen is judged at once
    assert len(checks) == 1 + int((60.0 - config.settle) // config.sweep)  # then one per sweep


def test_single_change_is_checked_once_output_settles() -> None:
    config = PolicyConfig()
    schedule = ChangeDrivenSchedule(config)
    checks = drive(schedule, [5.0], until=5.9)
    after = [t for t in checks if t >= 5.0]
    assert after and after[0] == 5.0 + config.settle


def test_continuous_output_is_bounded_in_latency_and_rate() -> None:
    config = PolicyConfig()
    outputs = [5.0 + i * 0.01 for i in range(500)]  # 100 writes/s for 5 s
    checks = drive(ChangeDrivenSchedule(config), outputs, until=10.0)
    during = [t for t in checks if 5.0 <= t <= 10.0]
    gaps = [b - a for a, b in itertools.pairwise(during)]
    bound = max(config.max_delay + config.min_interval, config.steady_interval)
    assert max(gaps) <= bound + 1e-9
    assert max(gaps) >= config.steady_interval - 1e-9  # a steady verdict is looked at less often
    assert min(gaps) >= config.min_interval - 1e-9
    # every write is seen by a check within max_delay + min_interval
    for t in outputs[:-50]:  # (the last writes are checked after `until`)
        assert any(t <= c <= t + bound for c in checks)


def test_fixed_sweep_checks_every_period_whatever_happens() -> None:
    checks = drive(FixedSweepSchedule(0.7), [1.0, 1.01, 3.3], until=7.05)
    assert len(checks) == 11
    assert all(abs((b - a) - 0.7) < 1e-9 for a, b in itertools.pairwise(checks))
