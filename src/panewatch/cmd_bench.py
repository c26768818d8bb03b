"""`panewatch bench …`: benchmarks are commands that print measured tables, never timed tests."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

# name → (module with `run(**kwargs) -> str`, help)
BENCHES = {
    "fixtures": ("panewatch.bench_fixtures", "truth vs naive byte tail vs emulated screen on every capture"),
    "core": ("panewatch.bench_core", "ingest MB/s vs raw pyghostty, µs per classification, memory per pane"),
}


def _run(ns: argparse.Namespace) -> int:
    module = importlib.import_module(BENCHES[ns.bench][0])
    print(module.run())
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="benchmarks (fixtures, core, …)")
    benches = p.add_subparsers(dest="bench", metavar="BENCH")
    for name, (_, help_text) in BENCHES.items():
        q = benches.add_parser(name, help=help_text)
        q.set_defaults(func=_run)
    p.set_defaults(func=lambda ns: (p.print_help(), 2)[1])
