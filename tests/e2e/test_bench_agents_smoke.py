"""`panewatch bench agents` runs end to end (one CLI, one run): a table comes out, no failures."""

from __future__ import annotations

import pytest

from panewatch.lab.bench.agents import run

pytestmark = pytest.mark.needs("agents")  # tests/components.py: fails without them unless PANEWATCH_SKIP=agents


def test_bench_agents_smoke() -> None:
    table = run(reps=1, agents=("codex",), hooks=False)
    row = next(line for line in table.splitlines() if line.startswith("codex"))
    assert row.rstrip().endswith("-"), table  # the failures column is empty
