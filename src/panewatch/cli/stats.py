"""`panewatch stats [--since 1d] [--json]`: minutes lost waiting, per agent, per pane, per day.

Reads the waits database the daemon writes (runtime/waitstore.py: $XDG_STATE_HOME/panewatch/
waits.sqlite3) read-only: no daemon needed. A blocked wait is the time from a prompt appearing to
the user's answer; an idle wait, from a turn's end to the next prompt (core/waits.py). Whether the
waits are being recorded now is the running daemon's to say (its `stats` op): figures from a file
nobody can write to, or that nobody writes, would look complete and not be; so it is said, first
when recording is off (since when, why), last when no daemon runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from datetime import datetime
from typing import Any

from panewatch.board import client
from panewatch.board.client import DaemonNotRunning
from panewatch.board.model import format_duration
from panewatch.board.rpc import RemoteError
from panewatch.core.waits import KINDS, summarize
from panewatch.runtime.waitstore import StoreError, local_day, read_waits, store_path

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
ASK_TIMEOUT = 3.0  # seconds to wait for the daemon's word on its recording


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


def recording_status(now: float) -> dict[str, Any]:
    """What the running daemon says of its recording: {"daemon": True, "on", "since", "why", "pending",
    "dropped"}; {"daemon": False, "on": None} when none runs; "why" alone when it could not be asked."""
    try:
        reply = asyncio.run(client.call("stats", since=now, timeout=ASK_TIMEOUT))
    except DaemonNotRunning:
        return {"daemon": False, "on": None}
    except (RemoteError, OSError) as exc:
        return {"daemon": True, "on": None, "why": f"the daemon did not say ({exc})"}
    off = reply.get("recording_off") or {}
    return {"daemon": True, "on": bool(reply.get("recording", True)), "since": off.get("since"), "why": off.get("why"),
            "pending": off.get("pending", 0), "dropped": off.get("dropped", 0)}


def recording_lines(status: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(lines before the figures, lines after them) about the recording."""
    if not status.get("daemon"):
        return [], ["recording: no panewatch daemon is running now; the daemon records the waits of every pane "
                    "on its board"]
    if status.get("on") is None:
        return [], [f"recording: unknown: {status.get('why')}"]
    if status["on"]:
        return [], []
    since = datetime.fromtimestamp(status.get("since") or 0).strftime("%Y-%m-%d %H:%M:%S")
    kept = f"; {status['pending']} waits kept in memory, written when it works again" if status.get("pending") else ""
    lost = f"; {status['dropped']} waits not recorded" if status.get("dropped") else ""
    return [f"RECORDING IS OFF since {since}: {status.get('why')}{kept}{lost}",
            "  the figures below miss what happened since (the daemon tries again every few seconds)", ""], []


def report_lines(summary: dict[str, Any]) -> list[str]:
    since = datetime.fromtimestamp(summary["since"]).strftime("%Y-%m-%d %H:%M")
    totals = summary["totals"]
    before, after = recording_lines(summary.get("recording") or {"daemon": True, "on": True})
    lines = [*before, f"minutes lost waiting since {since}",
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
    return lines + after


def cmd_stats(ns: argparse.Namespace) -> int:
    now = time.time()
    try:
        since = parse_since(ns.since, now)
        waits = read_waits(since, now)
    except (ValueError, StoreError) as exc:
        print(f"panewatch stats: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, StoreError) else 2
    summary = {**summarize(waits, local_day, since=since, until=now), "recording": recording_status(now)}
    if ns.json:
        print(json.dumps(summary, ensure_ascii=False))
        return 0
    print("\n".join(report_lines(summary)))
    return 0
