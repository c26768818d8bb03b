"""The `panewatch` command line: one module per command group in this folder, each exposing
`register(subparsers)`, listed in `_full_main` (a new group is a module plus one entry there).
`panewatch` with no arguments is `panewatch top` when stdin and stdout are a terminal, else the help.

`panewatch pane …` runs inside agent hooks and must start fast, so it is dispatched before any
other import: the hook client is stdlib only (runtime/paneclient.py).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["pane"]:
        from panewatch.runtime.paneclient import main as pane_main  # light: stdlib only

        return pane_main(args[1:])
    if args[:2] == ["tmux", "status"]:  # run by tmux every status-interval: as light as the hook client
        from panewatch.runtime.tmux_status import main as status_main

        return status_main(args[2:])
    if args[:2] == ["tmux", "next"]:  # a key binding: only what it needs is imported
        from panewatch.cli.tmuxnext import main as next_main

        return next_main(args[2:])
    return _full_main(args)


def _full_main(args: list[str]) -> int:
    import argparse

    import panewatch
    from panewatch.cli import agents, bench, capture, demo, detect, hooks, panes, run, serve, stats, tmux, top, wrong

    parser = argparse.ArgumentParser(prog="panewatch", description="Is this agent waiting on me?")
    parser.add_argument("--version", action="version", version=f"panewatch {panewatch.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # the order of `--help`
    for group in (agents, bench, capture, demo, detect, hooks, panes, run, serve, stats, tmux, top, wrong):
        group.register(sub)
    if not args and top.is_terminal():  # `panewatch` alone, at a terminal: the live view
        args = ["top"]
    ns = parser.parse_args(args)
    if not getattr(ns, "func", None):
        parser.print_help()
        return 2
    try:
        result: int = ns.func(ns)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return result


if __name__ == "__main__":
    sys.exit(main())
