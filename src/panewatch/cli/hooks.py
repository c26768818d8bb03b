"""`panewatch hooks install / uninstall / status [--agent claude|gemini|codex]`: panewatch's hooks in the
agents' own user settings, for agents started by hand in tmux (runtime/hooksinstall.py edits the files;
the hooks report by `$TMUX_PANE` to whoever watches that tmux server: the daemon, else `panewatch tmux`).

Without --agent: every supported agent whose config dir exists (claude if none does). Exit status 1 when
a file could not be edited (the message names it and why; nothing was written to it).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from panewatch.errors import AgentSettingsError
from panewatch.runtime import hooksinstall
from panewatch.runtime.hooks import UserSecret


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("hooks", help="add panewatch's hooks to your agents' own settings (for agents you "
                                            "start yourself in tmux), remove them, or show where they are",
                              description="install: add panewatch's hook commands to the agent's user settings "
                                          "(your own hooks stay; a backup is kept). uninstall: give the file back "
                                          "byte for byte if you did not change it since, else remove only "
                                          "panewatch's entries. status: installed or not, per agent.")
    p.add_argument("action", choices=["install", "uninstall", "status"])
    p.add_argument("--agent", action="append", choices=list(hooksinstall.AGENTS),
                   help="this agent only (repeatable); default: every agent whose config dir exists, else claude")
    p.set_defaults(func=main)


def main(ns: argparse.Namespace) -> int:
    agents = ns.agent or (list(hooksinstall.AGENTS) if ns.action == "status" else hooksinstall.default_agents())
    if ns.action == "status":
        for agent in agents:
            st = hooksinstall.status(agent)
            state = st.problem or ("installed" + ("" if st.current else " (older command: run install again)")
                                   if st.installed else "not installed")
            print(f"{agent:<7} {state:<12} {st.path}")
        return 0
    failed = False
    if ns.action == "install":
        UserSecret()  # the hooks' per-user secret, made now if no daemon made it yet
    for agent in agents:
        def waiting(message: str, agent: str = agent) -> None:  # another writer holds the file's lock
            print(f"panewatch: {agent}: {message}", file=sys.stderr, flush=True)

        try:
            edit = hooksinstall.install if ns.action == "install" else hooksinstall.uninstall
            outcome = edit(agent, on_wait=waiting)
        except AgentSettingsError as exc:
            print(f"panewatch: {agent}: {exc}; nothing written", file=sys.stderr)
            failed = True
            continue
        except OSError as exc:
            print(f"panewatch: {agent}: {exc}", file=sys.stderr)
            failed = True
            continue
        print(outcome.message)
    if ns.action == "install" and not failed:
        print("Reports reach panewatch from agents in tmux panes while `panewatch serve` (or `panewatch tmux`) "
              "watches that tmux server, and from agents in any other terminal while `panewatch serve` runs.")
    return 1 if failed else 0
