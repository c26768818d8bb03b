"""The pane commands against a real `panewatch serve`: ls, new, send, answer, attach, kill, board."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from boardutil import AGENT, ServeProcess, card, cli, new_agent, start_serve, wait_for, wait_state
from panewatch.runtime.fd import set_winsize


def log_lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_commands_without_a_daemon_say_so() -> None:
    for args in (["ls"], ["send", "1", "hi"], ["answer", "1", "1"], ["kill", "1"], ["serve", "--stop"]):
        out = cli(*args)
        assert out.returncode == 1, args
        assert "daemon is not running" in out.stderr, args
        assert "Traceback" not in out.stderr


def test_single_daemon_board_url_and_stop(serve: ServeProcess) -> None:
    second = subprocess.run([sys.executable, "-m", "panewatch", "serve"], capture_output=True, text=True, timeout=30)
    assert second.returncode == 3
    assert "already running" in second.stderr
    link = serve.login()  # a one-time link, a new one each time
    assert link != serve.url and link != serve.login()
    info = json.loads(cli("board", "--json", check=True).stdout)
    assert info["base"] == serve.base and info["pid"] == serve.proc.pid and info["panes"] == 0
    assert info["url"].startswith(serve.base + "?token=pwb_")
    assert cli("ls", check=True).stdout.startswith("no panes")
    stop = cli("serve", "--stop", check=True)
    assert f"{serve.proc.pid} stopped" in stop.stdout
    assert serve.proc.wait(10) == 0


def test_new_starts_the_daemon_on_demand(tmp_path: Path) -> None:
    pane = new_agent(tmp_path / "log")
    try:
        assert wait_state(pane, "idle")["name"] == "agent"
        info = json.loads(cli("board", "--json", check=True).stdout)
        assert info["panes"] == 1
    finally:
        assert cli("serve", "--stop").returncode == 0


def test_send_answer_kill(serve: ServeProcess, tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    pane = new_agent(log)
    first = wait_state(pane, "idle")
    assert first["agent"] == "claude" and first["origin"] == "headless" and first["cwd"] == os.getcwd()
    assert first["rule"] == "shortcuts-footer" and first["interactive"] is True

    cli("send", pane, "hello there", check=True)
    wait_for(lambda: "typed hello there" in log_lines(log), "the text reached the agent")
    wait_state(pane, "working")

    cli("send", "--no-enter", pane, "b", check=True)  # the scripted agent shows its permission dialog
    blocked = wait_state(pane, "blocked")
    prompt = blocked["prompt"]
    assert prompt["question"] == "Do you want to proceed?"
    assert [o["label"] for o in prompt["options"]] == ["Yes", "Yes, and don't ask again", "No"]
    assert blocked["interactive"] is False and blocked["rule"]
    listing = cli("ls", check=True).stdout
    assert "blocked" in listing and "Do you want to proceed?" in listing and prompt["fingerprint"] in listing

    refused = cli("send", pane, "hello again")
    assert refused.returncode == 1
    assert "blocked on a prompt; nothing was typed" in refused.stderr
    assert "Do you want to proceed?" in refused.stderr and prompt["fingerprint"] in refused.stderr
    assert not any("hello again" in line for line in log_lines(log))

    no_tty = cli("answer", pane, "1")
    assert no_tty.returncode == 2 and "Do you want to proceed?" in no_tty.stdout
    assert "--fingerprint" in cli("answer", pane, "1", "--yes").stderr
    stale = cli("answer", pane, "1", "--yes", "--fingerprint", "0123456789abcdef")
    assert stale.returncode == 1 and "the prompt changed" in stale.stderr
    assert cli("answer", pane, "9", "--yes", "--fingerprint", prompt["fingerprint"]).returncode == 1
    assert not any(line.startswith("answered") for line in log_lines(log))

    done = cli("answer", pane, "1", "--yes", "--fingerprint", prompt["fingerprint"], check=True)
    assert "answered 1. Yes: applied: the agent is" in done.stdout
    assert "answered 1 rm -rf build/" in log_lines(log)
    wait_state(pane, "idle")

    assert "no pane '99'" in cli("send", "99", "x").stderr
    assert "no pane 'nope'" in cli("answer", "nope", "1").stderr
    cli("kill", pane, check=True)
    wait_for(lambda: card(pane) is None, "the killed pane left the board")


def _pty_command(args: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    master, slave = os.openpty()
    termios.tcsetattr(slave, termios.TCSANOW, termios.tcgetattr(slave))
    proc = subprocess.Popen([sys.executable, "-m", "panewatch", *args], stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True, env={**os.environ, "PANEWATCH_BOARD": "off"})
    os.close(slave)
    return proc, master


def _read_until(master: int, needle: bytes, timeout: float = 15.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{needle!r} not seen; got {seen[-500:]!r}")
        ready, _, _ = select.select([master], [], [], left)
        if ready:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
    return seen


def test_answer_asks_for_confirmation_on_a_terminal(serve: ServeProcess, tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    pane = new_agent(log)
    wait_state(pane, "idle")
    cli("send", "--no-enter", pane, "b", check=True)
    wait_state(pane, "blocked")
    for reply, answered in ((b"n\r", False), (b"y\r", True)):
        proc, master = _pty_command(["answer", pane, "2"])
        try:
            shown = _read_until(master, b"[y/N]")
            os.write(master, reply)
            _read_until(master, b"answered 2. Yes" if answered else b"not answered")
        finally:
            assert proc.wait(15) == (0 if answered else 1)
            os.close(master)
        assert b"Do you want to proceed?" in shown
    assert log_lines(log) == ["answered 2 rm -rf build/"]


def test_attach_types_into_the_pane_and_detaches_cleanly(serve: ServeProcess, tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    pane = new_agent(log)
    wait_state(pane, "idle")
    master, slave = os.openpty()
    set_winsize(slave, 90, 30)
    before = termios.tcgetattr(slave)
    proc = subprocess.Popen([sys.executable, "-m", "panewatch", "attach", pane], stdin=slave, stdout=slave,
                            stderr=slave, start_new_session=True)
    try:
        _read_until(master, b"Claude Code v2.1.332")  # the repaint of the pane's screen
        assert termios.tcgetattr(slave)[3] & termios.ICANON == 0  # raw while attached
        os.write(master, b"hello from attach\r")
        wait_for(lambda: "typed hello from attach" in log_lines(log), "keys reached the pane")
        os.write(master, b"\x1c")  # Ctrl-\ detaches
        tail = _read_until(master, b"[detached from pane")
        assert proc.wait(15) == 0
        assert b"\x1b[?1049l" in tail  # the shell's screen is back
        assert termios.tcgetattr(slave) == before  # and the terminal's modes
        working = wait_state(pane, "working")  # the pane lives on, at the size of the terminal that attached
        assert (working["cols"], working["rows"]) == (90, 30)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        os.close(master)
        os.close(slave)


def test_run_starts_the_daemon_registers_and_registers_again(tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    master, slave = os.openpty()
    set_winsize(slave, 100, 32)
    proc = subprocess.Popen([sys.executable, "-m", "panewatch", "run", "--agent", "claude", "--pane-id", "mine", "--",
                             sys.executable, str(AGENT), str(log)], stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True, env={**os.environ, "PANEWATCH_BOARD": "auto"})
    os.close(slave)
    out = bytearray()

    def pump() -> None:  # keep the run's terminal drained
        while select.select([master], [], [], 0)[0]:
            try:
                out.extend(os.read(master, 65536))
            except OSError:
                return

    def mine() -> dict[str, Any] | None:
        pump()
        listed = cli("ls", "--json")
        if listed.returncode:
            return None
        return next((c for c in json.loads(listed.stdout)["panes"] if c["name"] == "mine"), None)

    try:
        first = wait_for(lambda: (c := mine()) and c["rule"] == "shortcuts-footer" and c, "run registered", 20)
        assert first["origin"] == "run" and first["agent"] == "claude"
        cli("send", first["id"], "hello from the board", check=True)
        wait_for(lambda: pump() or "typed hello from the board" in log_lines(log), "typed through run's guard")
        cli("serve", "--stop", check=True)  # the daemon goes away; the pane goes on
        os.write(master, b"b")
        wait_for(lambda: pump() or b"Do you want to proceed?" in out, "the pane still runs")
        again = start_serve()
        try:
            card_again = wait_for(lambda: (c := mine()) and c["state"] == "blocked" and c, "registered again", 20)
            assert card_again["prompt"]["question"] == "Do you want to proceed?"
            os.write(master, b"3\x04")  # answer in the run's own terminal, then end the agent
            assert proc.wait(15) == 0
            wait_for(lambda: (c := mine()) and c["state"] == "exited", "its card says exited")
        finally:
            again.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


@pytest.mark.parametrize("ending", ["sigterm", "pane_exits"])
def test_attach_restores_the_terminal_on_every_way_out(serve: ServeProcess, tmp_path: Path, ending: str) -> None:
    pane = new_agent(tmp_path / "agent.log")
    master, slave = os.openpty()
    set_winsize(slave, 100, 32)
    before = termios.tcgetattr(slave)
    proc = subprocess.Popen([sys.executable, "-m", "panewatch", "attach", pane], stdin=slave, stdout=slave,
                            stderr=slave, start_new_session=True)
    try:
        _read_until(master, b"Claude Code v2.1.332")
        if ending == "sigterm":
            proc.send_signal(signal.SIGTERM)
            expected, message = 128 + signal.SIGTERM, b"signal"
        else:
            os.write(master, b"\x04")  # the agent ends: the attach ends with it
            expected, message = 0, b"exited"
        _read_until(master, message)
        assert proc.wait(15) == expected
        assert termios.tcgetattr(slave) == before
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        os.close(slave)


def test_an_idle_daemon_started_on_demand_exits_by_itself() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "panewatch", "serve", "--quiet", "--idle-exit", "0.5"])
    try:
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "daemon is not running" in cli("ls").stderr


def test_headless_panes_notify_through_the_daemon(tmp_path: Path) -> None:
    got = tmp_path / "notified"
    config = Path(os.environ["PANEWATCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f'[notify]\nbackends = []\ncommand = "echo $PANEWATCH_PANE $PANEWATCH_STATE '
                                        f'>> {got}"\n')
    server = start_serve()
    try:
        pane = new_agent(tmp_path / "agent.log", name="noisy")
        cli("send", "--no-enter", pane, "b", check=True)
        wait_for(lambda: got.exists() and got.read_text() == "noisy blocked\n", "the command backend ran")
    finally:
        server.stop()


def test_ls_prints_hostile_names_inert(capsys: pytest.CaptureFixture[str]) -> None:
    """A remote session's name, a pane title or a question may carry escapes (issue 23, item 9): `ls` prints them
    as visible text, never as control sequences for the user's terminal."""
    from panewatch.cli.panes import _table, plain

    evil = "x\x1b]0;pwned\x07\x1b[2J\x9b31m\r"
    _table([{"id": "devbox:%0", "name": evil, "agent": "claude", "state": "blocked", "since": 0, "target": evil,
             "window": evil, "cwd": evil, "source": "screen", "rule": evil, "kind": "agent",
             "prompt": {"question": evil, "options": [{"number": 1, "label": evil}], "fingerprint": "f" * 16}}])
    out = capsys.readouterr().out
    assert not any(ch in out for ch in "\x1b\x07\r\x9b") and "x?]0;pwned??[2J?31m?" in out
    assert plain("ok\tfine") == "ok\tfine"
