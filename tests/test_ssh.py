"""runtime/ssh.py against a real sshd: the command line, one shared connection per host, and each way a host
fails turned into an error that names it."""

from __future__ import annotations

import asyncio
import hashlib
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from panewatch.errors import HostKeyError, HostUnreachableError, KeyRefusedError
from panewatch.runtime.ssh import (
    SshOptions,
    classify,
    close_master,
    control_dir,
    run_remote,
    ssh_argv,
    ssh_options,
    user_config,
)


def opts(sshd: Any) -> SshOptions:
    return SshOptions(config_file=str(sshd.ssh_config))


def test_the_command_line_is_batch_mode_with_keepalives_and_a_shared_connection() -> None:
    argv = ssh_argv("box", ["tmux", "-C", "attach-session", "-t", "$0"])
    assert argv[:2] == ["ssh", "-T"]
    joined = " ".join(argv)
    for option in ("BatchMode=yes", "ConnectTimeout=5", "ServerAliveInterval=3", "ServerAliveCountMax=3",
                   "ControlMaster=auto", "ControlPersist=30"):
        assert option in joined
    assert f"ControlPath={control_dir()}/{hashlib.sha256(b'box').hexdigest()[:12]}-%C" in joined
    assert argv[-3:] == ["--", "box", "tmux -C attach-session -t '$0'"]  # $0 reaches tmux, not the remote shell
    assert SshOptions().dead_after <= 15


def test_the_control_dir_is_private_and_short_enough_for_a_socket() -> None:
    path = control_dir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert len(str(path)) + 1 + 12 + 1 + 40 + 17 < 104


def test_home_config_is_used_when_home_is_not_the_passwd_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text("Host x\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert user_config() == str(tmp_path / ".ssh" / "config")
    assert ["-F", str(tmp_path / ".ssh" / "config")] == ssh_argv("x", ["true"])[-5:-3]


def test_a_command_runs_and_sessions_share_one_connection(sshd: Any) -> None:
    async def go() -> None:
        assert await run_remote(sshd.alias, ["echo", "it's $HOME"], opts(sshd)) == ["it's $HOME"]
        sleepers = [await asyncio.create_subprocess_exec(*ssh_argv(sshd.alias, ["sleep", "30"], opts(sshd)),
                                                         stdin=subprocess.DEVNULL) for _ in range(3)]
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and len(sshd.sessions()) < 1:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            assert len(sshd.sessions()) == 1  # three sessions, one TCP connection (ssh's ControlMaster)
        finally:
            for proc in sleepers:
                proc.kill()
                await proc.wait()

    asyncio.run(go())
    check = [*ssh_options(opts(sshd), sshd.alias), "-O", "check", "--", sshd.alias]
    assert subprocess.run(check, capture_output=True).returncode == 0  # the master persists ...
    close_master(sshd.alias, opts(sshd))
    assert subprocess.run(check, capture_output=True).returncode == 255  # ... until we close it


@pytest.mark.parametrize(("suffix", "kind", "words"), [
    ("badkey", KeyRefusedError, "refused every key"),
    ("badhost", HostKeyError, "host key does not match"),
    ("down", HostUnreachableError, "refused the connection"),
])
def test_each_failure_is_an_error_naming_the_host(sshd: Any, suffix: str, kind: type[Exception], words: str) -> None:
    host = f"{sshd.alias}-{suffix}"
    with pytest.raises(kind) as caught:
        asyncio.run(run_remote(host, ["true"], opts(sshd)))
    assert str(caught.value).startswith(f"{host}: ")
    assert words in str(caught.value)


def test_unknown_ssh_words_still_name_the_host() -> None:
    error = classify("h", 255, "something new\n")
    assert isinstance(error, HostUnreachableError) and "something new" in str(error)
    assert "exit status 127" in str(classify("h", 127, "sh: tmux: not found"))
