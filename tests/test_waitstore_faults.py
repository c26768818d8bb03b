"""The waits database when things go wrong (issue 23, item 8): another process holding its lock, the
file deleted or replaced, a full disk, a read-only file, a second daemon sharing the state dir. The
recorder's caller (the daemon's loop) never touches the file; recording goes off with a reason and a
time, keeps the waits, and comes back by itself; one daemon records."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from boardutil import lock_the_database
from panewatch.runtime.waitstore import WaitRecorder, WaitStore, read_waits, store_path

RETRY = 0.05


def poll(condition: Callable[[], object], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def one_wait(recorder: WaitRecorder, key: str, start: float) -> None:
    """A blocked wait of pane `key` from `start`, answered 2 s later (both calls on this thread)."""
    recorder.change(key, start, "blocked", pane_id=key, name=f"pane {key}", agent="claude")
    recorder.change(key, start + 2.0, "working")


def starts() -> list[float]:
    return [w.start for w in read_waits(0)]


class Watched(WaitStore):
    """A real WaitStore that notes the thread of each write."""

    threads: ClassVar[list[str]] = []

    def add(self, waits):  # type: ignore[no-untyped-def]
        Watched.threads.append(threading.current_thread().name)
        super().add(waits)


def test_a_lock_held_by_another_process_neither_stops_the_caller_nor_loses_the_wait(tmp_path: Path) -> None:
    """Before: the write ran on the daemon's loop, waited busy_timeout (2 s) for the lock, failed,
    and recording stopped for the daemon's life."""
    WaitStore().close()
    holder = lock_the_database()
    assert holder.stdin is not None
    try:
        Watched.threads = []
        recorder = WaitRecorder(Watched, retry=RETRY, clock=lambda: 1000.0)
        one_wait(recorder, "a", 10.0)  # returns at once: the file is the writer thread's business
        poll(lambda: not recorder.recording().on, "recording off while the lock is held")
        status = recorder.recording()
        assert status.since == 1000.0 and "locked" in (status.why or "") and status.pending == 1
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(10) == 0
        poll(lambda: recorder.recording().on, "recording back on once the lock is let go")
        assert recorder.flush() and starts() == [10.0] and recorder.recording().pending == 0
        assert Watched.threads and threading.current_thread().name not in Watched.threads
        assert set(Watched.threads) == {"panewatch-waits"}
        recorder.close()
    finally:
        holder.kill()
        holder.communicate()


def test_a_deleted_or_replaced_file_is_noticed_and_the_next_waits_reach_the_file_there(tmp_path: Path) -> None:
    """Before: the open connection went on writing into the deleted file (gone with its last
    descriptor) or the replaced one: nothing new reached the file at the path, ever."""
    recorder = WaitRecorder(retry=RETRY)
    one_wait(recorder, "a", 10.0)
    assert recorder.flush() and starts() == [10.0]
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store_path()}{suffix}").unlink(missing_ok=True)
    one_wait(recorder, "b", 20.0)
    assert recorder.flush() and starts() == [20.0]  # a new file, made at the path

    other = tmp_path / "restored.sqlite3"  # the user restores a backup over it
    store = WaitStore(other)
    store.close()
    os.replace(other, store_path())
    for suffix in ("-wal", "-shm"):
        Path(f"{store_path()}{suffix}").unlink(missing_ok=True)
    one_wait(recorder, "c", 30.0)
    assert recorder.flush() and starts() == [30.0]
    assert recorder.recording().on
    recorder.close()


def test_a_full_disk_keeps_the_waits_and_writes_them_when_there_is_room(tmp_path: Path) -> None:
    """SQLITE_FULL, SQLite's own "database or disk is full": the page budget of the connection is
    what is left on the disk. Before: recording stopped for good at the first full write."""
    WaitStore().close()
    full = True

    def store() -> WaitStore:
        opened = WaitStore()
        if full:
            pages = opened._conn.execute("PRAGMA page_count").fetchone()[0]
            opened._conn.execute(f"PRAGMA max_page_count = {pages}")
        return opened

    recorder = WaitRecorder(store, retry=RETRY, clock=lambda: 2000.0)
    for i in range(300):  # more than the last page holds
        one_wait(recorder, f"p{i}" + "x" * 200, 100.0 + i)
    poll(lambda: not recorder.recording().on, "recording off on the full disk")
    status = recorder.recording()
    assert status.why == "database or disk is full" and status.since == 2000.0 and status.pending == 300
    assert starts() == []  # all or nothing: one transaction per batch
    full = False
    poll(lambda: recorder.recording().on, "recording back once there is room")
    assert recorder.flush() and len(starts()) == 300
    recorder.close()


