"""Secrets masked on what a pane showed: its output stream and its screen, read as logical text.

A terminal program rarely writes a secret in one piece. The terminal wraps a long line (soft wrap);
an agent's TUI wraps its own lines (the secret's first part, CR LF, the rest), draws them inside a
box (`│ sk-ant-…abc │`, CR LF, `│ def… │`), places words with cursor moves, hides the cursor in
the middle of a line; a history starts with a seed that repaints the screen row by row (a tmux
capture places each row with a cursor move). Masking the stream's text between such sequences, or
each screen row alone, lets the halves of a secret pass (issue 23: 19 of 23 fake secrets).

So the text a shape is matched on is the *logical* text, the way a reader of the screen would see it:

* the stream (`LogicalStream`) is followed on an emulator (the cursor, and whether a full row left
  its wrap pending): a piece of text joins the one before it when it starts where that one ended,
  or when that one filled its row (to the edge, or to a box's border) and this one starts the next
  row (after the border); a small gap on the same row reads as spaces; anything else separates.
  An OSC payload (a title, a link) is text of its own. Runs of border characters are no text.
* a screen (`mask_rows`) joins a row with the next where the engine says it wrapped, or where it
  reaches the edge (or a box's border near it) and the next row goes on.

Then, every secret found whole is also masked wherever a piece of it shows (core/redact.py
`known_spans`): the halves in two boxes, a secret drawn out of order, the same key on the screen
and in the cast. Masking keeps every length, so the cast draws the same screen, minus the secrets.

The work is linear in the history (at most HISTORY_BYTES): RE2 shapes, one engine feed per text
piece (cffi releases the GIL there), no call that holds the GIL for long: run in a thread, it does
not stop the daemon's loop.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from panewatch.core.cast import Cast, CastEvent
from panewatch.core.redact import KNOWN_MIN, MASK, known_spans, mask_spans, merge, secret_spans
from panewatch.core.screen import Screen

# Characters that draw a box's sides (and the spaces inside it): never part of a secret.
BORDER = frozenset(" │┃║|▏▕╎╏┆┇┊┋")
EDGE = 4  # a text reaching this close to the right edge (a border and its padding after it) filled its row
GAP = 3  # at most this many cells skipped on a row between two pieces read as spaces (words placed by CSI G)
SCREEN_CHECK = 2048  # the emulator's screen is read for secrets after this much output (and at the end)

# A terminal stream: escape sequences are not text. SGR (colours) joins the text around it; an OSC's
# payload (a title, a hyperlink) is text of its own; any other control or sequence is followed on the
# emulator. Line feeds (and IND, NEL) scroll at the bottom row: the next row is then the same y.
_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*(?P<final>[@-~])|(?P<osc>\x1b\][0-9]*;?)(?P<body>[^\x07\x1b]*)"
                       r"(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?|[\x00-\x1f\x7f]")
_LINE_FEEDS = frozenset({"\n", "\x0b", "\x0c", "\x1bD", "\x1bE"})

Cursor = tuple[int, int, bool, bool]  # x, y, wrap pending, alternate screen


def cells(text: str) -> int:
    """Display width of `text` (wide East Asian characters take two cells, combining marks none)."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


