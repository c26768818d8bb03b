"""What `panewatch top` shows, as data: the rows in order, each row's cells at a given width, the summary, the
next blocked pane, an option's key. No Textual and no I/O here: the view (tui/app.py) draws what this decides.

Order (as `panewatch ls` and the board): the agents, blocked first (the longest wait first), then unreachable,
working, idle, exited (board/model.py `sort_key`); then the views of other panes, one line each; then, when
asked (`O`), the panes that hold no agent (shells, pagers, editors).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rich.cells import cell_len, set_cell_size

from panewatch.board.model import Card, decided_by, format_duration, sort_key, stands_for_agent

# A state reads without colour too (NO_COLOR, a monochrome popup): a mark and the word.
MARKS = {"blocked": "⚠", "working": "●", "idle": "○", "exited": "✕", "unreachable": "?"}
ORDER = ("blocked", "unreachable", "working", "idle", "exited")


def plain(text: object) -> str:
    """A pane's title, a session's name or an agent's words as one inert line: no control characters (they would
    move the cursor or recolour the terminal), no newline."""
    text = str(text)
    return text if text.isprintable() else "".join(ch if ch.isprintable() else "?" for ch in text)


def short_path(path: str, home: str | None = None) -> str:
    home = home if home is not None else str(Path.home())
    return "~" + path[len(home):] if home and (path == home or path.startswith(home + os.sep)) else path


def arrange(cards: Iterable[Card], text: str = "", others: bool = False) -> list[Card]:
    """The rows in order; `text`: only the cards it matches (any case); `others`: the non-agents too."""
    needle = text.casefold().strip()
    agents: list[Card] = []
    views: list[Card] = []
    rest: list[Card] = []
    for card in cards:
        if needle and not matches(card, needle):
            continue
        if stands_for_agent(card):
            agents.append(card)
        elif card.get("kind") == "view":
            views.append(card)
        elif others:
            rest.append(card)
    agents.sort(key=sort_key)
    views.sort(key=lambda c: str(c.get("target") or c.get("name") or c.get("id")))
    rest.sort(key=lambda c: str(c.get("target") or c.get("name") or c.get("id")))
    return agents + views + rest


FIELDS = ("id", "name", "agent", "state", "target", "window", "cwd", "what", "host", "tmux_server")


def matches(card: Card, needle: str) -> bool:
    return any(needle in str(card.get(key) or "").casefold() for key in FIELDS)


def summary(cards: Iterable[Card]) -> str:
    """'⚠ 2 blocked · 3 working · 1 idle' over the agents (views and other programs are not counted)."""
    counts: dict[str, int] = {}
    for card in cards:
        if stands_for_agent(card):
            counts[str(card.get("state"))] = counts.get(str(card.get("state")), 0) + 1
    parts = [f"{MARKS[state]} {counts[state]} {state}" for state in ORDER if counts.get(state)]
    return " · ".join(parts) or "no agents"


def next_blocked(rows: list[Card], current: str | None) -> str | None:
    """The id of the next blocked agent after `current` in row order (the longest wait first), wrapping; the first
    one when `current` is not blocked."""
    blocked = [str(c.get("id")) for c in rows if c.get("state") == "blocked" and stands_for_agent(c)]
    if not blocked:
        return None
    if current in blocked:
        return blocked[(blocked.index(current) + 1) % len(blocked)]
    return blocked[0]


def option_for_key(card: Card | None, key: str) -> dict[str, object] | None:
    """The prompt option a key press names: `1`…`9` by number, else an option whose key is that one letter (Codex's
    `y`, Aider's `y⏎`). None when the card is not blocked or offers no such option."""
    if card is None or card.get("state") != "blocked" or not stands_for_agent(card):
        return None
    options: list[dict[str, object]] = list((card.get("prompt") or {}).get("options") or [])
    if key.isdigit():
        return next((o for o in options if str(o.get("number")) == key), None)
    if len(key) == 1 and key.isalpha():
        return next((o for o in options if str(o.get("key") or "").rstrip("\r").casefold() == key.casefold()), None)
    return None


def agent_text(card: Card) -> str:
    """'claude 2.1.332' (and '*' when the version is not verified); a view or another program: what holds it."""
    if not stands_for_agent(card):
        return f"({card.get('what') or card.get('kind') or 'no agent'})"
    agent = str(card.get("agent") or "-")
    version = f" {card['agent_version']}" if card.get("agent_version") else ""
    return f"{agent}{version}{'*' if card.get('unverified') else ''}"


def where_text(card: Card) -> str:
    """host:target [window] for a tmux pane, else the pane's directory."""
    target = str(card.get("target") or "")
    if card.get("origin") == "remote" and card.get("host") and not target.startswith(f"{card['host']}:"):
        target = f"{card['host']}:{target}"
    window = f" [{card['window']}]" if card.get("window") else ""
    return f"{target}{window}" if target else short_path(str(card.get("cwd") or ""))


def view_text(card: Card) -> str:
    shown = f"view of {card['view_of']}" if card.get("view_of") else "view"
    return f"{shown} ({card.get('shows') or card.get('what') or ''})"


@dataclass(frozen=True, slots=True)
class Cell:
    text: str
    width: int  # columns given (the last cell takes what is left)
    style: str = ""  # a component class of the list ("state-blocked", "dim", ...), "" for the row's own


def cells(card: Card, width: int, now: float) -> list[Cell]:
    """One row's cells, fitted to `width` columns: the state (mark and word), how long, the name, the agent and
    version, where (host:target [window]), the directory, what decided. Narrow (a 40-column popup): the mark, how
    long, the name and where."""
    state = str(card.get("state") or "?")
    mark = MARKS.get(state, "·")
    since = format_duration(now - float(card.get("since") or now))
    style = f"state-{state}" if state in MARKS else ""
    if not stands_for_agent(card):
        text = view_text(card) if card.get("kind") == "view" else agent_text(card)
        name = str(card.get("target") or card.get("name") or card.get("id"))
        return _fit([Cell(f"  {plain(card.get('id'))}", 6, "dim"), Cell(plain(name), 24, "dim"),
                     Cell(plain(text), 0, "dim")], width)
    name = plain(card.get("name") or card.get("id"))
    where = plain(where_text(card))
    if width < 60:
        return _fit([Cell(mark, 2, style), Cell(since, 7, style), Cell(name, 16), Cell(where, 0, "dim")], width)
    row = [Cell(f"{mark} {state}", 12, style), Cell(since, 7), Cell(name, 18), Cell(plain(agent_text(card)), 16),
           Cell(where, 22, "dim")]
    if width >= 120:
        row += [Cell(plain(short_path(str(card.get("cwd") or ""))), 24, "dim"), Cell(plain(decided_by(card)), 0, "dim")]
    else:
        row.append(Cell(plain(decided_by(card)), 0, "dim"))
    return _fit(row, width)


def _fit(row: list[Cell], width: int) -> list[Cell]:
    """Cells whose widths add up to `width`: each cut (with '…') or padded to its own width; the last takes
    the rest; cells that do not fit at all are left out from the right."""
    out: list[Cell] = []
    left = width
    for i, cell in enumerate(row):
        last = i == len(row) - 1 or left - cell.width < 8
        give = left if last else min(cell.width, left)
        if give <= 0:
            break
        out.append(Cell(_clip(cell.text, give), give, cell.style))
        left -= give
        if last:
            break
    return out


def _clip(text: str, width: int) -> str:
    """`text` in exactly `width` terminal columns (a wide character takes two), cut with '…' and a space."""
    if cell_len(text) > width - 1:
        return set_cell_size(set_cell_size(text, max(0, width - 2)) + "…", width) if width >= 3 \
            else set_cell_size(text, width)
    return set_cell_size(text, width)
