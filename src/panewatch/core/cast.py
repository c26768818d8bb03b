"""asciicast v2: the one recording format (fixtures, replays, `--record`, bug reports)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from panewatch.errors import PanewatchError


class CastError(PanewatchError, ValueError):
    """A file that is not a readable asciicast v2 recording."""


@dataclass(frozen=True, slots=True)
class CastHeader:
    width: int
    height: int
    raw: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CastEvent:
    t: float
    kind: str  # "o" output, "i" input, "r" resize "COLSxROWS", "m" marker
    data: str

    @property
    def size(self) -> tuple[int, int] | None:
        """(cols, rows) of a resize event, None if malformed."""
        cols, _, rows = self.data.partition("x")
        if cols.isdigit() and rows.isdigit():
            return int(cols), int(rows)
        return None


@dataclass(frozen=True, slots=True)
class Cast:
    header: CastHeader
    events: tuple[CastEvent, ...]

    @property
    def duration(self) -> float:
        return self.events[-1].t if self.events else 0.0

    def output_bytes(self) -> bytes:
        return b"".join(e.data.encode("utf-8", "surrogateescape") for e in self.events if e.kind == "o")


def parse_cast(lines: Iterator[str] | list[str], name: str = "<cast>") -> Cast:
    it = iter(lines)
    try:
        header = json.loads(next(it))
    except (StopIteration, json.JSONDecodeError) as exc:
        raise CastError(f"{name}: first line is not an asciicast header ({exc})") from exc
    if not isinstance(header, dict) or header.get("version") != 2:
        raise CastError(f"{name}: not asciicast v2 (header {str(header)[:80]!r})")
    try:
        width, height = int(header["width"]), int(header["height"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CastError(f"{name}: header lacks width/height") from exc
    events: list[CastEvent] = []
    for lineno, line in enumerate(it, start=2):
        if not line.strip():
            continue
        try:
            t, kind, data = json.loads(line)
            events.append(CastEvent(float(t), str(kind), str(data)))
        except (ValueError, TypeError) as exc:
            raise CastError(f"{name}:{lineno}: bad event line ({exc})") from exc
    return Cast(CastHeader(width, height, header), tuple(events))


def cast_lines(cast: Cast) -> Iterator[str]:
    """The lines of `cast` as a .cast file holds them. Output that is not valid UTF-8 (surrogateescape
    characters) stays as is: write them with errors="surrogateescape", as `read_cast` reads."""
    yield json.dumps(cast.header.raw, ensure_ascii=False) + "\n"
    for e in cast.events:
        yield json.dumps([e.t, e.kind, e.data], ensure_ascii=False) + "\n"


def read_cast(path: Path | str) -> Cast:
    path = Path(path)
    with path.open(encoding="utf-8", errors="surrogateescape") as fh:
        return parse_cast(iter(fh), str(path))


def looks_like_cast(head: bytes) -> bool:
    return head.lstrip().startswith(b"{") and b'"version"' in head[:400]


class CastWriter:
    """Append-only asciicast v2 writer; times are seconds since `start` on the caller's clock."""

    def __init__(self, fh: IO[str], width: int, height: int, start: float, **extra: Any) -> None:
        self._fh = fh
        self._start = start
        fh.write(json.dumps({"version": 2, "width": width, "height": height, **extra}) + "\n")

    def write(self, now: float, kind: str, data: str) -> None:
        self._fh.write(json.dumps([round(now - self._start, 6), kind, data], ensure_ascii=False) + "\n")
        self._fh.flush()

    def output(self, now: float, data: bytes) -> None:
        self.write(now, "o", data.decode("utf-8", "replace"))

    def close(self) -> None:
        self._fh.close()