@dataclass
class LogicalStream:
    """The logical text of a terminal stream: `view` (its characters), `where` (each one's index in the
    stream; -1 for a separator or a space standing for skipped cells), and OSC payloads after it."""

    cols: int
    rows: int
    view: list[str] = field(default_factory=list)
    where: list[int] = field(default_factory=list)
    on_screen: set[str] = field(default_factory=set)  # secrets the screen showed whole (drawn out of order)
    _payloads: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._screen = Screen(self.cols, self.rows)
        self._pending = bytearray()  # sequences not fed yet: fed at once before the next text
        self._last: Cursor | None = None  # where the last text ended
        self._bordered = False  # border runs came after it
        self._filled = False  # it filled its row: to the edge, or to a box's side at the edge
        self._line_fed = False  # a line feed since the last text (at the bottom row: a scroll)
        self._unread = 0  # characters fed since the screen was last read

    def follow(self, stream: str, resizes: Sequence[tuple[int, int, int]] = ()) -> None:
        """Follow `stream` (every output of a cast, joined: a sequence split between two events is
        one), resized to (cols, rows) where the stream had reached `offset`: `resizes` as
        (offset, cols, rows), in order."""
        last = 0
        pending = list(reversed(resizes))
        for m in _SEQUENCE.finditer(stream):
            if m.start() > last:
                self._text(stream, last, m.start(), pending)
            self._resize_to(m.start(), pending)
            last = m.end()
            token = m.group()
            self._pending += token.encode("utf-8", "surrogateescape")
            if token in _LINE_FEEDS:
                self._line_fed = True
            if m.group("osc") is not None and m.end("body") > m.start("body"):
                self._payloads.append((m.start("body"), m.end("body")))
            if self._unread >= SCREEN_CHECK:
                self._read_screen()
        if len(stream) > last:
            self._text(stream, last, len(stream), pending)
        self._read_screen()

    def _read_screen(self) -> None:
        """The secrets on the screen now, read as logical rows: a secret drawn in pieces out of order
        (the second half, then the first) is whole only there."""
        self._flush()
        self._unread = 0
        snapshot = self._screen.snapshot()
        self.on_screen |= row_secrets(snapshot.rows, self._screen.cols, self._screen.soft_wraps())

    def _resize_to(self, offset: int, pending: list[tuple[int, int, int]]) -> None:
        while pending and pending[-1][0] <= offset:
            _at, cols, rows = pending.pop()
            self._flush()
            self._screen.resize(cols, rows)
            self.cols, self.rows = self._screen.cols, self._screen.rows
            self._last = None  # the screen reflows: positions before it mean nothing now

    def close(self) -> None:
        self._screen.close()

    def _flush(self) -> None:
        if self._pending:
            self._screen.feed(bytes(self._pending))
            self._unread += len(self._pending)
            self._pending.clear()

    def _text(self, stream: str, start: int, end: int, resizes: list[tuple[int, int, int]]) -> None:
        while resizes and resizes[-1][0] < end:  # a resize inside this text: follow each side on its own
            cut = max(start, resizes[-1][0])
            if cut > start:
                self._piece(stream, start, cut)
                start = cut
            self._resize_to(cut, resizes)
        if end > start:
            self._piece(stream, start, end)

    def _piece(self, stream: str, start: int, end: int) -> None:
        piece = stream[start:end]
        self._flush()
        if all(c in BORDER for c in piece):
            self._screen.feed(piece.encode("utf-8", "surrogateescape"))
            if self._last is not None:
                self._bordered = True
                _x, y, pending, _alt = self._screen.cursor_state()
                if pending and y == self._last[1] and self._last[0] >= self.cols - EDGE:
                    self._filled = True
            return
        if self._connect(self._screen.cursor_state()):  # a row's continuation: no border between them
            while self.view and self.view[-1] in BORDER and self.where[-1] >= 0:
                self.view.pop()
                self.where.pop()
            while start < end and stream[start] in BORDER:
                start += 1
        self._screen.feed(piece.encode("utf-8", "surrogateescape"))
        self._unread += len(piece)
        self.view.extend(stream[start:end])
        self.where.extend(range(start, end))
        self._last, self._bordered, self._line_fed = self._screen.cursor_state(), False, False
        self._filled = self._last[2]

    def _connect(self, begin: Cursor) -> bool:
        """Put what stands between the last text and the one beginning at `begin`: nothing (it goes
        on), spaces (a few cells further on the same row) or a separator. True: it goes on on the
        next row (the last one filled its row)."""
        last = self._last
        if last is None or not self.view:
            return False
        x, y, _pending, alt = begin
        lx, ly, lpending, lalt = last
        if alt != lalt:
            self._separate()
        elif y == ly and not self._line_fed and not lpending and not self._bordered:
            if lx < x <= lx + GAP:
                self._spaces(x - lx)
            elif x != lx:  # x == lx: the cursor was moved (or hidden, saved, ...) and came back: it goes on
                self._separate()
        else:
            next_row = y == ly + 1 or (y == ly and self._line_fed)
            if next_row and self._filled and x <= EDGE:
                return True  # the row was full: this is its continuation (the agent wrapped it, or a box did)
            self._separate()
        return False

    def _separate(self) -> None:
        self.view.append("\n")
        self.where.append(-1)

    def _spaces(self, n: int) -> None:
        self.view.extend(" " * n)
        self.where.extend([-1] * n)

    def text(self, stream: str) -> tuple[str, list[int]]:
        """The logical text (then each OSC payload on a line of its own) and each character's index."""
        view, where = list(self.view), list(self.where)
        for start, end in self._payloads:
            view += ["\n", stream[start:end]]
            where += [-1, *range(start, end)]
        return "".join(view), where


def secrets_in(text: str) -> set[str]:
    """The secrets in one piece of text (a title), for masking their pieces elsewhere."""
    return {v for v in (text[s:e].strip() for s, e in secret_spans(text)) if len(v) >= KNOWN_MIN}


