"""`panewatch capture`: record a real agent CLI, driven by a mock scenario, into a golden corpus folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def _size(text: str) -> tuple[int, int]:
    cols, _, rows = text.lower().partition("x")
    if not (cols.isdigit() and rows.isdigit()) or int(cols) < 40 or int(rows) < 10:
        raise argparse.ArgumentTypeError(f"size must be COLSxROWS (at least 40x10), not {text!r}")
    return int(cols), int(rows)


def _key(text: str) -> str:
    """Key names a shell can pass: 'enter', 'esc', 'tab', else the text itself ('1', 'y')."""
    return {"enter": "\r", "esc": "\x1b", "tab": "\t"}.get(text.lower(), text)


def cmd_capture(ns: argparse.Namespace) -> int:
    from panewatch.testing.capture import PROFILES, CaptureError, capture, rederive

    if ns.rederive:
        bad = 0
        for folder in ns.rederive:
            try:
                truth = rederive(folder)
            except CaptureError as exc:
                print(exc, file=sys.stderr)
                bad += 1
                continue
            print(f"{folder}: " + " → ".join(f"{e['state']}@{e['t']:.2f}" for e in truth["timeline"]))
        return 1 if bad else 0
    if not ns.agent or not ns.scenario:
        print("panewatch capture: --agent and --scenario are required (or --rederive DIR...)", file=sys.stderr)
        return 2
    scenarios = list(PROFILES[ns.agent].dialogs) if ns.scenario == "all" else ns.scenario.split(",")
    cols, rows = ns.size
    failed = 0
    for scenario in scenarios:
        try:
            result = capture(ns.agent, scenario, cols=cols, rows=rows, inline=ns.inline, out=ns.out,
                             case=ns.case if len(scenarios) == 1 else None,
                             answer=_key(ns.answer) if ns.answer else None, delay=ns.delay,
                             resize=ns.resize)
        except CaptureError as exc:
            print(f"capture {ns.agent}/{scenario} failed: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(result.summary())
    return 1 if failed else 0


def register(sub: Any) -> None:
    p = sub.add_parser("capture", help="record a real agent CLI against a mock scenario into a golden corpus folder",
                       description="Runs the pinned real CLI (scripts/install-agents) against a mock model "
                                   "server, drives the scenario, and writes ROOT/<agent>/<version>/<case>/"
                                   "{session.cast,truth.json}. The truth comes from the scenario, literal dialog "
                                   "strings and the mock's events, never from panewatch's classifier.")
    p.add_argument("--agent", choices=("claude", "codex", "gemini", "qwen"))
    p.add_argument("--scenario",
                   help="bash, edit, write, plan, ask, multi, trap (what the agent supports), slow, text, "
                        "a comma-separated list, or 'all'")
    p.add_argument("--size", type=_size, default=(120, 32), metavar="COLSxROWS", help="default 120x32")
    p.add_argument("--inline", action="store_true",
                   help="no alternate screen (Claude: CLAUDE_CODE_DISABLE_ALTERNATE_SCREEN=1, Codex: --no-alt-screen)")
    p.add_argument("--out", type=Path, help="corpus root (default: the bundled corpus, src/panewatch/corpus)")
    p.add_argument("--case", help="case folder name (default SCENARIO_COLSxROWS[_inline])")
    p.add_argument("--answer", metavar="KEY",
                   help="key that answers each dialog (1, y, enter, esc …); default: the agent's allow-once key; "
                        "another key (a refusal) may end the turn at the dialog")
    p.add_argument("--resize", type=_size, metavar="COLSxROWS",
                   help="resize the terminal to this while the first dialog waits (an 'r' event in the cast)")
    p.add_argument("--delay", type=float, default=1.0, help="mock thinking time before each reply (default 1 s)")
    p.add_argument("--rederive", nargs="+", type=Path, metavar="DIR",
                   help="recompute the truth of captured folders from their cast and mock events, and exit")
    p.set_defaults(func=cmd_capture)
