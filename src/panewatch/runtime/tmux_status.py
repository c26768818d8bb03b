"""`panewatch tmux status`: a short summary of every pane's state for tmux's status line.

    set -g status-right '#(panewatch tmux status)'

Stdlib only and dispatched before the rest of the command line is imported (cli/__init__.py): tmux runs
it every status-interval, so it answers from the daemon in a few milliseconds, and prints nothing (exit
0) when no daemon runs. `⚠ 2 blocked (agents:0.0) · 3 working · 1 idle`: agents only (a shell, a pager or
a view of another pane is not counted), and the pane that has waited longest named.
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from typing import Any

from panewatch.runtime import paths

TIMEOUT = 0.5  # seconds: a status line never waits on a busy daemon for long
ORDER = (("blocked", "⚠ {} blocked"), ("working", "{} working"), ("idle", "{} idle"))
# Kinds of card that stand for no agent: core/panekind.py NOT_AGENT (this module stays stdlib-only and imports
# none of panewatch's layers: tmux runs it every status-interval; tests/test_tmux_board.py checks the two agree).
NOT_AGENT = frozenset({"view", "other"})


def summary(cards: list[dict[str, Any]]) -> str:
    agents = [card for card in cards if card.get("kind") not in NOT_AGENT]
    counts = Counter(str(card.get("state")) for card in agents)
    parts = [text.format(counts[state]) for state, text in ORDER if counts[state]]
    blocked = sorted((c for c in agents if c.get("state") == "blocked"), key=lambda c: float(c.get("since") or 0))
    where = blocked[0].get("target") or blocked[0].get("name") if blocked else None
    if where:
        parts[0] += f" ({_plain(str(where))})"
    return " · ".join(parts)


def _plain(text: str) -> str:
    """A name as tmux's status line shows it: no control characters, no `#` (tmux would expand a format)."""
    return "".join(ch for ch in text if ch.isprintable()).replace("#", "##")[:40]


def ask(op: str, *, timeout: float = TIMEOUT, socket_path: str | None = None, **params: Any) -> dict[str, Any] | None:
    """One request on the daemon's socket, without the client library (a status line asks every few seconds):
    its reply, or None when no daemon runs, it does not answer in time, or it refused."""
    try:
        path = socket_path or str(paths.runtime_dir() / "board.sock")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(json.dumps({"id": 1, "op": op, **params}).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(1 << 16)
                if not chunk:
                    return None
                data += chunk
        reply = json.loads(data)
    except (OSError, ValueError):
        return None
    return reply if isinstance(reply, dict) and reply.get("ok") else None


def cards_from_daemon(timeout: float = TIMEOUT) -> list[dict[str, Any]] | None:
    """The daemon's cards, or None when it is not running or does not answer in time."""
    reply = ask("list", timeout=timeout)
    cards = reply.get("cards") if reply is not None else None
    return [c for c in cards if isinstance(c, dict)] if isinstance(cards, list) else None


def main(argv: list[str]) -> int:
    cards = cards_from_daemon()
    text = summary(cards) if cards else ""
    if text:
        print(text)
    return 0
