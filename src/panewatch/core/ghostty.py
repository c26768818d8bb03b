"""Every reach into pyghostty's private cffi layer lives here, so an engine upgrade touches one file.

pyghostty 0.1.3 exposes the window title only through the C API (`GHOSTTY_TERMINAL_DATA_TITLE`), and its
high-level getters allocate on every call; snapshots are the hot path, so they read through here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyghostty
from pyghostty import _ffi, core

_ffi_mod: Any = _ffi
ffi: Any = _ffi_mod.ffi
lib: Any = _ffi_mod.lib


def new_terminal(cols: int, rows: int) -> Any:
    """A terminal that keeps no scrollback: we never classify history, and memory stays bounded."""
    term = pyghostty.Terminal(cols=cols, rows=rows, scrollback=0)
    return term


class VisibleText:
    """The visible rows as plain text, 3-4x cheaper than `Terminal.text()`: the selection, grid refs
    and output buffer are allocated once and reused, and the buffer is formatted in one call
    instead of a size query plus a fill. Snapshots are the hot path of every classification.

    `wrapped(rows)` says which of those rows the terminal soft-wrapped (a line the program wrote longer than
    the screen is wide goes on at the start of the next row): the engine's per-row flag, ~1 µs a row."""

    def __init__(self, term: Any) -> None:
        self._term = term
        self._grid_ref = _ffi_mod.union_fn(
            "ghostty_terminal_grid_ref", "GhosttyResult(*)(GhosttyTerminal, GhosttyPointS, GhosttyGridRef*)")
        self._point = ffi.new("GhosttyPointS*")
        self._point.tag = lib.GHOSTTY_POINT_TAG_ACTIVE
        self._start = core.init_sized("GhosttyGridRef")
        self._end = core.init_sized("GhosttyGridRef")
        self._selection = core.init_sized("GhosttySelection")
        self._options = core.init_sized("GhosttyTerminalSelectionFormatOptions")
        self._options.emit = lib.GHOSTTY_FORMATTER_FORMAT_PLAIN
        self._options.unwrap, self._options.trim = False, True
        self._row = ffi.new("GhosttyRow*")
        self._flag = ffi.new("bool*")
        self._written = ffi.new("size_t*")
        self._buf: Any = None
        self._size = (0, 0)

    def _ref(self, out: Any, x: int, y: int) -> None:
        self._point.value.x, self._point.value.y = x, y
        core.check(self._grid_ref(self._term._t[0], self._point[0], out), "grid_ref")

    def read(self, cols: int, rows: int) -> str:
        if self._size != (cols, rows):
            # Room for 4-byte characters plus combining marks; bigger screens fall back below.
            self._buf = ffi.new("uint8_t[]", cols * rows * 8 + rows)
            self._size = (cols, rows)
        self._ref(self._start, 0, 0)
        self._ref(self._end, cols - 1, rows - 1)
        self._selection.start = self._start[0]
        self._selection.end = self._end[0]
        self._options.selection = self._selection
        result = lib.ghostty_terminal_selection_format_buf(
            self._term._t[0], self._options[0], self._buf, len(self._buf), self._written)
        if result:  # out of space (very long grapheme clusters): the slow, exact path
            text: str = self._term.text()
            return text
        raw: bytes = ffi.buffer(self._buf, self._written[0])[:]
        return raw.decode("utf-8", "replace")

    def wrapped(self, rows: Iterable[int]) -> list[int]:
        """Which of these visible rows the terminal soft-wrapped: their text goes on at the next row's start."""
        out = []
        for y in rows:
            self._ref(self._start, 0, y)
            core.check(lib.ghostty_grid_ref_row(self._start, self._row), "grid_ref_row")
            core.check(lib.ghostty_row_get(self._row[0], lib.GHOSTTY_ROW_DATA_WRAP, self._flag), "row_get")
            if self._flag[0]:
                out.append(y)
        return out


