"""The "program status" terminal protocol (OSC 7501), as Claude Code 2.1.332 speaks it. Pure.

A program asks its terminal whether it understands the protocol with `OSC 7501 ; ? ST`; a terminal
that does answers with an OSC 7501 whose data starts with "?" (Claude checks only that), *before*
its answer to the DA1 query Claude sends right after (a reply arriving after DA1 counts as none).
From then on the program reports what it is doing:

    OSC 7501 ; state=STATE:app=claude-code[:id=ID][:kind=KIND][:progress=N][:title=B64][:msg=B64] ST
    OSC 7501 ; state=clear[:id=ID] ST                                    (nothing to report any more)

`title` and `msg` are base64 (UTF-8). This module finds the probe and the reports in a pane's output,
across chunk boundaries, and never raises. What the states mean for a pane, and whether a pane
answers the probe, is decided elsewhere (core/combine.py's table, runtime/live.py's headless panes).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from panewatch.core.states import ReportState

CODE = 7501
INTRO = b"\x1b]7501;"
PROBE_DATA = b"?"
REPLY = b"\x1b]7501;?\x1b\\"  # what a terminal that speaks the protocol answers to the probe
MAX_SEQUENCE = 8 * 1024  # an OSC 7501 longer than this is dropped (Claude's msg is at most 2048 bytes)


# Per program (its `app=`): a status state -> the report state it is taken as (core/combine.py row 3).
# Any other status (an unknown program or state, and "clear") withdraws the one in force: the other
# signals decide again. Observed (agents/SIGNALS.md):
#   claude-code 2.1.332, only once its probe is answered (a headless pane): idle at start and after
#     Esc, working from the prompt on and again as soon as a permission is granted, blocked with
#     kind=permission while its dialog waits, done when the turn's reply is out, clear at exit.
#   codex 0.171.0, unasked (every pane): the same states, blocked kind=permission while its approval
#     waits. Its 'working' is not taken: it also says working for ~0.2 s while the user types at start
#     (corpus codex/0.171.0/trap_idle 3.75-3.93 s, a task of its session start; truth: idle); taken as a
#     withdrawal, it still ends a 'blocked' once the approval is granted, and the screen shows the turn.
STATUS_STATES: dict[str, dict[str, ReportState]] = {
    "claude-code": {"idle": "idle", "working": "working", "blocked": "blocked", "done": "done"},
    "codex": {"idle": "idle", "blocked": "blocked", "done": "done"},
}
CLEAR = "clear"


@dataclass(frozen=True, slots=True)
class ProgramStatus:
    """One status report. `state` is the program's word ("clear": it withdrew its report)."""

    state: str
    app: str = ""
    id: str = ""
    kind: str = ""
    progress: int | None = None
    title: str = ""
    msg: str = ""

    def detail(self) -> str:
        parts = [f"OSC 7501 {self.state}", self.kind, self.title or self.msg]
        return " ".join(p for p in parts if p)[:200]


def report_state(status: ProgramStatus) -> ReportState | None:
    """What `status` reports for its pane (STATUS_STATES); None: it withdraws the status in force."""
    return STATUS_STATES.get(status.app, {}).get(status.state)


def parse(data: bytes) -> ProgramStatus | None:
    """The report in one OSC 7501's data (after `7501;`, before the terminator); None if it is none."""
    fields: dict[str, str] = {}
    for item in data.decode("utf-8", "replace").split(":"):
        key, sep, value = item.partition("=")
        if sep:
            fields[key] = value
    state = fields.get("state", "")
    if not state:
        return None
    progress = fields.get("progress", "")
    return ProgramStatus(state, fields.get("app", ""), fields.get("id", ""), fields.get("kind", ""),
                         int(progress) if progress.isdigit() else None,
                         _b64(fields.get("title", "")), _b64(fields.get("msg", "")))


def _b64(value: str) -> str:
    if not value:
        return ""
    try:
        return base64.b64decode(value, validate=False).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""


@dataclass(frozen=True, slots=True)
class Found:
    """An OSC 7501 in a chunk: `end` is the offset just after it (where a probe's answer belongs)."""

    end: int
    probe: bool
    status: ProgramStatus | None


class Scanner:
    """Finds OSC 7501 sequences in a byte stream fed in chunks (a sequence may span chunks)."""

    def __init__(self) -> None:
        self._held = b""  # the start of a sequence whose terminator has not arrived yet

    def feed(self, data: bytes) -> list[Found]:
        """The sequences completed in `data`; offsets are into `data`."""
        held, self._held = self._held, b""
        if not held and INTRO not in data:  # the common chunk: nothing here but maybe an intro's start
            self._hold_tail(data)
            return []
        buf = held + data
        base = len(held)
        found: list[Found] = []
        pos = 0
        while (start := buf.find(INTRO, pos)) >= 0:
            body = start + len(INTRO)
            end, after = _terminator(buf, body)
            if end < 0:
                if len(buf) - start <= MAX_SEQUENCE:
                    self._held = buf[start:]
                return found
            pos = after
            payload = buf[body:end]
            if len(payload) > MAX_SEQUENCE or after - base <= 0:
                continue
            probe = payload.startswith(PROBE_DATA)
            found.append(Found(after - base, probe, None if probe else parse(payload)))
        self._hold_tail(buf)
        return found

    def _hold_tail(self, buf: bytes) -> None:
        """An ESC at the very end may begin an intro the next chunk completes: hold what follows it.
        (INTRO has one ESC, its first byte: the last ESC in the tail is the only candidate.)"""
        esc = buf.rfind(b"\x1b", max(0, len(buf) - len(INTRO) + 1))
        if esc >= 0 and INTRO.startswith(buf[esc:]):
            self._held = buf[esc:]


def _terminator(buf: bytes, start: int) -> tuple[int, int]:
    """(where the OSC's data ends, where the sequence ends): BEL or ST (ESC \\); (-1, -1) if not yet."""
    bel = buf.find(b"\x07", start)
    st = buf.find(b"\x1b\\", start)
    if bel < 0 and st < 0:
        return -1, -1
    if st < 0 or 0 <= bel < st:
        return bel, bel + 1
    return st, st + 2
