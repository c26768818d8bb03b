"""`panewatch stats [--since 1d] [--json]`: minutes lost waiting, per agent, per pane, per day.

Reads the waits database the daemon writes (runtime/waitstore.py: $XDG_STATE_HOME/panewatch/
waits.sqlite3) read-only: no daemon needed. A blocked wait is the time from a prompt appearing to
the user's answer; an idle wait, from a turn's end to the next prompt (core/waits.py).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import datetime
from typing import Any

from panewatch.board.model import format_duration
from panewatch.core.waits import KINDS, summarize
from panewatch.runtime.waitstore import StoreError, local_day, read_waits, store_path

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("stats", help="minutes lost waiting: blocked until answered, idle until the next "
                                            "prompt (per agent, pane, day)")
    p.add_argument("--since", default="7d", metavar="WHEN",
                   help="a span back from now (90s, 30m, 12h, 1d, 2w) or a date (2025-01-31); default 7d")
    p.add_argument("--json", action="store_true", help="one JSON object (totals, agents, panes, days, longest)")
    p.set_defaults(func=cmd_stats)


def parse_since(text: str, now: float) -> float:
    """Unix time from '1d' (a span back from `now`) or '2025-01-31' (local midnight)."""
    if m := re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text):
        return now - float(m.group(1)) * UNITS[m.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(f"--since {text!r}: not a span (30m, 12h, 1d, 2w) or a date (2025-01-31)") from None


def _figure(figure: dict[str, Any]) -> str:
    if not figure["count"]:
        return "-"
    return f"{format_duration(figure['seconds'])} in {figure['count']} (longest {format_duration(figure['longest'])})"


def _table(title: str, rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    if not rows:
        return []
    width = max(len(label) for label, _ in rows)
    out = [f"{title}:"]
    for label, entry in rows:
        out.append(f"  {label:<{width}}  " + "   ".join(f"{k} {_figure(entry[k])}" for k in KINDS))
    return out


def report_lines(summary: dict[str, Any]) -> list[str]:
    since = datetime.fromtimestamp(summary["since"]).strftime("%Y-%m-%d %H:%M")
    totals = summary["totals"]
    lines = [f"minutes lost waiting since {since}",
             f"  blocked until answered:        {_figure(totals['blocked'])}",
             f"  idle until the next prompt:    {_figure(totals['idle'])}", ""]
    lines += _table("per agent", [(a["agent"], a) for a in summary["agents"]])
    lines += _table("per pane", [(f"{p['name']} (#{p['id']}, {p['agent'] or 'unknown'})", p) for p in summary["panes"]])
    lines += _table("per day", [(d["day"], d) for d in summary["days"]])
    if summary["longest"]:
        lines.append("longest waits:")
        for w in summary["longest"]:
            when = datetime.fromtimestamp(w["start"]).strftime("%Y-%m-%d %H:%M:%S")
            lines.append(f"  {format_duration(w['seconds']):>7}  {w['kind']:<7}  {when}  {w['name']} (#{w['id']}, "
                         f"{w['agent'] or 'unknown'}) → {w['ended_by']}")
    if not totals["blocked"]["count"] and not totals["idle"]["count"]:
        lines.append("no waits recorded yet: the daemon records them for every pane on the board "
                     f"({store_path()})")
    return lines


def cmd_stats(ns: argparse.Namespace) -> int:
    now = time.time()
    try:
        since = parse_since(ns.since, now)
        waits = read_waits(since, now)
    except (ValueError, StoreError) as exc:
        print(f"panewatch stats: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, StoreError) else 2
    summary = summarize(waits, local_day, since=since, until=now)
    if ns.json:
        print(json.dumps(summary, ensure_ascii=False))
        return 0
    print("\n".join(report_lines(summary)))
    return 0
