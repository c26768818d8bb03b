"""The waits database: `state_dir()/waits.sqlite3` (stdlib sqlite3), what `panewatch stats` reads.

One writer: the daemon (board/daemon.py). It sees every pane — its own headless panes and every
`panewatch run` pane registered through board/link.py — as cards whose state changes carry the
change's time, so one subscriber there (`WaitRecorder`) turns them into waits (core/waits.py) and
writes them, from a thread of its own (the loop never waits on the file). Why not each `run` process
for its own pane: several writers would each migrate the schema and contend for the lock
(SQLITE_BUSY in a terminal's process is an error to show someone), and the board's figures would
need them all anyway. A `run` pane with no daemon reachable (PANEWATCH_BOARD=off) is not counted;
one that registers late is counted from its current state on. Two daemons sharing a state dir:
the one holding `waits.lock` records (`StoreLock`), the other says so.

Readers (`panewatch stats`) open the file read-only (WAL mode: they never block the writer) and need
no daemon. The schema is versioned with `PRAGMA user_version`: MIGRATIONS[i] takes version i to i+1,
each in one transaction; a file from a newer panewatch is refused, never rewritten.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
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
READ_TIMEOUT = 2.0  # seconds a reader waits for a lock another process holds


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
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=READ_TIMEOUT)
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


RETRY_SECONDS = 5.0  # a store that failed is tried again this often (the waits meanwhile kept in memory)
MAX_PENDING = 10_000  # waits kept while the store fails; beyond, the oldest are dropped (and counted)
LOCKNAME = "waits.lock"  # in the state dir: the one daemon that records holds its flock


@dataclass(frozen=True)
class Recording:
    """Whether the waits are being written; if not, since when and why. `pending`: closed waits kept in
    memory, written once the store works again; `dropped`: waits that will never be written."""

    on: bool
    since: float | None = None
    why: str | None = None
    pending: int = 0
    dropped: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"on": self.on, "since": self.since, "why": self.why, "pending": self.pending, "dropped": self.dropped}


class StoreLock:
    """One recording daemon per state dir: two daemons sharing it (different runtime dirs, the same
    tmux servers on both boards) would count every wait twice. An flock on `waits.lock`, held while
    recording; a lock file removed or replaced (the state dir wiped) is taken again."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or paths.state_dir() / LOCKNAME
        self._fd: int | None = None

    def acquire(self) -> str | None:
        """None: held by us (now, or already); else who holds it, as a sentence."""
        if self._fd is not None:
            try:
                same = os.path.samestat(os.fstat(self._fd), os.stat(self.path))
            except OSError:
                same = False
            if same:
                return None
            self.release()
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip()
            os.close(fd)
            pid = f" (pid {holder})" if holder.isdigit() else ""
            return f"another panewatch daemon{pid} records the waits of {self.path.parent}"
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


