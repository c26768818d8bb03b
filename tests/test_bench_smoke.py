"""The benchmarks run and report what they claim to measure (no timing is asserted)."""

from __future__ import annotations

import pytest

from panewatch.core.manifest import load_all
from panewatch.golden.cases import find_cases
from panewatch.lab.bench import core as bench_core
from panewatch.lab.bench import fixtures as bench_fixtures


def test_fixtures_table_scores_tail_and_screen() -> None:
    rows, latencies = bench_fixtures.table(find_cases(), load_all().list())
    assert len(rows) >= 30
    assert all(r.ours == r.truth for r in rows)
    # The byte tail cannot see what cursor-placed words say: on the published-style captures (Claude
    # Code drawing a dialog into its alternate screen) it misses every blocked screen...
    published_style = {"claude/2.1.332/full_bash", "claude/2.1.332/edit", "claude/2.1.332/plan", "claude/2.1.332/ask"}
    assert not any(r.tail == "blocked" for r in rows if r.truth == "blocked" and r.case in published_style)
    # ...and over the whole corpus it is right far less often (a full repaint or an inline renderer
    # sometimes lets it read a dialog).
    assert sum(r.tail == r.truth for r in rows) < 0.7 * len(rows)
    assert {c.case for c in latencies} == {c.name for c in find_cases()}


def test_core_bench_pieces_run_on_small_inputs() -> None:
    rates = bench_core.ingest(bench_core.synthetic_log(200_000), 120, 32)
    assert set(rates) == {"raw", "screen", "detector"} and all(v > 0 for v in rates.values())
    cost = bench_core.classification_cost(120, 32, n=20)
    # Both are timings: which is larger is up to the scheduler (one preemption inside the 20 rule runs
    # made rules_us 2709 µs against 59 µs for the whole under two CPU burners). The bench prints them.
    assert cost["state"] == 1.0 and cost["snapshot_and_rules_us"] > 0 and cost["rules_us"] > 0


def test_live_experiment_short_run_produces_the_table() -> None:
    """A short, accelerated run of the published experiment in a real PTY (no timing asserted)."""
    from panewatch.lab.bench import live as bench_live

    run = bench_live.run_live(seed=7, tasks=2, time_scale=0.15)
    states = [line.state for line in run.truth]
    assert states[0] == "idle" and "blocked" in states and states[-1] == "exited"
    names = [t.name for t in run.tracks]
    assert names[:2] == ["screen rules, 700 ms sweep", "screen rules, our policy"]
    assert any(p.status for p in run.process)
    table = bench_live.report(run)
    for name in names:
        assert f"| {name} |" in table
    prompts = states.count("blocked")
    assert f"{prompts} prompts" in table


def test_scale_bench_runs_real_panes_under_each_policy() -> None:
    """Two real panes fed by the load generator, each policy once (no timing asserted)."""
    from panewatch.lab.bench import scale as bench_scale

    phases = bench_scale.run_scale(panes=2, seconds=6.0, rounds=1)
    assert [p.name for p in phases] == ["our policy", "700 ms sweep", "700 ms sweep + skip unchanged"]
    for phase in phases:
        assert phase.checks > 0 and phase.window > 0
        assert phase.false_blocked == 0
    table = bench_scale.report(phases)
    assert table.count("\n| 2 |") == 6  # a row per policy in the figures and in where the latency is spent
    assert "latency p50 / p90 / p99 / max (s)" in table and "classifications/s" in table


@pytest.mark.needs("tmux")
def test_the_tmux_benchmark_scores_both_watchers_and_splits_their_latency() -> None:
    """Three fakes in a private tmux server, watched through control mode and by the capture-pane poller
    (no timing asserted): both score prompts, and every detection's latency is split at the read (an event
    whose split was not recorded under the key `_score` looks up would leave the lists short)."""
    from panewatch.lab.bench import tmux as bench_tmux

    rows = bench_tmux.run_tmux(panes=3, seconds=12.0)
    assert [r.phase.name for r in rows] == ["control mode (panewatch)", "capture-pane every 500 ms (peers)"]
    control, poller = (r.phase for r in rows)
    assert rows[0].clients >= 1 and control.prompts >= 1 and poller.prompts >= 1
    for phase in (control, poller):
        assert phase.false_blocked == 0
        assert len(phase.after_output) == len(phase.before_output) == len(phase.latencies)
        # the two parts add up to the latency (each detection's own split)
        assert abs(sum(phase.after_output) + sum(phase.before_output) - sum(phase.latencies)) < 1e-6
    table = bench_tmux.report(rows)
    assert table.count("\n| 3 |") == 4 and "| before the read | after the read |" in table


@pytest.mark.needs("tmux", "ssh")
def test_bench_day_runs_a_short_day_without_a_false_or_duplicate_needs_you(tmp_path: object) -> None:
    """`bench day` on a short, fast day: every role set up (a run inside tmux, a remote host, views, shells), the
    bot answers and sends through the CLI, and what is scored without timing holds: nothing that is no agent (or
    an agent not truly waiting) was ever blocked, no view was, every dialog was seen."""
    from panewatch.lab.bench import day

    root = day.Path(str(tmp_path))
    state = day.setup(root, 10, 0.3, 11)
    try:
        started = day.asyncio.run(day.live(state, 0.75, 11))
        result = day.score(state, started, state.observed[-1][0])
    finally:
        day.subprocess.run(["tmux", "-L", "day", "kill-server"], env=state.env, capture_output=True, timeout=20)
        if state.sshd is not None:
            state.sshd.close()
    assert set(result["roles"]) == {"agent", "run", "remote", "pager", "view", "sshview", "shell"}, result
    assert result["dialogs"] > 0 and result["answers"][1] > 0 and result["sends"][1] > 0, result
    assert (result["false"], result["duplicates"], result["missed"], result["stray_notifications"]) == (0, 0, 0, 0), \
        result
    assert result["answers"][0] == result["answers"][1] and result["sends"][0] == result["sends"][1], result


def test_the_top_bench_measures_the_view_through_a_real_daemon() -> None:
    import json

    from panewatch.lab.bench import top

    result = json.loads(top.run(panes=20, seconds=3.0, size="80x24", as_json=True))
    assert result["panes"] == 20 and result["changes"] > 0 and result["view_cpu"] > 0
    assert len(result["keys"]) >= 3 and result["missed_keys"] == 0  # every key moved the selection on screen
