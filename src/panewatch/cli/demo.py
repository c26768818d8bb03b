"""`panewatch demo`: the README's main command."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any


def _demo(ns: argparse.Namespace) -> int:
    from panewatch.lab.demo import run_demo

    return asyncio.run(run_demo(panes=ns.panes, seconds=ns.seconds, seed=ns.seed, time_scale=ns.time_scale,
                                board=ns.board))


def register(sub: Any) -> None:
    p = sub.add_parser("demo", help="see it work: fake agents with bot users, no setup (Ctrl-C to quit)")
    p.add_argument("--panes", type=int, default=3)
    p.add_argument("--seconds", type=float, default=None, help="stop after this long (default: until Ctrl-C)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--time-scale", type=float, default=1.0, help="< 1 makes the fake agents faster")
    p.add_argument("--board", action="store_true", help="show the fake agents on the sessions board too (starts the "
                                                        "daemon if none runs; they are kept out of `stats`)")
    p.set_defaults(func=_demo)
