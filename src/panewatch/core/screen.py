"""One emulated screen per pane: bytes in, a snapshot of what is *visible* out.

Backed by libghostty-vt through pyghostty. The interface is deliberately small (feed, snapshot,
resize, replies) so the engine can be swapped. Scrollback is never kept nor read: an answered
prompt that scrolled out of view must not be classified. A closed screen (its pane exited) frees
the engine and keeps only its last picture: the snapshot and a repaint of it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from panewatch.core import ghostty, termstatus

# One line of text the terminal soft-wrapped over several rows: (first row, last row, the joined text).
Wrap = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a person looking at the pane would see, as plain text."""

    rows: tuple[str, ...]  # exactly `height` rows, trailing spaces stripped
    title: str = ""
    alt_screen: bool = False
    cursor: tuple[int, int] = (0, 0)  # (col, row), zero-based
    width: int = 0
    # The lines the terminal wrapped onto the next row(s) because the program wrote them longer than the
    # screen is wide (not the ones a program broke itself): each one's rows and its text as written.
    wraps: tuple[Wrap, ...] = ()

    @property
    def height(self) -> int:
        return len(self.rows)

    def text(self) -> str:
        return "\n".join(self.rows)

    def lines(self, start: int = 0, end: int | None = None) -> list[tuple[int, str]]:
        """(first row, text) of each logical line over rows [start, end): soft-wrapped rows joined, as a
        person reads them; a line wrapped across the range's edges is taken whole."""
        end = len(self.rows) if end is None else end
        out: list[tuple[int, str]] = []
        wraps = iter(w for w in self.wraps if w[1] >= start and w[0] < end)
        wrap = next(wraps, None)
        row = start
        while row < end:
            if wrap is not None and wrap[0] <= row:
                out.append((min(wrap[0], row), wrap[2]))
                row = wrap[1] + 1
                wrap = next(wraps, None)
                continue
            out.append((row, self.rows[row]))
            row += 1
        return out

    def line_text(self, start: int = 0, end: int | None = None) -> str:
        """The logical lines over rows [start, end) joined by newlines (`lines`)."""
        if not self.wraps:
            return "\n".join(self.rows[start:end])
        return "\n".join(text for _, text in self.lines(start, end))

    @staticmethod
    def from_text(text: str, *, title: str = "", width: int = 120, height: int | None = None) -> Snapshot:
        """A snapshot from plain text (tests, and the naive byte-tail baseline)."""
        rows = [r.rstrip() for r in text.split("\n")]
        if height is not None:  # keep the bottom rows, as a terminal scrolls; pad short text with blanks
            rows = rows[-height:] if len(rows) > height else rows + [""] * (height - len(rows))
        return Snapshot(rows=tuple(rows), title=title, width=width)


def cells(text: str) -> int:
    """Columns `text` takes on a terminal: wide (East Asian) characters two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


# A row the terminal wrapped was written up to its last column; its text, trailing blanks stripped, reaches
# at least this near the edge (a break after a few written blanks is still seen; one after more is not).
WRAP_SLACK = 4
# The wide (two-column) characters' main blocks: Hangul Jamo, CJK, Hangul, fullwidth forms, emoji. For the
# quick bound of `wrap_candidates` only (`cells` is exact, and costs ~0.1 µs a character).
_WIDE = re.compile("[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf"
                   "\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"
                   "\U0001f300-\U0001f64f\U0001f900-\U0001f9ff\U00020000-\U0003fffd]")


def wrap_candidates(rows: tuple[str, ...], width: int) -> list[int]:
    """The rows that may have been soft-wrapped (all but the last, reaching near the right edge): the only
    ones whose wrap flag is worth the engine call. Not a row ending in a box-drawing or block character (a
    rule, a box's edge, a scrollbar: a full-screen UI draws those in place, and they are most full-width
    rows of an agent's screen: 20 of them at 200x50 cost Gemini's snapshot 20 µs)."""
    out = []
    near = width - WRAP_SLACK
    for i, row in enumerate(rows[:-1]):
        size = len(row)
        if not row or size * 2 < near or "\u2500" <= row[-1] <= "\u259f":  # too short even all wide; an edge
            continue
        if size >= near or (not row.isascii() and size + len(_WIDE.findall(row)) >= near):
            out.append(i)
    return out


def logical_wraps(rows: tuple[str, ...], width: int, wrapped: set[int]) -> tuple[Wrap, ...]:
    """Each run of soft-wrapped rows as one line: a wrapped row's text padded to the edge (its trailing
    blanks were written), then the next row's."""
    out: list[Wrap] = []
    row = 0
    while row < len(rows):
        last = row
        while last in wrapped and last + 1 < len(rows):
            last += 1
        if last > row:
            text = "".join(r + " " * max(0, width - cells(r)) for r in rows[row:last]) + rows[last]
            out.append((row, last, text.rstrip()))
        row = last + 1
    return tuple(out)


