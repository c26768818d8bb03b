"""`@panewatch_window_state`: a tmux window option naming the most urgent state of the agents in the window, so
`window-status-format` can mark a window that holds a blocked pane:

    set -g window-status-format '#{?#{==:#{@panewatch_window_state},blocked},#[fg=red bold]⚠ ,}#I:#W#F'

Its value is "blocked", "unreachable", "working" or "idle" (core/states.py's urgency order); a window with no
agent (shells, pagers, views of other panes, an agent that exited) has it unset. It is set through the watcher's
own control clients, on change only, never on a pane or layout (the pane's own `@panewatch_state` is
board/tmux.py's). Remote hosts' windows are not marked (their tmux is theirs).
"""

from __future__ import annotations

from typing import Any, Protocol

from panewatch.board.model import Card, stands_for_agent
from panewatch.core.states import urgency
from panewatch.core.tmux_protocol import command

OPTION = "@panewatch_window_state"
Window = tuple[object, str]  # (the tmux server, its window id "@3")


class TmuxHandle(Protocol):
    """What a window's mark needs of a tmux pane's card (board/tmux.py's TmuxHandle, which imports this module)."""

    server: Any
    pane: Any  # its `info.window_id`, and its control client (`client.send`)
    card: Card

    @property
    def ended(self) -> bool: ...


class WindowMarks:
    def __init__(self) -> None:
        self._window: dict[TmuxHandle, Window] = {}
        self._members: dict[Window, set[TmuxHandle]] = {}
        self._marked: dict[Window, str] = {}
        self.sets = 0  # options sent (tests)

    def update(self, handle: TmuxHandle) -> None:
        """`handle`'s card changed (or its pane moved to another window): mark its window (and the one it left)."""
        window = (handle.server, handle.pane.info.window_id)
        before = self._window.get(handle)
        if before != window:
            if before is not None:
                self._leave(handle, before)
            self._window[handle] = window
            self._members.setdefault(window, set()).add(handle)
        self._mark(window)

    def forget(self, handle: TmuxHandle) -> None:
        before = self._window.pop(handle, None)
        if before is not None:
            self._leave(handle, before)

    def _leave(self, handle: TmuxHandle, window: Window) -> None:
        members = self._members.get(window)
        if members is not None:
            members.discard(handle)
            if not members:
                del self._members[window]
        self._mark(window)

    def _mark(self, window: Window) -> None:
        members = [h for h in self._members.get(window, ()) if not h.ended]
        states = [str(h.card.get("state")) for h in members
                  if stands_for_agent(h.card) and h.card.get("state") not in ("exited", None)]
        state = min(states, key=urgency) if states else ""
        if state == self._marked.get(window, ""):
            return
        if not members:  # the window is gone with its panes: nothing to unset
            self._marked.pop(window, None)
            return
        line = (command("set-option", "-w", "-t", window[1], OPTION, state) if state
                else command("set-option", "-wu", "-t", window[1], OPTION))
        if any(h.pane.client.send([line]) for h in members):  # the first live client takes it
            self._marked[window] = state
            self.sets += 1
