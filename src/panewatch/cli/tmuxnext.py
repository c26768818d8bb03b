"""`panewatch tmux next [--client NAME]`: switch this tmux client to the next blocked pane, for a key binding.

    bind-key N run-shell "panewatch tmux next --client '#{client_name}'"

"Next" is the order of `top`, `ls` and the status line: blocked agents, the longest wait first; from a blocked
pane, the one after it (so pressing the key again walks them all). Only the panes of the tmux server the client
is on can be switched to (tmux panes and the tmux panes `panewatch run` runs in); a blocked pane elsewhere is
counted in the message. Going there is board/goto.py's `switch`, as `top`'s Enter. Everything it has to say
goes to the client's message line (display-message: run-shell would open a pane of output for stdout); outside
tmux it prints. It exits 0 whenever it said what happened: a binding would show a non-zero status as an error.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from typing import Any

from panewatch.board import client, goto
from panewatch.board.client import DaemonNotRunning
from panewatch.board.rpc import RemoteError
from panewatch.runtime.tmux import TmuxServer
from panewatch.runtime.tmux_status import NOT_AGENT

Card = dict[str, Any]


def main(argv: list[str]) -> int:
    """`panewatch tmux next [--client NAME]`, dispatched early (cli/__init__.py): a key binding waits on it."""
    parser = argparse.ArgumentParser(prog="panewatch tmux next",
                                     description="switch this tmux client to the next blocked pane")
    parser.add_argument("--client", metavar="NAME", help="the tmux client to switch (`#{client_name}`)")
    return next_blocked(parser.parse_args(argv).client)


def next_blocked(client_name: str | None) -> int:
    inside = goto.inside_tmux()
    try:
        cards: list[Card] = asyncio.run(client.call("list"))["cards"]
    except DaemonNotRunning:
        return _say(inside, client_name, "panewatch: no daemon is running (`panewatch top` or `panewatch serve` "
                                         "starts one)")
    except RemoteError as exc:
        return _say(inside, client_name, f"panewatch: {exc}")
    # the daemon lists its cards in the one order (board/model.py sort_key): blocked first, the longest wait first;
    # an agent's card is one that is no view nor other program (board/model.py stands_for_agent, as tmux status)
    blocked = [c for c in cards if c.get("state") == "blocked" and c.get("kind") not in NOT_AGENT
               and not c.get("demo")]
    if inside is None:
        if not blocked:
            print("no pane is blocked")
            return 0
        first = blocked[0]
        print(f"next blocked: pane {first['id']} ({first.get('target') or first.get('name')}): not inside tmux, "
              f"`panewatch attach {first['id']}` goes there")
        return 0
    here = [c for c in blocked if c.get("origin") != "remote" and str(c.get("tmux_pane") or "").startswith("%")
            and goto.same_server(str(c.get("tmux_server") or ""), inside)]
    elsewhere = len(blocked) - len(here)
    if not here:
        also = f" ({elsewhere} elsewhere: `panewatch top` lists them)" if elsewhere else ""
        return _say(inside, client_name, f"panewatch: no pane is blocked on this tmux server{also}")
    current = _current_pane(inside, client_name)
    at = next((i for i, c in enumerate(here) if c.get("tmux_pane") == current), None)
    chosen = here[0] if at is None else here[(at + 1) % len(here)]
    if at is not None and len(here) == 1:
        return _say(inside, client_name, "panewatch: this is the only blocked pane")
    route = asyncio.run(goto.route(chosen, client.call, inside=inside, client=client_name))
    done = subprocess.run(list(route.argv), env=goto.run_env(route), capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        return _say(inside, client_name, f"panewatch: tmux: {done.stderr.strip() or done.returncode}")
    return 0


def _current_pane(inside: str, client_name: str | None) -> str:
    argv = TmuxServer(socket_path=inside).argv("display-message", "-p", *(("-c", client_name) if client_name else ()),
                                               "#{pane_id}")
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _say(inside: str | None, client_name: str | None, message: str) -> int:
    """On the client's message line (tmux expands formats there: `#` doubled, so a pane's name stays text)."""
    if inside is None:
        print(message, file=sys.stderr)
        return 0
    text = "".join(ch for ch in message if ch.isprintable()).replace("#", "##")
    argv = TmuxServer(socket_path=inside).argv("display-message", *(("-c", client_name) if client_name else ()), text)
    try:
        subprocess.run(argv, capture_output=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        print(message, file=sys.stderr)
    return 0
