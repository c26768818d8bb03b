"""The naive detector the published design argued against, kept as a benchmark baseline:
the last 8 KB of output, escape sequences stripped, text after the last `\\r` of each line,
judged by the same rules. Agents place words with cursor moves, so this sees garbage."""

from __future__ import annotations

import re

from panewatch.core.screen import Snapshot

TAIL_BYTES = 8192
_ESCAPES = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC … BEL/ST
    r"|\x1b[P_^X][^\x1b]*(?:\x1b\\)?"  # DCS/APC/PM/SOS … ST
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b[ -/]*[0-~]"  # other ESC sequences
    r"|[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]"  # other C0 controls
)


def strip_escapes(text: str) -> str:
    return _ESCAPES.sub("", text)


def tail_snapshot(output: bytes, width: int = 120, *, after_last_cr: bool = True) -> Snapshot:
    """The tail as rows split on newlines; with `after_last_cr`, each row keeps only what follows its
    last carriage return (what a naive reader believes is on that line)."""
    text = strip_escapes(output[-TAIL_BYTES:].decode("utf-8", "replace"))
    lines = text.split("\n")
    rows = tuple((line.rsplit("\r", 1)[-1] if after_last_cr else line).rstrip() for line in lines)
    return Snapshot(rows=rows, width=width)
