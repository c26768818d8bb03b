"""`panewatch top [--popup] [--client NAME]`: the terminal view of every pane (tui/), and `panewatch` alone on a
terminal.

    bind-key P display-popup -E -w 90% -h 75% "panewatch top --popup"

`--popup`: going to a pane (Enter) closes the view, so the popup closes on the pane. `--client`: the tmux client
Enter switches (as `#{client_name}` names it); by default the one tmux finds for the command (the client the
popup or the pane is shown on).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def register(subparsers: Any) -> None:
    top = subparsers.add_parser("top", help="a live terminal view of every pane, blocked first: go there, answer "
                                            "with confirmation (tmux: `top --popup` in display-popup)")
    top.add_argument("--popup", action="store_true", help="inside `tmux display-popup -E`: going to a pane closes it")
    top.add_argument("--client", metavar="NAME", help="the tmux client Enter switches (default: tmux's choice)")
    top.add_argument("--no-start", dest="autostart", action="store_false",
                     help="do not start the daemon when none runs (default: start it, as `board` does)")
    top.set_defaults(func=cmd_top)


def cmd_top(ns: argparse.Namespace) -> int:
    if not is_terminal():
        print("panewatch top: needs a terminal on stdin, stdout and stderr (Textual draws on stderr); "
              "`panewatch ls` prints the same panes", file=sys.stderr)
        return 2
    from panewatch.board.goto import inside_tmux
    from panewatch.tui.app import TopApp

    # COLUMNS/LINES in the environment (a tmux server keeps the ones of whoever started it, and gives them to
    # every popup) would pin Textual to that size (shutil.get_terminal_size reads them first): the terminal's own.
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)

    app = TopApp(popup=ns.popup, inside=inside_tmux(), client=ns.client, autostart=ns.autostart)
    code = app.run()
    if app.message and code:
        print(f"panewatch top: {app.message}", file=sys.stderr)
    return int(code or 0)


def is_terminal() -> bool:
    """`panewatch` alone opens `top` only when a person is at a terminal (a script gets the help)."""
    return os.isatty(0) and os.isatty(1) and os.isatty(2)
