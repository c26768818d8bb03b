"""The daemon's log: bounded in rate, in size and in what it shows, whatever reaches it.

A flood of idle connections once made asyncio's accept retry write 1.55 million tracebacks
(694 MB) in 4.5 minutes, and aiohttp logs a malformed request with its request line, token and
all. Every record goes through one `BoundedHandler`:

* rate: the same message (logger, level, template) at most `burst` times per `interval`, then a
  single "suppressed K similar messages" line once the interval is over (or at exit);
* content: the whole text, traceback included, passes `security.redact()`; aiohttp's parse errors
  are written without the request's bytes (a token cut by a TCP segment has no shape to redact);
  one record is cut at `MAX_RECORD` characters;
* size: a daemon with a log file (`serve --log-file`, as `panewatch board` starts it) writes
  through a rotating handler (0600, one old file kept). Its fd 2 is pointed at /dev/null and
  `sys.stderr` (uncaught exceptions, warnings, prints) goes into the log instead, so nothing can
  append to a file that never rotates (or, rotated away, keep growing unseen).
"""

from __future__ import annotations

import io
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType

from aiohttp.http_exceptions import HttpProcessingError

from panewatch.board.limits import Limits
from panewatch.board.security import redact

FORMAT = "%(asctime)s panewatch serve: %(message)s"
MAX_RECORD = 8192  # characters of one record, its traceback included
MAX_KEYS = 256  # distinct messages tracked at once; beyond, they share one allowance
_OTHER = ("", logging.WARNING, "(other messages)")
_PLACEHOLDER = re.compile(r"%(?:\([^)]*\))?[-#0 +]*[\d*]*(?:\.[\d*]+)?[a-zA-Z%]")

_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]


class _Formatter(logging.Formatter):
    def formatException(self, ei: _ExcInfo) -> str:
        if isinstance(ei[1], HttpProcessingError):  # its message quotes the request's bytes
            return f"{type(ei[1]).__name__}: {ei[1].code} (a malformed request; its bytes are not logged)"
        return super().formatException(ei)

    def format(self, record: logging.LogRecord) -> str:
        text = redact(super().format(record))
        if len(text) > MAX_RECORD:
            text = f"{text[:MAX_RECORD]}… ({len(text) - MAX_RECORD} more characters)"
        return text


@dataclass
class _Window:
    start: float
    count: int = 0
    suppressed: int = 0


class BoundedHandler(logging.Handler):
    """Rate-limits, redacts and cuts records, then hands the finished text to `target` to write."""

    def __init__(self, target: logging.Handler, *, burst: int, interval: float, fmt: str = FORMAT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.target = target
        self.target.setFormatter(logging.Formatter("%(message)s"))
        self.setFormatter(_Formatter(fmt))
        self.burst, self.interval, self._clock = burst, interval, clock
        self._windows: dict[tuple[str, int, str], _Window] = {}
        self._next_sweep = float("inf")
        self._local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._local, "inside", False):
            return  # a failed write reporting itself through stderr, back here: drop it, never loop
        self._local.inside = True
        try:
            now = self._clock()
            if now >= self._next_sweep:
                self._sweep(now)
            key = (record.name, record.levelno, _template(record))
            window = self._windows.get(key)
            if window is None:
                if len(self._windows) >= MAX_KEYS:
                    key = _OTHER
                window = self._windows.setdefault(key, _Window(now))
                self._next_sweep = min(self._next_sweep, now + self.interval)
            window.count += 1
            if window.count > self.burst:
                window.suppressed += 1
            else:
                self._write(record)
        except Exception:
            self.handleError(record)
        finally:
            self._local.inside = False

    def _sweep(self, now: float) -> None:
        """End the windows that are over, with one line for each that suppressed something."""
        for key, window in list(self._windows.items()):
            if now - window.start < self.interval:
                continue
            del self._windows[key]
            if window.suppressed:
                name, level, template = key
                self._write(logging.makeLogRecord({
                    "name": name, "levelno": level, "levelname": logging.getLevelName(level),
                    "msg": "suppressed %d similar messages (at most %d per %.0f s): %s",
                    "args": (window.suppressed, self.burst, self.interval, template)}))
        starts = [w.start for w in self._windows.values()]
        self._next_sweep = min(starts) + self.interval if starts else float("inf")

    def _write(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        self.target.handle(logging.makeLogRecord({"name": record.name, "levelno": record.levelno,
                                                  "levelname": record.levelname, "msg": text}))

    def flush(self) -> None:
        self.target.flush()

    def close(self) -> None:
        self.acquire()
        try:
            self._sweep(float("inf"))  # what was suppressed gets its line before the end
            self.target.close()
        finally:
            self.release()
        super().close()


def _template(record: logging.LogRecord) -> str:
    """What makes two records "the same message": their template, or their text if the template says nothing."""
    template = str(record.msg)
    if not _PLACEHOLDER.sub("", template).strip():  # "%s": a different message each time
        template = record.getMessage()
    return template[:200]


class PrivateRotatingFile(RotatingFileHandler):
    """A RotatingFileHandler whose files are created 0600, like everything in the runtime dir."""

    def _open(self) -> TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)


class _StderrToLog(io.TextIOBase):
    """`sys.stderr` for a daemon that logs to a file: each line written becomes a record."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._partial = ""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        *lines, self._partial = (self._partial + s).split("\n")
        if len(self._partial) > MAX_RECORD:
            lines.append(self._partial)
            self._partial = ""
        for line in lines:
            if line.strip():
                self._logger.warning(line)  # no args: the line is its own template, so repeats are counted
        return len(s)

    def flush(self) -> None:
        if self._partial:
            self.write("\n")


def setup(*, path: Path | None, level: int, limits: Limits) -> BoundedHandler:
    """Send every record of this process through one BoundedHandler: to `path` (rotating), else to stderr."""
    target: logging.Handler
    if path is not None:
        target = PrivateRotatingFile(path, maxBytes=limits.log_bytes, backupCount=1, encoding="utf-8")
    else:
        target = logging.StreamHandler(sys.stderr)
    handler = BoundedHandler(target, burst=limits.log_burst, interval=limits.log_interval)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)
    if path is not None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)  # the bootstrap's board.log fd (client.spawn_daemon) is let go here
        os.close(devnull)
        sys.stderr = _StderrToLog(logging.getLogger("panewatch.stderr"))
    return handler
