"""macOS as a first-class home (issue 26, item 4), tested on Linux with the macOS branch forced
(runtime/system.py `SYSTEM = "darwin"`): the 104-byte unix socket limit, process and tty description without
/proc (psutil only), no kernel word on a hook's pid (its claim is taken), the desktop notification through
osascript, the runtime dir and its longest socket name, and going to an iTerm2 session or a Terminal.app tab
by AppleScript. What only a Mac can show is listed in runtime/system.py and the README."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest

from panewatch.core.combine import Report
from panewatch.errors import CannotGoThere, SocketPathTooLong
from panewatch.runtime import goto, paths, process, system
from panewatch.runtime.agentproc import Terminal, find_agent
from panewatch.runtime.hooks import AgentReport, ReportServer, UserSecret
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.notify import Notifier
from panewatch.runtime.paneclient import AGENTS_SOCKET, read_secret, tmux_socket_name
from panewatch.runtime.pty import PtySession
from panewatch.runtime.settings import NotifySettings

STANDIN = Path(__file__).parent / "standin"


@pytest.fixture
def mac(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(system, "SYSTEM", "darwin")


def long_path(tmp_path: Path, size: int) -> Path:
    """A socket path of exactly `size` bytes under `tmp_path`."""
    base = str(tmp_path) + "/"
    return Path(base + "s" * (size - len(base) - 5) + ".sock")


def test_a_socket_path_over_104_bytes_is_refused_clearly_on_macos(tmp_path: Path, mac: None) -> None:
    path = long_path(tmp_path, 105)  # fine on Linux (108), over macOS's 104 with its NUL
    with pytest.raises(SocketPathTooLong) as refused:
        system.check_socket_path(str(path))
    assert "103-byte limit" in str(refused.value) and refused.value.wire_name == "socket_path_too_long"
    server = ReportServer(lambda _p, _r: None, path=path)
    with pytest.raises(SocketPathTooLong):
        asyncio.run(server.start())
    assert not path.exists()  # refused before anything was bound


def test_the_same_path_binds_on_linux(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(system, "SYSTEM", "linux")
    path = long_path(tmp_path, 105)

    async def main() -> None:
        server = ReportServer(lambda _p, _r: None, path=path)
        await server.start()
        assert path.exists()
        await server.close()

    asyncio.run(main())


def test_the_runtime_dir_keeps_every_socket_under_the_macos_limit(monkeypatch: pytest.MonkeyPatch, mac: None) -> None:
    """Without XDG_RUNTIME_DIR (macOS has none) the runtime dir is /tmp/panewatch-UID: the longest socket name in it
    fits macOS's sun_path (the per-user $TMPDIR, /var/folders/…/T/, would leave too little)."""
    monkeypatch.delenv("PANEWATCH_RUNTIME_DIR")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(paths, "TMP", Path("/tmp"))
    directory = paths.runtime_dir()
    assert directory == Path(f"/tmp/panewatch-{os.getuid()}")
    longest = max((tmux_socket_name("/private/tmp/tmux-501/default"), AGENTS_SOCKET, "board.sock",
                   f"reports-{2**31}-abcdef.sock"), key=len)
    assert system.check_socket_path(str(directory / longest))


def test_a_process_group_is_described_without_proc_on_macos(monkeypatch: pytest.MonkeyPatch) -> None:
    """psutil alone names the pane's agent and its tty when /proc is not there (never read with the branch forced)."""
    agent = PtySession([sys.executable, str(STANDIN / "claude-code" / "cli.js"), "sh", "true"])
    try:
        pgid = agent.pid  # the pane's first process leads its own group (and session)
        deadline = time.monotonic() + 10
        while "cli.js" not in " ".join(process.psutil.Process(pgid).cmdline()):  # exec'd
            assert time.monotonic() < deadline
            time.sleep(0.01)
        manifests = ManifestWatcher().current()
        on_linux = process.describe_group(pgid, agent.pid, manifests)
        assert process.leader_fingerprint(pgid) is not None

        def no_proc(path: str) -> bytes:
            raise AssertionError(f"read {path} on macOS")

        monkeypatch.setattr(system, "SYSTEM", "darwin")
        monkeypatch.setattr(process, "_read_proc", no_proc)
        listdir = os.listdir

        def our_listdir(path: str | bytes) -> list[str] | list[bytes]:  # psutil's own reads stay (its Linux side)
            if isinstance(path, str) and path.endswith("/task"):
                no_proc(path)
            return listdir(path)  # type: ignore[return-value]

        monkeypatch.setattr(process.os, "listdir", our_listdir)
        assert process.leader_fingerprint(pgid) is None  # "describe in full" (psutil)
        on_mac = process.describe_group(pgid, agent.pid, manifests)
        assert on_mac.agent_id == on_linux.agent_id == "claude" and on_mac.pgid == on_linux.pgid
        found = find_agent(agent.pid, manifests)
        assert found is not None and found.agent == "claude" and found.tty.startswith("/dev/")
    finally:
        agent.close()


