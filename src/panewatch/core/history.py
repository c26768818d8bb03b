"""A pane's recent history, bounded: what `panewatch report-wrong` turns into a golden case.

The history keeps the pane's last output (with its times, resizes, the reports and the exit the
machine was told, and the state changes it published) plus the screen as it was where that output
starts, so that replaying it from there redraws exactly what the pane showed.

How the start stays correct without a second emulator per pane: the history is two segments.
Each begins with a *seed*, the VT bytes that repaint the pane's screen as it was at that moment
(`Screen.vt_dump()` of the pane's own screen, plus the window title, which the dump leaves out),
then holds every event after it. When the newer segment is full (half the budget, or older than
SEGMENT_SECONDS), the older one is dropped and a new one begins with a fresh seed. So between half
the budget and the whole of it is kept, each byte is fed to an emulator once (the pane's own), and
a seed costs one dump per half-budget of output. Replay = seed, then the events, from the older
segment's start.

Input typed into the pane is not kept (it may be a password typed without echo); the screen shows
what the agent echoed.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field

from panewatch.core.cast import Cast, CastEvent, CastHeader
from panewatch.core.combine import PaneState, Report
from panewatch.core.screen import Screen, plain_repaint

HISTORY_BYTES = 256 * 1024  # output kept per pane, at most (and at least half of it, once there was as much)
SEGMENT_SECONDS = 600.0  # a segment older than this starts a new one at the next event: a replay stays short

Payload = bytes | tuple[int, int] | int | None  # "o": the bytes; "r": (cols, rows); "x": the exit code


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    t: float  # on the machine's clock
    kind: str  # "o" output, "r" resize, "x" exit
    payload: Payload


@dataclass(slots=True)
class _Segment:
    start: float
    cols: int
    rows: int
    seed: bytes  # repaints the screen as it was at `start` (b"": the blank screen of a new pane)
    state: PaneState  # the pane's state at `start`
    events: list[HistoryEvent] = field(default_factory=list)
    reports: list[Report] = field(default_factory=list)
    changes: list[tuple[float, PaneState]] = field(default_factory=list)
    size: int = 0  # output bytes held


@dataclass(frozen=True, slots=True)
class Recent:
    """The history as one piece, from its start (times on the machine's clock)."""

    start: float
    cols: int
    rows: int
    seed: bytes
    start_state: PaneState
    events: tuple[HistoryEvent, ...]
    reports: tuple[Report, ...]
    changes: tuple[tuple[float, PaneState], ...]

    @property
    def output_bytes(self) -> int:
        return sum(len(e.payload) for e in self.events if isinstance(e.payload, bytes))

    def relative(self, t: float) -> float:
        """`t` on the cast's clock (seconds since the history's start)."""
        return round(max(0.0, t - self.start), 6)

    def cast(self, **header: object) -> Cast:
        """An asciicast: the seed at time 0, then every event. Output is decoded as UTF-8 with
        surrogateescape across events, so a character split between two reads stays whole and any
        invalid byte survives the round trip (`Cast.output_bytes()` gives back the same bytes)."""
        decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        events: list[CastEvent] = []
        if self.seed:
            events.append(CastEvent(0.0, "o", decoder.decode(self.seed, final=True)))
        for event in self.events:
            t = self.relative(event.t)
            if isinstance(event.payload, bytes):
                text = decoder.decode(event.payload)
                if text:
                    events.append(CastEvent(t, "o", text))
            elif isinstance(event.payload, tuple):
                events.append(CastEvent(t, "r", f"{event.payload[0]}x{event.payload[1]}"))
            elif event.kind == "x":
                events.append(CastEvent(t, "x", "" if event.payload is None else str(event.payload)))
        tail = decoder.decode(b"", final=True)
        if tail:  # a character cut off by the end of the history: kept as its raw bytes
            events.append(CastEvent(events[-1].t if events else 0.0, "o", tail))
        raw = {"version": 2, "width": self.cols, "height": self.rows, **header}
        return Cast(CastHeader(self.cols, self.rows, raw), tuple(events))


def screen_seed(screen: Screen) -> bytes:
    """VT bytes that repaint `screen` on a blank terminal of its size: its title, then its dump (which
    enters the alternate screen if the pane is on it, draws every row, puts the cursor back), with
    its soft wraps kept: a row that wrapped runs on into the next instead of ending in CR LF, so a
    replay wraps it again and a line (a secret among them) stays one piece in the cast."""
    snapshot = screen.snapshot()
    dump = screen.vt_dump()
    dump = keep_soft_wraps(dump, screen.soft_wraps()) if dump else plain_repaint(snapshot)
    title = snapshot.title.replace("\x07", "").replace("\x1b", "")
    return (f"\x1b]0;{title}\x07".encode() if title else b"") + dump


def keep_soft_wraps(dump: bytes, wraps: tuple[bool, ...]) -> bytes:
    """`dump` (rows joined by CR LF) with the CR LF after each soft-wrapped row taken out: that row is
    full, so its next character wraps on a terminal as it did on the pane's. A dump that does not
    have one row per CR LF is left as it is."""
    rows = dump.split(b"\r\n")
    if len(rows) > len(wraps):
        return dump
    out = bytearray(rows[0])
    for y, row in enumerate(rows[1:]):
        if not wraps[y]:
            out += b"\r\n"
        out += row
    return bytes(out)


class History:
    """Fed by a PaneMachine with everything it is told; `recent()` gives it back as one piece."""

    def __init__(self, screen: Screen, start: float, state: PaneState, *, max_bytes: int = HISTORY_BYTES,
                 segment_seconds: float = SEGMENT_SECONDS) -> None:
        self._screen = screen
        self.max_bytes = max(1024, max_bytes)
        self.segment_seconds = segment_seconds
        self.rollovers = 0
        self._older: _Segment | None = None
        self._newer = _Segment(start, screen.cols, screen.rows, b"", state)
        self._state = state

    def output(self, t: float, data: bytes) -> None:
        self._append(HistoryEvent(t, "o", data), len(data))

    def resize(self, t: float, cols: int, rows: int) -> None:
        self._append(HistoryEvent(t, "r", (cols, rows)), 0)

    def exited(self, t: float, code: int | None) -> None:
        self._append(HistoryEvent(t, "x", code), 0)

    def report(self, report: Report) -> None:
        self._newer.reports.append(report)

    def changed(self, t: float, state: PaneState) -> None:
        self._newer.changes.append((t, state))
        self._state = state

    def _append(self, event: HistoryEvent, size: int) -> None:
        newer = self._newer
        newer.events.append(event)
        newer.size += size
        if newer.size >= self.max_bytes // 2 or event.t - newer.start >= self.segment_seconds:
            # The screen already holds this event: the next segment starts just after it.
            self._older = newer
            self._newer = _Segment(event.t, self._screen.cols, self._screen.rows, screen_seed(self._screen),
                                   self._state)
            self.rollovers += 1

    def recent(self) -> Recent:
        first = self._older or self._newer
        segments = [s for s in (self._older, self._newer) if s is not None]
        return Recent(first.start, first.cols, first.rows, first.seed, first.state,
                      tuple(e for s in segments for e in s.events),
                      tuple(r for s in segments for r in s.reports),
                      tuple(c for s in segments for c in s.changes))
