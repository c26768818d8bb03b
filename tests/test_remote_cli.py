"""`panewatch tmux --host` as a user runs it: the user's own ssh config (via $HOME), JSON lines naming panes
HOST:%ID, link lines when the host goes and comes back; a host that refuses the key is an error naming it;
and the remote benchmark runs (numbers are printed, never asserted)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from panewatch.testing.sshd import Sshd
from tmuxutil import SHOW_DIALOG

pytestmark = pytest.mark.needs("ssh", "tmux")  # tests/components.py: fail without them unless PANEWATCH_SKIP


def user_env(sshd: Sshd, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(sshd.ssh_config, home / ".ssh" / "config")
    return {**os.environ, "HOME": str(home)}


def wait(pred: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_json_lines_name_the_host_and_the_link(sshd: Sshd, tmp_path: Path) -> None:
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", SHOW_DIALOG)
    proc = subprocess.Popen([sys.executable, "-m", "panewatch", "tmux", "--host", "devbox", "--json"],
                            env=user_env(sshd, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait(lambda: any(e.get("pane") == "devbox:%0" and e["state"] == "blocked" for e in lines), "blocked")
        first = next(e for e in lines if e.get("pane") == "devbox:%0")
        assert (first["host"], first["tmux_pane"], first["target"]) == ("devbox", "%0", "devbox:work:0.0")
        sshd.stop()
        wait(lambda: any(e.get("pane") == "devbox:%0" and e["state"] == "unreachable" for e in lines), "unreachable")
        sshd.start()
        wait(lambda: any(e.get("link") == "up" for e in lines), "the link back", 30)
        wait(lambda: lines[-1].get("pane") == "devbox:%0" and lines[-1]["state"] == "blocked", "resynced", 10)
        up = next(e for e in lines if e.get("link") == "up")
        assert up["host"] == "devbox" and up["away"] > 0
        assert lines[-1]["away"] is not None  # the first change after the link came back says how long it was away
    finally:
        proc.terminate()
        proc.wait(20)
        reader.join(10)
        assert proc.stdout is not None
        proc.stdout.close()


def test_a_refused_key_is_an_error_naming_the_host(sshd: Sshd, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "panewatch", "tmux", "--host", "devbox-badkey"],
                          env=user_env(sshd, tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "devbox-badkey: it refused every key ssh offered" in done.stderr


def test_the_remote_benchmark_prints_its_table() -> None:
    from panewatch.lab.bench import remote as bench_remote

    rows = bench_remote.run_remote(hosts=1, panes=2, seconds=6)
    assert [r.phase.name.split(",")[0] for r in rows] == ["remote", "local"]
    assert "| 1 x 2 | remote, through ssh" in bench_remote.report(rows)