def make_read_only(path: Path) -> Callable[[], None]:
    """The file read-only for this user, even root (immutable); the undo."""
    if os.geteuid() != 0:
        path.chmod(0o400)
        return lambda: path.chmod(0o600)
    chattr = shutil.which("chattr")
    assert chattr is not None, "root needs chattr (e2fsprogs) to make a file read-only for itself"
    subprocess.run([chattr, "+i", str(path)], check=True)
    return lambda: subprocess.run([chattr, "-i", str(path)], check=True)


def test_a_read_only_file_turns_recording_off_and_back_on(tmp_path: Path) -> None:
    before = WaitRecorder()
    one_wait(before, "a", 10.0)
    assert before.flush()
    before.close()
    undo = make_read_only(store_path())  # then a daemon starts
    recorder = WaitRecorder(retry=RETRY, clock=lambda: 3000.0)
    try:
        one_wait(recorder, "b", 20.0)
        poll(lambda: not recorder.recording().on, "recording off on a read-only file")
        status = recorder.recording()
        assert status.since == 3000.0 and status.pending == 1 and status.why
        assert [w.start for w in recorder.waits(0)] == [10.0, 20.0]  # the kept one counted on the board
    finally:
        undo()
    poll(lambda: recorder.recording().on, "recording back once the file is writable")
    assert recorder.flush() and starts() == [10.0, 20.0]
    recorder.close()


CHILD = """
import sys
from panewatch.runtime.waitstore import WaitRecorder
recorder = WaitRecorder()
recorder.change("t", 10.0, "blocked", pane_id="%1", name="tmux pane", agent="claude")
recorder.change("t", 12.0, "working")
getattr(recorder, "flush", lambda: None)()
print("recorded", flush=True)
sys.stdin.readline()
recorder.close()
"""


def test_two_daemons_sharing_a_state_dir_record_each_wait_once(tmp_path: Path) -> None:
    """Both boards show the same tmux pane; before, both daemons wrote its wait: counted twice."""
    first = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert first.stdout is not None and first.stdin is not None
    try:
        assert first.stdout.readline().strip() == "recorded"
        second = WaitRecorder(retry=RETRY, clock=lambda: 4000.0)
        second.start()
        # The same pane's wait, seen by the second daemon too.
        second.change("t2", 10.0, "blocked", pane_id="%1", name="tmux pane", agent="claude")
        second.change("t2", 12.0, "working")
        poll(lambda: second.recording().dropped == 1, "the second daemon's wait dropped")
        status = second.recording()
        assert not status.on and status.why == (f"another panewatch daemon (pid {first.pid}) records the waits of "
                                                f"{store_path().parent}")
        assert starts() == [10.0]
        first.stdin.write("\n")
        first.stdin.flush()
        assert first.wait(10) == 0
        poll(lambda: second.recording().on, "the second daemon records once the first is gone")
        one_wait(second, "u", 50.0)
        assert second.flush() and starts() == [10.0, 50.0]
        second.close()
    finally:
        first.kill()
        first.communicate()


def test_the_caller_never_waits_for_the_file_even_when_every_write_hangs(tmp_path: Path) -> None:
    """A store whose writes hang (a lock never let go, an NFS mount gone): the caller goes on."""
    release = threading.Event()

    class Hanging(WaitStore):
        def add(self, waits):  # type: ignore[no-untyped-def]
            release.wait(30)
            super().add(waits)

    recorder = WaitRecorder(Hanging, retry=RETRY)
    for i in range(50):
        one_wait(recorder, f"k{i}", float(i * 10))  # each returns at once, the writer busy meanwhile
    assert recorder.recording().pending >= 1
    release.set()
    assert recorder.flush() and len(starts()) == 50
    recorder.close()


def test_a_state_dir_the_daemon_cannot_create_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("PANEWATCH_STATE_DIR", str(blocker / "state"))
    recorder = WaitRecorder(retry=RETRY)
    recorder.start()
    poll(lambda: not recorder.recording().on, "recording off")
    assert "Not a directory" in (recorder.recording().why or "")
    recorder.close()
