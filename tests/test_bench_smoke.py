"""The benchmarks run and report what they claim to measure (no timing is asserted)."""

from __future__ import annotations

from panewatch import bench_core, bench_fixtures
from panewatch.corpus import find_cases
from panewatch.manifest import load_all


def test_fixtures_table_scores_tail_and_screen() -> None:
    rows, latencies = bench_fixtures.table(find_cases(), load_all().list())
    assert len(rows) >= 30
    assert all(r.ours == r.truth for r in rows)
    # The byte tail cannot see what cursor-placed words say: it misses every blocked and most working screens.
    assert not any(r.tail == "blocked" for r in rows if r.truth == "blocked")
    assert {c.case for c in latencies} == {c.name for c in find_cases()}


def test_core_bench_pieces_run_on_small_inputs() -> None:
    rates = bench_core.ingest(bench_core.synthetic_log(200_000), 120, 32)
    assert set(rates) == {"raw", "screen", "detector"} and all(v > 0 for v in rates.values())
    cost = bench_core.classification_cost(120, 32, n=20)
    assert cost["state"] == 1.0 and cost["snapshot_and_rules_us"] >= cost["rules_us"] > 0
