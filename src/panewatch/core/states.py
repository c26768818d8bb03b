"""The names a pane's state is told in, and the one urgency order. Pure data.

    ScreenState   what a screen's rules can say: blocked | working | idle (a screen cannot show "exited")
    State         a pane's combined state: the screen states plus exited
    ReportState   what an agent reports through a hook or ACP: the screen states plus done
                  ("the turn ended", shown as idle)
    Source        which signal decided a pane's state: screen | hook | acp | process | terminal (the
                  program's own status in its output: OSC 7501, core/termstatus.py)

URGENCY orders the pane states, most urgent first: a pane waiting on the user before one at work,
before one waiting for a new task, before one gone. Manifests list their rules in this order (first
match wins, blocked first), an unidentified screen takes the most urgent verdict any manifest gives,
and the board sorts its cards by it.
"""

from __future__ import annotations

from typing import Literal, get_args

ScreenState = Literal["blocked", "working", "idle"]
State = Literal["blocked", "working", "idle", "exited"]
ReportState = Literal["blocked", "working", "idle", "done"]
Source = Literal["screen", "hook", "acp", "process", "terminal"]

SCREEN_STATES: tuple[ScreenState, ...] = get_args(ScreenState)
STATES: tuple[State, ...] = get_args(State)
REPORT_STATES: tuple[ReportState, ...] = get_args(ReportState)
SOURCES: tuple[Source, ...] = get_args(Source)

URGENCY: tuple[State, ...] = ("blocked", "working", "idle", "exited")
_RANK: dict[str, int] = {state: rank for rank, state in enumerate(URGENCY)}


def screen_state(value: object) -> ScreenState | None:
    """`value` if it names a screen state (data being validated: a manifest rule), else None."""
    return value if value in SCREEN_STATES else None


def report_state(value: object) -> ReportState | None:
    """`value` if it names a report state (data being validated: a hook's message), else None."""
    return value if value in REPORT_STATES else None


def urgency(state: str) -> int:
    """The rank of `state` in URGENCY (0 = most urgent); a name that is no state ranks after all of them."""
    return _RANK.get(state, len(URGENCY))