def vt_dump(term: Any) -> bytes:
    """The visible screen as VT bytes (modes, colours, cursor) that repaint it on another terminal.

    For the board's live view of a pane that started long before the viewer looked.
    """
    opts = core.init_sized("GhosttyFormatterTerminalOptions")
    opts.emit = lib.GHOSTTY_FORMATTER_FORMAT_VT
    opts.unwrap, opts.trim = False, False
    opts.extra.modes = opts.extra.scrolling_region = True
    opts.extra.screen.cursor = opts.extra.screen.style = opts.extra.screen.charsets = True
    formatter = ffi.new("GhosttyFormatter*")
    core.check(lib.ghostty_formatter_terminal_new(ffi.NULL, formatter, term._t[0], opts[0]), "formatter_new")
    try:
        size = ffi.new("size_t*")
        lib.ghostty_formatter_format_buf(formatter[0], ffi.NULL, 0, size)  # size query
        buf = ffi.new("uint8_t[]", max(size[0], 1))
        core.check(lib.ghostty_formatter_format_buf(formatter[0], buf, len(buf), size), "formatter_format")
        data: bytes = ffi.buffer(buf, size[0])[:]
        return data
    finally:
        lib.ghostty_formatter_free(formatter[0])


SYNCHRONIZED_OUTPUT = 2026  # a DEC private mode: ghostty_mode_new's packing is the number itself


class StateReader:
    """Title, alternate-screen flag and cursor with the out-parameters allocated once (these run on
    every snapshot; `Terminal.get` allocates and looks the key up on each call)."""

    def __init__(self, term: Any) -> None:
        self._term = term
        self._title = ffi.new("GhosttyString*")
        self._int = ffi.new("int*")
        self._x = ffi.new("uint16_t*")
        self._y = ffi.new("uint16_t*")
        self._mode = ffi.new("GhosttyTerminalModeConfig*")

    def title(self) -> str:
        if not lib.ghostty_terminal_get(self._term._t[0], lib.GHOSTTY_TERMINAL_DATA_TITLE, self._title) \
                and self._title.len:
            raw: bytes = ffi.buffer(self._title.ptr, self._title.len)[:]
            return raw.decode("utf-8", "replace")
        return ""

    def read(self) -> tuple[str, bool, tuple[int, int]]:
        t = self._term._t[0]
        get = lib.ghostty_terminal_get
        title = self.title()
        core.check(get(t, lib.GHOSTTY_TERMINAL_DATA_ACTIVE_SCREEN, self._int), "active_screen")
        core.check(get(t, lib.GHOSTTY_TERMINAL_DATA_CURSOR_X, self._x), "cursor_x")
        core.check(get(t, lib.GHOSTTY_TERMINAL_DATA_CURSOR_Y, self._y), "cursor_y")
        return title, bool(self._int[0]), (int(self._x[0]), int(self._y[0]))

    def synchronized_output(self) -> bool:
        """DEC mode 2026 (synchronized output) is on: the program began a frame and has not ended it."""
        self._mode.mode = SYNCHRONIZED_OUTPUT
        core.check(lib.ghostty_terminal_get(self._term._t[0], lib.GHOSTTY_TERMINAL_DATA_MODE, self._mode), "mode")
        return bool(self._mode.value)


class CursorReader:
    """The cursor as the next printed character will meet it: (x, y, pending wrap, alternate screen).
    A full row leaves the cursor on its last cell with the wrap pending; the next character goes to
    the next row. For following a stream's text across the cursor moves between its pieces."""

    def __init__(self, term: Any) -> None:
        self._term = term
        self._x = ffi.new("uint16_t*")
        self._y = ffi.new("uint16_t*")
        self._flag = ffi.new("bool*")
        self._int = ffi.new("int*")

    def read(self) -> tuple[int, int, bool, bool]:
        t = self._term._t[0]
        get = lib.ghostty_terminal_get
        core.check(get(t, lib.GHOSTTY_TERMINAL_DATA_CURSOR_X, self._x), "cursor_x")
        core.check(get(t, lib.GHOSTTY_TERMINAL_DATA_CURSOR_Y, self._y), "cursor_y")
        core.check(get(t, lib.GHOSTTY_TERMINAL_DATA_CURSOR_PENDING_WRAP, self._flag), "pending_wrap")
        core.check(get(t, lib.GHOSTTY_TERMINAL_DATA_ACTIVE_SCREEN, self._int), "active_screen")
        return int(self._x[0]), int(self._y[0]), bool(self._flag[0]), bool(self._int[0])