class WaitRecorder:
    """THE subscriber: every pane's state changes in (from its cards), its closed waits written.

    Called on the daemon's loop, it only queues: a writer thread does the file work (another process
    holding the database's lock once stopped the loop for busy_timeout, 2 s). A store that fails
    (locked, the disk full, the file read-only or deleted, a newer schema) turns recording off,
    logged once with the reason; the waits are kept in memory (MAX_PENDING) and the store is opened
    again every `retry` seconds: recording comes back by itself and loses nothing. A database file
    removed or replaced under the open connection (whose writes would go nowhere) is noticed before
    each write, and the file at the path is opened. Only the daemon holding the state dir's lock
    (StoreLock) records; another one says so and drops its waits (the holder counts the same panes).
    `recording()` says which: the `stats` op, the board's header and `panewatch stats` show it."""

    def __init__(self, store: Callable[[], WaitStore] = WaitStore, *, lock: StoreLock | None = None,
                 path: Path | None = None, retry: float = RETRY_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self.tracker = WaitTracker()
        self._open_store = store
        self._lock = lock
        self._path = path
        self._retry = retry
        self._clock = clock
        self._store: WaitStore | None = None
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file the store has open
        self._cv = threading.Condition()
        self._pending: deque[Wait] = deque()
        self._next_try = 0.0  # monotonic time of the next attempt after a failure
        self._state = Recording(True)
        self._written = 0
        self._dropped = 0
        self._closing = False
        self._thread: threading.Thread | None = None

    # -- on the caller's thread (the daemon's loop): never blocks on the file -------------------------

    def change(self, pane: str, t: float, new: str, *, old: str | None = None, pane_id: str = "", name: str = "",
               agent: str | None = None) -> None:
        self._queue(self.tracker.change(pane, t, new, old=old, pane_id=pane_id, name=name, agent=agent))

    def gone(self, pane: str, t: float) -> None:
        self._queue(self.tracker.gone(pane, t))

    def start(self) -> None:
        """Take the state dir's lock and open the store now, in the writer thread: whether recording
        works is known (and shown) before the first wait closes."""
        with self._cv:
            self._start_thread()

    def _queue(self, waits: list[Wait]) -> None:
        if not waits:
            return
        with self._cv:
            if self._closing:
                return
            self._pending.extend(waits)
            while len(self._pending) > MAX_PENDING:
                self._pending.popleft()
                self._dropped += 1
            self._start_thread()
            self._cv.notify_all()

    def _start_thread(self) -> None:
        if self._thread is None and not self._closing:
            self._thread = threading.Thread(target=self._run, name="panewatch-waits", daemon=True)
            self._thread.start()

    @property
    def written(self) -> int:
        return self._written

    @property
    def failed(self) -> str | None:
        """Why recording is off (None: it is on)."""
        return self._state.why

    def recording(self) -> Recording:
        with self._cv:
            return Recording(self._state.on, self._state.since, self._state.why, len(self._pending), self._dropped)

    def waits(self, since: float, until: float = float("inf")) -> list[Wait]:
        """The waits recorded in [since, until), read from the file (call it off the loop), with those
        kept in memory while recording is off."""
        try:
            stored = read_waits(since, until, self._path)
        except StoreError as exc:
            log.warning("waits not read: %s", exc)
            stored = []
        with self._cv:
            kept = [w for w in self._pending if since <= w.start < until] if not self._state.on else []
        return sorted(stored + kept, key=lambda w: w.start)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every closed wait was written (or dropped); False if `timeout` passed first."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0 or (not self._state.on and self._next_try - time.monotonic() > left):
                    return False
                self._cv.wait(left)
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Write what is pending (one last try, at most `timeout` seconds), then close the file."""
        with self._cv:
            self._closing = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        else:
            self._close_files()

    # -- the writer thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        self._write([])  # the lock and the store, at once
        while True:
            with self._cv:
                # Wait for waits to write, or (recording off) for the next try: a lock another daemon
                # let go, a file writable again, is noticed without a wait to write.
                while not self._closing and not ((self._pending or not self._state.on)
                                                 and time.monotonic() >= self._next_try):
                    due = self._pending or not self._state.on
                    self._cv.wait(max(0.0, self._next_try - time.monotonic()) if due else None)
                if self._closing and not self._pending:
                    break
                batch = list(self._pending)
                last = self._closing
            outcome = self._write(batch)
            with self._cv:
                if outcome != "failed":
                    for _ in batch:
                        self._pending.popleft()
                    if outcome == "written":
                        self._written += len(batch)
                    else:
                        self._dropped += len(batch)
                self._cv.notify_all()
            if last:
                break
        self._close_files()

    def _write(self, batch: list[Wait]) -> str:
        """"written", "dropped" (another daemon records them) or "failed" (kept, tried again later)."""
        try:
            if self._lock is None:
                self._lock = StoreLock()
            holder = self._lock.acquire()
            if holder is not None:
                self._off(holder)
                return "dropped"
            store = self._current_store()
            if batch:
                store.add(batch)
        except (OSError, sqlite3.Error, StoreError) as exc:
            self._off(str(exc) or type(exc).__name__)
            self._close_store()
            return "failed"
        if not self._state.on:
            log.warning("waits recorded again (off since %s: %s)", datetime.fromtimestamp(self._state.since or 0)
                        .strftime("%H:%M:%S"), self._state.why)
            with self._cv:
                self._state = Recording(True)
        return "written"

    def _current_store(self) -> WaitStore:
        """The open store, if its file is still the one at its path; else the file at the path, opened."""
        if self._store is not None:
            try:
                st = os.stat(self._store.path)
                same = (st.st_dev, st.st_ino) == self._identity
            except FileNotFoundError:
                same = False
            if not same:
                log.warning("the waits database %s was removed or replaced: opening the one there now",
                            self._store.path)
                self._close_store()
        if self._store is None:
            store = self._open_store()
            try:
                st = os.stat(store.path)
            except OSError:
                store.close()
                raise
            self._store, self._identity = store, (st.st_dev, st.st_ino)
        return self._store

    def _off(self, why: str) -> None:
        with self._cv:
            self._next_try = time.monotonic() + self._retry
            if self._state.on or self._state.why != why:
                if self._state.on:
                    log.warning("waits not recorded (kept in memory, tried again every %g s): %s", self._retry, why)
                self._state = Recording(False, self._state.since if not self._state.on else self._clock(), why)

    def _close_store(self) -> None:
        if self._store is not None:
            with contextlib.suppress(sqlite3.Error):
                self._store.close()
            self._store = self._identity = None

    def _close_files(self) -> None:
        self._close_store()
        if self._lock is not None:
            self._lock.release()
