"""`panewatch bench …`: benchmarks are commands that print measured tables, never timed tests."""

from __future__ import annotations

import argparse
import importlib
from typing import Any


def _runner(module: str, *kwarg_names: str) -> Any:
    def run(ns: argparse.Namespace) -> int:
        kwargs = {name: getattr(ns, name) for name in kwarg_names}
        print(importlib.import_module(module).run(**kwargs))
        return 0

    return run


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="benchmarks: fixtures, core, live, …")
    benches = p.add_subparsers(dest="bench", metavar="BENCH")
    q = benches.add_parser("fixtures", help="truth vs naive byte tail vs emulated screen on every capture")
    q.set_defaults(func=_runner("panewatch.bench_fixtures"))
    q = benches.add_parser("core", help="ingest MB/s vs raw pyghostty, µs per classification, memory per pane")
    q.set_defaults(func=_runner("panewatch.bench_core"))
    q = benches.add_parser("live", help="the published experiment: fake agent + bot user, six detectors")
    q.add_argument("--seed", type=int, default=7)
    q.add_argument("--tasks", type=int, default=30)
    q.add_argument("--time-scale", type=float, default=1.0, help="< 1 runs faster than real time (smoke runs)")
    q.add_argument("--quiet", action="store_true", help="no progress lines")
    q.set_defaults(func=_runner("panewatch.bench_live", "seed", "tasks", "time_scale", "quiet"))
    p.set_defaults(func=lambda ns: (p.print_help(), 2)[1])
