"""`panewatch tmux status`: a short summary of every pane's state for tmux's status line.

    set -g status-right '#(panewatch tmux status)'

Stdlib only and dispatched before the rest of the command line is imported (cli/__init__.py): tmux runs
it every status-interval, so it answers from the daemon in a few milliseconds, and prints nothing (exit
0) when no daemon runs. `⚠ 2 blocked · 3 working · 1 idle`.
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from typing import Any

from panewatch.runtime import paths

TIMEOUT = 0.5  # seconds: a status line never waits on a busy daemon for long
ORDER = (("blocked", "⚠ {} blocked"), ("working", "{} working"), ("idle", "{} idle"))


def summary(cards: list[dict[str, Any]]) -> str:
    counts = Counter(str(card.get("state")) for card in cards)
    return " · ".join(text.format(counts[state]) for state, text in ORDER if counts[state])


def cards_from_daemon(timeout: float = TIMEOUT) -> list[dict[str, Any]] | None:
    """The daemon's cards, or None when it is not running or does not answer in time."""
    try:
        path = str(paths.runtime_dir() / "board.sock")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(b'{"id": 1, "op": "list"}\n')
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(1 << 16)
                if not chunk:
                    return None
                data += chunk
    except (OSError, ValueError):
        return None
    try:
        reply = json.loads(data)
    except ValueError:
        return None
    cards = reply.get("cards") if isinstance(reply, dict) and reply.get("ok") else None
    return [c for c in cards if isinstance(c, dict)] if isinstance(cards, list) else None


def main(argv: list[str]) -> int:
    cards = cards_from_daemon()
    text = summary(cards) if cards else ""
    if text:
        print(text)
    return 0
