"""runtime/waitstore.py: the waits database survives restarts, migrates once, refuses a newer schema,
is read without a writer, and a failing store never stops the recorder's caller."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from panewatch.core.waits import Wait
from panewatch.runtime import waitstore
from panewatch.runtime.waitstore import SCHEMA_VERSION, StoreError, WaitRecorder, WaitStore, read_waits, store_path

W1 = Wait("blocked", "k1", "3", "agent", "claude", 1000.0, 1012.5, "working")
W2 = Wait("idle", "k1", "3", "agent", "claude", 1020.0, 1100.0, "working")


def version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def test_it_lives_in_the_state_dir_and_survives_a_restart(tmp_path: Path) -> None:
    assert store_path() == tmp_path / "state" / "waits.sqlite3"  # PANEWATCH_STATE_DIR (conftest)
    store = WaitStore()
    store.add([W1])
    store.close()
    assert (store_path().stat().st_mode & 0o777) == 0o600 and (store_path().parent.stat().st_mode & 0o777) == 0o700
    again = WaitStore()  # a new daemon: the schema is there, nothing is applied twice
    again.add([W2])
    assert again.waits(0) == [W1, W2] and again.waits(1015) == [W2] and again.waits(0, 1015) == [W1]
    assert read_waits(0) == [W1, W2]  # read-only, while the writer is open (WAL)
    again.close()
    assert version(store_path()) == SCHEMA_VERSION


def test_migrations_run_in_order_once_and_a_newer_schema_is_refused(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "w.sqlite3"
    WaitStore(path).close()
    assert version(path) == 1
    # A later panewatch adds a column: version 1 files are brought to 2, the rows kept.
    monkeypatch.setattr(waitstore, "MIGRATIONS", (*waitstore.MIGRATIONS, "ALTER TABLE waits ADD COLUMN note TEXT;"))
    monkeypatch.setattr(waitstore, "SCHEMA_VERSION", 2)
    store = WaitStore(path)
    store.add([W1])
    store.close()
    assert version(path) == 2 and read_waits(0, path=path) == [W1]
    with sqlite3.connect(path) as conn:
        assert "note" in [row[1] for row in conn.execute("PRAGMA table_info(waits)")]
    monkeypatch.undo()  # this panewatch is the older one now
    with pytest.raises(StoreError, match="schema 2, newer"):
        WaitStore(path)
    with pytest.raises(StoreError, match="newer"):
        read_waits(0, path=path)
    assert version(path) == 2  # refused, not rewritten


def test_a_failed_migration_step_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "w.sqlite3"
    WaitStore(path).close()
    monkeypatch.setattr(waitstore, "MIGRATIONS", (*waitstore.MIGRATIONS, "ALTER TABLE waits ADD COLUMN x TEXT; "
                                                                       "THIS IS NOT SQL;"))
    monkeypatch.setattr(waitstore, "SCHEMA_VERSION", 2)
    with pytest.raises(sqlite3.Error):
        WaitStore(path)
    assert version(path) == 1
    with sqlite3.connect(path) as conn:
        assert "x" not in [row[1] for row in conn.execute("PRAGMA table_info(waits)")]


def test_no_database_yet_reads_as_no_waits(tmp_path: Path) -> None:
    assert read_waits(0) == []


def test_a_recorder_whose_store_fails_keeps_its_waits_and_says_so(tmp_path: Path) -> None:
    def broken() -> WaitStore:
        raise sqlite3.OperationalError("disk I/O error")

    recorder = WaitRecorder(broken, retry=60.0, clock=lambda: 1234.0)
    recorder.change("k", 0.0, "blocked")
    recorder.change("k", 5.0, "working")  # closes a wait: the store cannot be opened
    assert not recorder.flush(timeout=5)
    status = recorder.recording()
    assert status == waitstore.Recording(False, 1234.0, "disk I/O error", pending=1) and recorder.written == 0
    assert [w.start for w in recorder.waits(0)] == [0.0]  # kept in memory: the board's figures still count it
    recorder.close(timeout=5)


def test_a_recorder_writes_what_its_tracker_closes(tmp_path: Path) -> None:
    recorder = WaitRecorder()
    for t, state in [(0.0, "idle"), (1.0, "working"), (3.0, "blocked"), (9.0, "working"), (10.0, "idle")]:
        recorder.change("k", t, state, pane_id="1", name="fake", agent="claude")
    recorder.gone("k", 20.0)
    assert recorder.flush()
    assert [(w.kind, w.start, w.end, w.ended_by) for w in recorder.waits(0)] == [
        ("blocked", 3.0, 9.0, "working"), ("idle", 10.0, 20.0, "gone")]
    assert recorder.recording().on and recorder.written == 2
    recorder.close()
