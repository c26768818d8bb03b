"""The naive detector the published design argued against, kept as a benchmark baseline:
the last 8 KB of output, escape sequences stripped, text after the last `\\r` of each line,
judged by the same rules. Agents place words with cursor moves, so this sees garbage."""

from __future__ import annotations

import re

from panewatch.screen import Snapshot

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


def tail_snapshot(output: bytes, width: int = 120) -> Snapshot:
    text = strip_escapes(output[-TAIL_BYTES:].decode("utf-8", "replace"))
    rows = tuple(line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n"))
    return Snapshot(rows=rows, width=width)