def test_a_hooks_pid_is_taken_as_said_where_the_kernel_does_not_say(tmp_path: Path, mac: None) -> None:
    """LOCAL_PEERPID is macOS's: forced on Linux it cannot answer, so the hook's own word stands (same user, same
    secret); on Linux SO_PEERCRED refuses a claim that is not the connecting process (tests/test_hookonly.py)."""
    got: list[AgentReport] = []

    async def main() -> None:
        server = ReportServer(lambda _p, _r: None, path=tmp_path / "agents.sock",
                              secret=UserSecret(Path(os.environ["PANEWATCH_RUNTIME_DIR"])), agents=got.append)
        await server.start()
        secret = read_secret(os.environ["PANEWATCH_RUNTIME_DIR"])
        message = {"hook_pid": "1", "parent": "1", "t": repr(time.time()), "terminal": {"TERM_PROGRAM": "iTerm.app"},
                   "token": secret, "event": "Stop", "state": "done", "payload": {}}

        def send() -> None:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(str(server.path))
                sock.sendall(json.dumps(message).encode() + b"\n")
                sock.recv(1)

        await asyncio.to_thread(send)
        await server.close()
        assert server.rejected == {} and server.accepted == 1

    asyncio.run(main())
    assert got[0].hook_pid == 1 and got[0].report == Report("done", got[0].report.t, "hook", "Stop")


def test_desktop_notifications_go_through_osascript_on_macos(tmp_path: Path) -> None:
    log = tmp_path / "args"
    fake = tmp_path / "osascript"
    fake.write_text(f"#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > {log}\n")
    fake.chmod(0o755)
    notify = Notifier(NotifySettings(backends=("desktop",)), time.monotonic, platform="darwin",
                      which=lambda name: str(fake) if name == "osascript" else None, environ={})
    try:
        assert notify.on_change("laptop:work:1.0", "claude", "working", "blocked", "Allow rm?") == ["desktop"]
        deadline = time.monotonic() + 10
        while not log.exists() or not log.read_text().endswith("Allow rm?\n"):
            assert time.monotonic() < deadline, "osascript not run"
            time.sleep(0.01)
        args = log.read_text().splitlines()
        assert args[-2:] == ["claude needs your answer (laptop:work:1.0)", "Allow rm?"]  # argv: nothing to quote
    finally:
        notify.close()


def test_going_to_iterm2_and_terminal_app_is_applescript_with_the_ids_as_argv(mac: None) -> None:
    iterm = Terminal({"TERM_PROGRAM": "iTerm.app", "ITERM_SESSION_ID": "w0t1p0:8A6D5C0E-1B2C-4D3E-9F00-112233445566"})
    argv, extra = goto.goto_argv(iterm, tty="/dev/ttys004", where="iTerm2")
    assert argv[1:3] == ["-e", goto.ITERM_SCRIPT] and argv[3] == "8A6D5C0E-1B2C-4D3E-9F00-112233445566" and not extra
    app = Terminal({"TERM_PROGRAM": "Apple_Terminal", "TERM_SESSION_ID": "X"})
    argv, _ = goto.goto_argv(app, tty="/dev/ttys004", where="Terminal.app")
    assert argv[1:] == ["-e", goto.TERMINAL_APP_SCRIPT, "/dev/ttys004"]
    hostile = Terminal({"TERM_PROGRAM": "iTerm.app", "ITERM_SESSION_ID": 'w0:x" & do shell script "touch /tmp/p'})
    with pytest.raises(CannotGoThere):  # not an iTerm2 session id: never handed to AppleScript
        goto.goto_argv(hostile, tty="/dev/ttys004", where="iTerm2")


def test_applescript_terminals_are_not_driven_off_macos(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(system, "SYSTEM", "linux")
    with pytest.raises(CannotGoThere) as refused:
        goto.goto_argv(Terminal({"TERM_PROGRAM": "Apple_Terminal"}), tty="/dev/pts/3", where="Terminal.app /dev/pts/3")
    assert "Terminal.app /dev/pts/3" in str(refused.value)
