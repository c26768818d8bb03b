"""An agent's input box as `send` sees it: is the text it typed still waiting there? Pure.

`send` types a task, then its Enter as a key of its own (runtime/guard.py). Whether the agent took the
Enter as "submit" shows in two ways: the agent starts its turn (working, or a dialog at once), or its input
row no longer holds the text (a composer that submits and clears without a working state). The second only
counts where the cursor was on the text's row before the Enter: an agent that parks its cursor elsewhere
says nothing by its cursor row.
"""

from __future__ import annotations

from panewatch.core.screen import Snapshot

TAIL = 24  # characters of the text's last line looked for: enough to be the text, short enough not to wrap


def text_tail(text: str) -> str:
    """The end of the text's last non-blank line, as the input row would show it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][-TAIL:] if lines else ""


def cursor_row(snapshot: Snapshot) -> str:
    """The row the cursor is on (the input row of an agent that shows its cursor there)."""
    row = snapshot.cursor[1]
    return snapshot.rows[row] if 0 <= row < len(snapshot.rows) else ""


def holds(snapshot: Snapshot, tail: str) -> bool:
    """The cursor's row shows `tail` (the typed text waits in the input box)."""
    return bool(tail) and tail in cursor_row(snapshot)