@dataclass(slots=True)
class ScreenStats:
    fed_bytes: int = 0
    engine_errors: int = 0  # exceptions the engine raised that we swallowed


ReplyHandler = Callable[[bytes], None]
CellStyle = tuple[str, str, bool, bool]  # (background, foreground, inverse, bold) of one cell

MAX_SIZE = (1000, 500)  # (cols, rows): the largest screen an engine is given


def clamp_size(cols: int, rows: int, least: tuple[int, int] = (1, 1),
               most: tuple[int, int] = MAX_SIZE) -> tuple[int, int]:
    """(cols, rows) within [least, most]: the one bound on window sizes (a screen's, a pty's, and
    the board's tighter one for sizes a browser asks for)."""
    return max(least[0], min(cols, most[0])), max(least[1], min(rows, most[1]))

# A closed screen keeps its VT repaint up to this size; a bigger one (a huge screen, every cell in its
# own colour) becomes the plain text, so what an exited pane keeps stays small.
MAX_KEPT_REPAINT = 64 * 1024


def plain_repaint(snapshot: Snapshot) -> bytes:
    """VT bytes that draw `snapshot`'s text (no colours): clear, home, one row per line, the cursor."""
    col, row = snapshot.cursor
    body = "\r\n".join(snapshot.rows).encode("utf-8", "replace")
    return b"\x1b[0m\x1b[2J\x1b[H" + body + f"\x1b[{row + 1};{col + 1}H".encode()


