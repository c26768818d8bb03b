"""`panewatch bench agents` runs end to end (one CLI, one run each way): the table has both columns
(without and with hooks) filled, no failures."""

from __future__ import annotations

import pytest

from panewatch.lab.bench.agents import run

pytestmark = pytest.mark.needs("agents")  # tests/components.py: fails without them unless PANEWATCH_SKIP=agents


def test_bench_agents_smoke() -> None:
    table = run(reps=1, agents=("codex",), hooks=True)
    row = next(line for line in table.splitlines() if line.startswith("codex"))
    assert row.rstrip().endswith("-"), table  # the failures column is empty
    cells = row.split()[1:-2]  # eight "median / max" cells: 4 metrics x (screen, + hooks)
    assert len([c for c in cells if c == "/"]) == 8, table
