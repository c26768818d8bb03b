"""`panewatch bench …`: benchmarks are commands that print measured tables, never timed tests."""

from __future__ import annotations

import argparse
import importlib
import sys
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
    q.set_defaults(func=_runner("panewatch.lab.bench.fixtures"))
    q = benches.add_parser("core", help="ingest MB/s vs raw pyghostty, µs per classification, memory per pane")
    q.set_defaults(func=_runner("panewatch.lab.bench.core"))
    q = benches.add_parser("live", help="the published experiment: fake agent + bot user, six detectors")
    q.add_argument("--seed", type=int, default=7)
    q.add_argument("--tasks", type=int, default=30)
    q.add_argument("--time-scale", type=float, default=1.0, help="< 1 runs faster than real time (smoke runs)")
    q.add_argument("--quiet", action="store_true", help="no progress lines")
    q.set_defaults(func=_runner("panewatch.lab.bench.live", "seed", "tasks", "time_scale", "quiet"))
    q = benches.add_parser("scale", help="N fake agents in real PTYs: runtime CPU, memory, latency vs the sweep")
    q.add_argument("--panes", type=int, default=10)
    q.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    q.add_argument("--seed", type=int, default=7)
    q.add_argument("--rounds", type=int, default=2, help="each policy once per round, order reversed each round")
    q.add_argument("--policies", default="ours,sweep,sweep-skip",
                   help="comma-separated: ours (our policy), sweep (700 ms), sweep-skip (700 ms + skip unchanged)")
    q.add_argument("--nice", type=int, default=0,
                   help="added to the watcher's niceness (negative: root) so a shared box's other load does not "
                        "starve it; the load generator keeps the bench's")
    q.set_defaults(func=_runner("panewatch.lab.bench.scale", "panes", "seconds", "seed", "rounds", "policies",
                                "nice"))
    q = benches.add_parser("tmux", help="N fake agents in tmux panes: control mode vs capture-pane every 500 ms")
    q.add_argument("--panes", type=int, default=10)
    q.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    q.add_argument("--seed", type=int, default=7)
    q.set_defaults(func=_runner("panewatch.lab.bench.tmux", "panes", "seconds", "seed"))
    q = benches.add_parser("remote", help="H hosts (loopback sshd) x N fake agents: watched through ssh vs locally")
    q.add_argument("--hosts", type=int, default=2)
    q.add_argument("--panes", type=int, default=10, help="panes per host")
    q.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    q.add_argument("--seed", type=int, default=7)
    q.set_defaults(func=_runner("panewatch.lab.bench.remote", "hosts", "panes", "seconds", "seed"))
    q = benches.add_parser("board", help="sessions board at N panes: pane blocked -> its card painted in Chromium")
    q.add_argument("--panes", type=int, default=200)
    q.add_argument("--seconds", type=float, default=40.0)
    q.add_argument("--seed", type=int, default=7)
    q.set_defaults(func=_runner("panewatch.lab.bench.board", "panes", "seconds", "seed"))
    q = benches.add_parser("top", help="`panewatch top` while N panes change state: its CPU, key -> frame latency")
    q.add_argument("--panes", type=int, default=1000)
    q.add_argument("--seconds", type=float, default=30.0, help="length of the measured window")
    q.add_argument("--seed", type=int, default=7)
    q.add_argument("--size", default="120x40", metavar="COLSxROWS", help="the view's terminal (default 120x40)")
    q.add_argument("--json", dest="as_json", action="store_true", help="the figures as one JSON object")
    q.set_defaults(func=_runner("panewatch.lab.bench.top", "panes", "seconds", "seed", "size", "as_json"))
    q = benches.add_parser("agents", help="live latencies with the pinned real CLIs: dialog drawn -> blocked, answer")
    q.add_argument("--reps", type=int, default=3)
    q.add_argument("--no-hooks", dest="hooks", action="store_false", help="skip the runs with hooks")
    q.add_argument("--agent", dest="agents", action="append", metavar="AGENT",
                   help="only this agent (repeatable; default: every agent with a capture profile)")
    q.set_defaults(func=lambda ns: _bench_agents(ns))
    q = benches.add_parser("day", help="a simulated day in tmux (agents, shells, pagers, views, a run, a remote "
                                       "host) scored against the agents' truth: false, missed, duplicates, notices")
    q.add_argument("--panes", type=int, default=20)
    q.add_argument("--minutes", type=float, default=10.0)
    q.add_argument("--seed", type=int, default=7)
    q.add_argument("--time-scale", type=float, default=1.0, help="< 1 makes the fake agents faster")
    q.add_argument("--keep", action="store_true", help="keep the day's folder (daemon log, truth, notifications)")
    q.set_defaults(func=_runner("panewatch.lab.bench.day", "panes", "minutes", "seed", "time_scale", "keep"))
    q = benches.add_parser("submit", help="each real CLI's paste window: Enter taken as submit by its gap after the "
                                          "text, and `send` with the manifest's gap")
    q.add_argument("--tries", type=int, default=2)
    q.add_argument("--agent", dest="agents", action="append", metavar="AGENT", help="only this agent (repeatable)")
    q.set_defaults(func=lambda ns: _bench_submit(ns))
    q = benches.add_parser("hook", help="wall time of the hook command (`panewatch pane report`) per call")
    q.add_argument("-n", type=int, default=100)
    q.add_argument("--installed", action="store_true", help="the installed hook (`pane hook …`, `hooks install`): "
                   "outside tmux, in an unwatched tmux server, in a watched pane")
    q.set_defaults(func=_hook_bench)
    q = benches.add_parser("push", help="push latency: a notification through Apprise to a loopback receiver")
    q.add_argument("-n", type=int, default=50)
    q.add_argument("--scheme", default="json", choices=("json", "ntfy"),
                   help="the Apprise URL scheme (ntfy: Apprise spaces its requests 5.5 s apart; use a small -n)")
    q.set_defaults(func=_push_bench)
    p.set_defaults(func=lambda ns: (p.print_help(), 2)[1])


