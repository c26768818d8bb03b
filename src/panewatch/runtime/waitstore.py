"""The waits database: `state_dir()/waits.sqlite3` (stdlib sqlite3), what `panewatch stats` reads.

One writer: the daemon (board/daemon.py). It sees every pane — its own headless panes and every
`panewatch run` pane registered through board/link.py — as cards whose state changes carry the
change's time, so one subscriber there (`WaitRecorder`) turns them into waits (core/waits.py) and
writes them. Why not each `run` process for its own pane: several writers would each migrate the
schema and contend for the lock (SQLITE_BUSY in a terminal's process is an error to show someone),
and the board's figures would need them all anyway. A `run` pane with no daemon reachable
(PANEWATCH_BOARD=off) is not counted; one that registers late is counted from its current state on.

Readers (`panewatch stats`) open the file read-only (WAL mode: they never block the writer) and need
no daemon. The schema is versioned with `PRAGMA user_version`: MIGRATIONS[i] takes version i to i+1,
each in one transaction; a file from a newer panewatch is refused, never rewritten.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from panewatch.core.waits import Wait, WaitTracker
from panewatch.errors import PanewatchError
from panewatch.runtime import paths

log = logging.getLogger("panewatch.runtime.waitstore")

FILENAME = "waits.sqlite3"
MIGRATIONS: tuple[str, ...] = (
    # 1: the waits, one row each, times in unix seconds.
    """CREATE TABLE waits (
           id INTEGER PRIMARY KEY,
           kind TEXT NOT NULL CHECK (kind IN ('blocked', 'idle')),
           pane TEXT NOT NULL,          -- unique to one pane's life
           pane_id TEXT NOT NULL,       -- its id on the board (repeats across daemon restarts)
           name TEXT NOT NULL,
           agent TEXT,
           start REAL NOT NULL,
           "end" REAL NOT NULL,
           ended_by TEXT NOT NULL
       );
       CREATE INDEX waits_by_start ON waits (start);""",
)
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(PanewatchError):
    """The waits database cannot be used (a newer schema, a broken file)."""


def local_day(t: float) -> str:
    """The local date of unix time `t` (a wait is counted on the day it began)."""
    return datetime.fromtimestamp(t).strftime("%Y-%m-%d")


def store_path() -> Path:
    return paths.state_dir() / FILENAME


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema to SCHEMA_VERSION; the version it was at."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreError(f"the waits database has schema {version}, newer than this panewatch knows "
                         f"({SCHEMA_VERSION}): upgrade panewatch")
    for target in range(version + 1, SCHEMA_VERSION + 1):
        # One script per step, BEGIN to COMMIT: a step is applied whole or not at all.
        conn.executescript(f"BEGIN;\n{MIGRATIONS[target - 1]}\nPRAGMA user_version = {target};\nCOMMIT;")
    return version


def _row(wait: Wait) -> tuple[Any, ...]:
    return (wait.kind, wait.pane, wait.pane_id, wait.name, wait.agent, wait.start, wait.end, wait.ended_by)


class WaitStore:
    """The writer's connection: creates the file (0600 in a 0700 dir) and migrates it."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or store_path()
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path.touch(mode=0o600, exist_ok=True)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")  # WAL: durable at checkpoints, never corrupt
            self._conn.execute("PRAGMA busy_timeout = 2000")
            migrate(self._conn)
        except (sqlite3.Error, StoreError):
            self._conn.close()
            raise

    def add(self, waits: Iterable[Wait]) -> None:
        rows = [_row(w) for w in waits]
        if rows:
            with self._conn:  # one transaction for the batch: commit, or roll back on an error
                self._conn.execute("BEGIN")
                self._conn.executemany(
                    'INSERT INTO waits (kind, pane, pane_id, name, agent, start, "end", ended_by) '
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def waits(self, since: float, until: float = float("inf")) -> list[Wait]:
        return _select(self._conn, since, until)

    def close(self) -> None:
        self._conn.close()


def _select(conn: sqlite3.Connection, since: float, until: float) -> list[Wait]:
    rows = conn.execute('SELECT kind, pane, pane_id, name, agent, start, "end", ended_by FROM waits '
                        "WHERE start >= ? AND start < ? ORDER BY start", (since, min(until, 1e18))).fetchall()
    return [Wait(*row) for row in rows]


def read_waits(since: float, until: float = float("inf"), path: Path | None = None) -> list[Wait]:
    """The waits that began in [since, until), read-only; none if the daemon never wrote any."""
    path = path or store_path()
    if not path.is_file():
        return []
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from None
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version == 0:
            return []  # created, not migrated yet
        if version > SCHEMA_VERSION:
            raise StoreError(f"{path} has schema {version}, newer than this panewatch knows ({SCHEMA_VERSION})")
        return _select(conn, since, until)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {exc}") from None
    finally:
        conn.close()


class WaitRecorder:
    """THE subscriber: every pane's state changes in (from its cards), its closed waits written.

    A store that fails (disk full, a newer schema) is logged once and recording stops; the daemon
    and its panes go on."""

    def __init__(self, store: Callable[[], WaitStore] = WaitStore) -> None:
        self.tracker = WaitTracker()
        self._open_store = store
        self._store: WaitStore | None = None
        self.failed: str | None = None
        self.written = 0

    def change(self, pane: str, t: float, new: str, *, old: str | None = None, pane_id: str = "", name: str = "",
               agent: str | None = None) -> None:
        self._write(self.tracker.change(pane, t, new, old=old, pane_id=pane_id, name=name, agent=agent))

    def gone(self, pane: str, t: float) -> None:
        self._write(self.tracker.gone(pane, t))

    def waits(self, since: float, until: float = float("inf")) -> list[Wait]:
        store = self._ensure()
        if store is None:
            return []
        try:
            return store.waits(since, until)
        except sqlite3.Error as exc:
            self._fail(exc)
            return []

    def _ensure(self) -> WaitStore | None:
        if self._store is None and self.failed is None:
            try:
                self._store = self._open_store()
            except (OSError, sqlite3.Error, StoreError) as exc:
                self._fail(exc)
        return self._store

    def _write(self, waits: list[Wait]) -> None:
        if not waits:
            return
        store = self._ensure()
        if store is None:
            return
        try:
            store.add(waits)
            self.written += len(waits)
        except sqlite3.Error as exc:
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        self.failed = str(exc)
        log.warning("waits not recorded from now on: %s", exc)
        if self._store is not None:
            with contextlib.suppress(sqlite3.Error):
                self._store.close()
            self._store = None

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