def values_at(view: str, where: Sequence[int], spans: Iterable[tuple[int, int]]) -> set[str]:
    """The secrets themselves (stream characters only), for masking their pieces elsewhere."""
    found = set()
    for start, end in spans:
        value = "".join(view[i] for i in range(start, end) if where[i] >= 0).strip()
        if len(value) >= KNOWN_MIN:
            found.add(value)
    return found


def mask_stream(events: Sequence[CastEvent], cols: int, rows: int,
                known: Collection[str] = ()) -> tuple[list[CastEvent], set[str]]:
    """A cast's events with every secret in its output masked on the logical text (each output event
    keeps its length; resizes and the rest pass unchanged), and the secrets found."""
    offsets: list[int] = []
    resizes: list[tuple[int, int, int]] = []
    at = 0
    for event in events:
        offsets.append(at)
        if event.kind == "o":
            at += len(event.data)
        elif event.kind == "r" and (size := event.size) is not None:
            resizes.append((at, *size))
    stream = "".join(e.data for e in events if e.kind == "o")
    logical = LogicalStream(cols, rows)
    try:
        logical.follow(stream, resizes)
    finally:
        logical.close()
    view, where = logical.text(stream)
    spans = secret_spans(view)
    found = values_at(view, where, spans) | logical.on_screen
    compact = [i for i in where if i >= 0]  # the stream's text, every piece joined
    compact_text = "".join(stream[i] for i in compact)
    chars = list(stream)
    for start, end in spans:
        for i in range(start, end):
            if where[i] >= 0:
                chars[where[i]] = MASK
    for start, end in known_spans(compact_text, found | set(known)):
        for i in range(start, end):
            chars[compact[i]] = MASK
    masked = "".join(chars)
    out = [CastEvent(e.t, e.kind, masked[offsets[n]:offsets[n] + len(e.data)]) if e.kind == "o" else e
           for n, e in enumerate(events)]
    return out, found


def mask_cast(cast: Cast, known: Collection[str] = ()) -> tuple[Cast, set[str]]:
    """`cast` with its secrets masked (see mask_stream), and the secrets found."""
    events, found = mask_stream(cast.events, cast.header.width, cast.header.height, known)
    return Cast(cast.header, tuple(events)), found


def logical_rows(rows: Sequence[str], width: int, wraps: Sequence[bool] = ()) -> tuple[str, list[tuple[int, int]]]:
    """A screen's rows as logical text: a row joined with the next where it wrapped (`wraps`, the
    engine's word) or where it reaches the edge, or a border near it, and the next row goes on (its
    own border left out). Each character's (row, index in the row); (-1, -1) for a separator."""
    view: list[str] = []
    where: list[tuple[int, int]] = []
    joined = False  # this row continues the one before: its leading border is no text
    for y, row in enumerate(rows):
        begin = 0
        if joined:
            while begin < len(row) and row[begin] in BORDER:
                begin += 1
        end = len(row)
        wrapped = y < len(wraps) and wraps[y]
        if not wrapped:
            while end > begin and row[end - 1] in BORDER:
                end -= 1
        view.append(row[begin:end])
        where.extend((y, i) for i in range(begin, end))
        bordered = begin < end < len(row) and cells(row[:end]) >= width - EDGE  # a box's side near the edge
        joined = wrapped or bordered or cells(row) >= width
        if not joined:
            view.append("\n")
            where.append((-1, -1))
    return "".join(view), where


def row_secrets(rows: Sequence[str], width: int, wraps: Sequence[bool] = ()) -> set[str]:
    """The secrets on a screen's logical text."""
    view, where = logical_rows(rows, width, wraps)
    return _row_values(view, where, secret_spans(view))


def _row_values(view: str, where: Sequence[tuple[int, int]], spans: Iterable[tuple[int, int]]) -> set[str]:
    return {v for v in ("".join(view[i] for i in range(s, e) if where[i][0] >= 0).strip() for s, e in spans)
            if len(v) >= KNOWN_MIN}


def mask_rows(rows: Sequence[str], width: int, wraps: Sequence[bool] = (),
              known: Collection[str] = ()) -> tuple[list[str], set[str]]:
    """A screen's rows with the secrets on their logical text masked (each row keeps its length),
    and the secrets found."""
    view, where = logical_rows(rows, width, wraps)
    spans = secret_spans(view)
    found = _row_values(view, where, spans)
    hidden: dict[int, list[tuple[int, int]]] = {}
    for start, end in merge(spans + known_spans(view, found | set(known))):
        for i in range(start, end):
            y, x = where[i]
            if y >= 0:
                hidden.setdefault(y, []).append((x, x + 1))
    return [mask_spans(row, merge(hidden.get(y, ()))) for y, row in enumerate(rows)], found
