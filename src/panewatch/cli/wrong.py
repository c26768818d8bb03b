"""`panewatch report-wrong ID [--expected STATE] [--json]`: "this state is wrong" → a golden case.

The pane's recent history (its last output, from the screen it started on, with the reports and
state changes it saw) is saved by the process that holds the pane — the daemon for a `new` pane,
its `panewatch run` for a run pane — into the user's corpus (golden/wrong.py, runtime/paths.py):

    $XDG_DATA_HOME/panewatch/corpus/<agent>/unknown/wrong-<time>-<pane>/   (~/.local/share/…)

secrets masked, ready for `panewatch agents check` (which runs the user's corpus too) and for a bug
report. Prints the folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from panewatch.board import client
from panewatch.board.rpc import RemoteError
from panewatch.core.states import STATES


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("report-wrong", help="save a pane's recent history as a golden case: "
                                                   "\"this state is wrong\"")
    p.add_argument("pane", metavar="ID", help="the pane, as `panewatch ls` shows it")
    p.add_argument("--expected", choices=STATES, metavar="STATE",
                   help=f"the state the pane is really in ({', '.join(STATES)}); default: not said")
    p.add_argument("--json", action="store_true", help="print the reply as JSON")
    p.set_defaults(func=cmd_report_wrong)


def cmd_report_wrong(ns: argparse.Namespace) -> int:
    try:
        reply = asyncio.run(client.call("report_wrong", pane=ns.pane, expected=ns.expected))
    except RemoteError as exc:
        print(f"panewatch report-wrong: {exc}", file=sys.stderr)
        return 1
    reply = {k: v for k, v in reply.items() if k not in ("re", "ok")}
    if ns.json:
        print(json.dumps(reply, ensure_ascii=False))
        return 0
    path = reply["path"]
    expected = reply.get("expected") or "not said (edit the last timeline entry of truth.json)"
    print(f"saved: {path}")
    print(f"  panewatch said {reply['state']}, expected {expected}; {reply['bytes']} bytes of history, "
          f"{reply['changes']} state changes")
    print(f"  replay it:  panewatch agents explain {path}/session.cast")
    manifest = reply.get("manifest")
    if manifest:
        print(f"  check a fix: panewatch agents check {manifest}   (runs this case with the corpus)")
    print("  secrets were masked with '*'; look the files over before you share them")
    return 0
