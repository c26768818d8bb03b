"""testing/sshd.py: a real sshd on loopback, and the aliases that fail the ways real hosts fail."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest

pytestmark = pytest.mark.needs("ssh", "tmux")  # tests/components.py: fail without them unless PANEWATCH_SKIP


def test_alias_reaches_the_server_and_its_private_tmux(sshd: Any) -> None:
    done = sshd.ssh("echo", "$TMUX_TMPDIR")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(sshd.remote_tmux)


def test_the_failing_aliases_fail_as_real_hosts_do(sshd: Any) -> None:
    assert "Permission denied" in sshd.ssh("true", alias=f"{sshd.alias}-badkey").stderr
    assert "IDENTIFICATION HAS CHANGED" in sshd.ssh("true", alias=f"{sshd.alias}-badhost").stderr
    assert "Connection refused" in sshd.ssh("true", alias=f"{sshd.alias}-down").stderr


def test_stop_drops_the_link_and_start_listens_again(sshd: Any) -> None:
    sshd.stop()
    assert sshd.ssh("true").returncode == 255
    sshd.start()
    assert sshd.ssh("true").returncode == 0


def test_kill_sessions_ends_a_live_link_only(sshd: Any) -> None:
    proc = subprocess.Popen(sshd.ssh_argv("sleep", "60"), stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sshd.sessions() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sshd.kill_sessions() >= 1
        assert proc.wait(10) == 255
    finally:
        proc.kill()
        proc.wait()
    assert sshd.ssh("true").returncode == 0
