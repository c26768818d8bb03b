"""The `panewatch` command line. Subcommands live in `cmd_*.py` modules, each exposing
`register(subparsers)`; they are discovered here so features can be added without editing this file.

`panewatch pane …` runs inside agent hooks and must start fast, so it is dispatched before any
heavy import.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["pane"]:
        from panewatch.paneclient import main as pane_main  # light: stdlib only

        return pane_main(args[1:])
    return _full_main(args)


def _full_main(args: list[str]) -> int:
    import argparse
    import importlib
    import pkgutil

    import panewatch

    parser = argparse.ArgumentParser(prog="panewatch", description="Is this agent waiting on me?")
    parser.add_argument("--version", action="version", version=f"panewatch {panewatch.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(panewatch.__path__), key=lambda m: m.name):
        if info.name.startswith("cmd_"):
            module = importlib.import_module(f"panewatch.{info.name}")
            module.register(sub)
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