def _bench_agents(ns: argparse.Namespace) -> int:
    from panewatch.lab.bench.agents import run
    from panewatch.testing.capture import PROFILES

    unknown = [a for a in ns.agents or () if a not in PROFILES]
    if unknown:
        print(f"panewatch bench agents: no capture profile for {', '.join(unknown)} (known: {', '.join(PROFILES)})",
              file=sys.stderr)
        return 2
    print(run(ns.reps, tuple(ns.agents or PROFILES), ns.hooks))
    return 0


def _bench_submit(ns: argparse.Namespace) -> int:
    from panewatch.lab.bench.submit import run
    from panewatch.testing.capture import PROFILES

    print(run(ns.tries, tuple(ns.agents or PROFILES)))
    return 0


def _push_bench(ns: argparse.Namespace) -> int:
    from panewatch.lab.bench.push import run

    got = run(max(1, ns.n), ns.scheme)
    print(f"push through Apprise ({ns.scheme}://) to a loopback receiver over {got['n']} notifications: median "
          f"{got['median_ms']} ms, p95 {got['p95_ms']} ms, max {got['max_ms']} ms ({got['delivered']} delivered); "
          f"the notifying call returns in {got['call_median_ms']} ms (median)")
    return 0


def _hook_bench(ns: argparse.Namespace) -> int:
    from panewatch.lab.bench.hook import run, run_installed

    if ns.installed:
        for label, got in run_installed(ns.n).items():
            print(f"installed hook, {label}: median {got['median_ms']:.1f} ms, p95 {got['p95_ms']:.1f} ms, "
                  f"max {got['max_ms']:.1f} ms over {got['n']} calls; {got['delivered']} reports delivered")
        return 0
    result = run(ns.n)
    print(f"hook command wall time over {result['n']} calls ({' '.join(map(str, result['argv']))}): "
          f"median {result['median_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms, max {result['max_ms']:.1f} ms; "
          f"{result['delivered']} reports delivered")
    return 0