@dataclass
class Screen:
    """An emulated terminal screen. `feed` never raises, whatever the bytes."""

    cols: int = 120
    rows: int = 32
    stats: ScreenStats = field(default_factory=ScreenStats)

    def __post_init__(self) -> None:
        self.cols, self.rows = clamp_size(self.cols, self.rows)
        self._term = ghostty.new_terminal(self.cols, self.rows)
        self._text: ghostty.VisibleText | None = ghostty.VisibleText(self._term)
        self._state: ghostty.StateReader | None = ghostty.StateReader(self._term)
        self._cursor: ghostty.CursorReader | None = None  # made on first use (report-wrong's masking)
        self._reply: ReplyHandler | None = None
        self.answer_program_status = False  # answer OSC 7501 probes (with a reply handler): see termstatus
        self._status_scanner = termstatus.Scanner()
        self._statuses: list[termstatus.ProgramStatus] = []
        self.titles_set = 0  # writes that set the window title (OSC 0 or 2) so far
        self._cached: Snapshot | None = None
        self._kept: bytes | None = None  # the repaint of a closed screen
        # The program is inside a synchronized update (DEC mode 2026: `CSI ? 2026 h` ... `l`): what the
        # engine holds is a frame half drawn, which a terminal would not show yet (see PaneDetector).
        self.synchronized = False
        self._sync_tail = b""  # the last bytes fed: a `2026` split across two reads

    def on_reply(self, handler: ReplyHandler | None) -> None:
        """Receive the engine's answers to terminal queries (DA1, DSR, ...); a headless pane writes them back."""
        self._reply = handler
        if not self.closed:
            self._term.on_reply(None if handler is None else self._forward_reply)

    def _forward_reply(self, data: bytes) -> None:
        if self._reply is not None:
            self._reply(data)

    def feed(self, data: bytes) -> None:
        if not data or self.closed:
            return
        self.stats.fed_bytes += len(data)
        self._cached = None
        pos = 0
        for found in self._status_scanner.feed(data):
            if found.status is not None:
                self._statuses.append(found.status)
            elif found.probe and self.answer_program_status and self._reply is not None:
                # The answer goes before the engine's answers to what follows (Claude's DA1 right after).
                self._feed_engine(data[pos:found.end])
                pos = found.end
                try:
                    self._forward_reply(termstatus.REPLY)
                except Exception:  # the pane's write failed: the screen goes on
                    self.stats.engine_errors += 1
        self._feed_engine(data[pos:])
        # A window title set (OSC 0/2: agents end it with BEL; BEL first, the cheaper search on every feed).
        if b"\x07" in data and (b"\x1b]0;" in data or b"\x1b]2;" in data):
            self.titles_set += 1
        # Read the mode only where it can have changed (a sequence naming 2026, maybe split across reads;
        # a reset while one is open): most feeds are spinner frames, and the read costs a quarter of one.
        if self.synchronized or b"2026" in data or b"2026" in self._sync_tail + data[:3]:
            try:
                self.synchronized = self._state is not None and self._state.synchronized_output()
            except Exception:
                self.stats.engine_errors += 1
                self.synchronized = False
        self._sync_tail = data[-3:]

    def _feed_engine(self, data: bytes) -> None:
        try:
            self._term.feed(data)
        except Exception:  # the engine or a reply callback failed: keep the pane alive
            self.stats.engine_errors += 1

    def title(self) -> str:
        """The window title now, without a whole snapshot (a few µs; "" if unknown)."""
        if self._cached is not None:
            return self._cached.title
        if self._state is None:
            return ""
        try:
            return self._state.title()
        except Exception:
            self.stats.engine_errors += 1
            return ""

    def take_program_status(self) -> list[termstatus.ProgramStatus]:
        """The OSC 7501 status reports fed since the last call, oldest first."""
        out, self._statuses = self._statuses, []
        return out

    def resize(self, cols: int, rows: int) -> None:
        cols, rows = clamp_size(cols, rows)
        if (cols, rows) == (self.cols, self.rows) or self.closed:
            return
        try:
            self._term.resize(cols, rows)
        except Exception:
            self.stats.engine_errors += 1
            return
        self.cols, self.rows = cols, rows
        self._cached = None

    def invalidate(self) -> None:
        """Forget the cached snapshot: the next one is read from the engine again."""
        if not self.closed:
            self._cached = None

    def snapshot(self) -> Snapshot:
        """The visible screen now. Cached until the next feed or resize."""
        if self._cached is not None:
            return self._cached
        try:
            assert self._text is not None and self._state is not None  # closed: the last snapshot stays cached
            text = self._text.read(self.cols, self.rows)
            title, alt, cursor = self._state.read()
        except Exception:
            self.stats.engine_errors += 1
            text, title, alt, cursor = "", "", False, (0, 0)
        lines = text.split("\n")[: self.rows]
        rows = tuple(line.rstrip() for line in lines) + ("",) * (self.rows - len(lines))
        self._cached = Snapshot(rows=rows, title=title, alt_screen=alt, cursor=(cursor[0], cursor[1]),
                                width=self.cols, wraps=self._wraps(rows))
        return self._cached

    def _wraps(self, rows: tuple[str, ...]) -> tuple[Wrap, ...]:
        """The soft-wrapped lines: the engine's wrap flag asked only for rows that reach near the right edge
        (1 µs a row; an agent's screen has a few: its full-width rules)."""
        candidates = wrap_candidates(rows, self.cols)
        if self._text is None or not candidates:
            return ()
        try:
            wrapped = set(self._text.wrapped(candidates))
        except Exception:
            self.stats.engine_errors += 1
            return ()
        return logical_wraps(rows, self.cols, wrapped) if wrapped else ()

    def row_styles(self, row: int) -> list[CellStyle]:
        """Each cell's look on visible row `row` (background, foreground, inverse, bold), for what a text
        snapshot cannot tell: which option a dialog drawn in colours has selected. [] when unknown (closed,
        out of range, an engine error). Costly per cell: for an answer, never per classification."""
        if self.closed or not 0 <= row < self.rows:
            return []
        try:
            styles = [self._term.style(x, row) for x in range(self.cols)]
        except Exception:
            self.stats.engine_errors += 1
            return []
        return [(repr(st["bg"]), repr(st["fg"]), bool(st["inverse"]), bool(st["bold"])) for st in styles]

    def cursor_state(self) -> tuple[int, int, bool, bool]:
        """(x, y, wrap pending, alternate screen): where the next printed character goes (a full row
        leaves the wrap pending: the next character starts the next row). (0, 0, False, False) when
        closed or on an engine error."""
        try:
            if self._cursor is None:
                assert self._term is not None
                self._cursor = ghostty.CursorReader(self._term)
            return self._cursor.read()
        except Exception:
            self.stats.engine_errors += 1
            return 0, 0, False, False

    def soft_wraps(self) -> tuple[bool, ...]:
        """Per visible row: its text wrapped onto the next row (one logical line, not a line end).
        All False when closed or on an engine error."""
        if self.closed or self._text is None:
            return (False,) * self.rows
        try:
            wrapped = set(self._text.wrapped(range(self.rows)))  # the same per-row read the logical lines take
            return tuple(y in wrapped for y in range(self.rows))
        except Exception:
            self.stats.engine_errors += 1
            return (False,) * self.rows

    def vt_dump(self) -> bytes:
        """VT bytes that repaint this screen on another terminal (a viewer joining late); b"" on failure."""
        if self._kept is not None:
            return self._kept
        try:
            return ghostty.vt_dump(self._term)
        except Exception:
            self.stats.engine_errors += 1
            return b""

    @property
    def closed(self) -> bool:
        return self._kept is not None

    def close(self) -> None:
        """Free the engine (tens of KB per screen). The screen stays readable as it was last: its
        snapshot and repaint; feeds and resizes are ignored from now on."""
        if self.closed:
            return
        snapshot = self.snapshot()
        repaint = self.vt_dump()
        self._kept = repaint if len(repaint) <= MAX_KEPT_REPAINT else plain_repaint(snapshot)
        self._reply = None
        self._term.on_reply(None)
        self._term.close()
        # The readers hold buffers sized to the screen; they must never touch the freed engine.
        self._term = self._text = self._state = self._cursor = None
        self.synchronized = False
