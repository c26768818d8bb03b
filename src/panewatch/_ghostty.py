"""Every reach into pyghostty's private cffi layer lives here, so an engine upgrade touches one file.

pyghostty 0.1.3 exposes the window title only through the C API (`GHOSTTY_TERMINAL_DATA_TITLE`).
"""

from __future__ import annotations

from typing import Any

import pyghostty
from pyghostty import _ffi

_ffi_mod: Any = _ffi
ffi: Any = _ffi_mod.ffi
lib: Any = _ffi_mod.lib


def new_terminal(cols: int, rows: int) -> Any:
    """A terminal that keeps no scrollback: we never classify history, and memory stays bounded."""
    term = pyghostty.Terminal(cols=cols, rows=rows, scrollback=0)
    return term


def title(term: Any) -> str:
    """The window title set by OSC 0/2 ('' when none)."""
    out = ffi.new("GhosttyString*")
    if lib.ghostty_terminal_get(term._t[0], lib.GHOSTTY_TERMINAL_DATA_TITLE, out):
        return ""
    if not out.len:
        return ""
    raw: bytes = ffi.buffer(out.ptr, out.len)[:]
    return raw.decode("utf-8", "replace")
