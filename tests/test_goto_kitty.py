"""Go there, for real (issue 26, item 2): a hook-only agent in a kitty window, on a private X display (Xvfb),
kitty's remote control on a private socket. Another window is in front; the card's `goto` asks kitty to show the
agent's window, and kitty's own listing says it is the active one. WezTerm, iTerm2 and Terminal.app are checked
by the command each would run (tests/test_macos.py, below)."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from panewatch.board.hookonly import HookOnlyBoard, HookOnlyPane
from panewatch.board.panes import Hub
from panewatch.runtime import goto
from panewatch.runtime.agentproc import Terminal
from panewatch.runtime.live import ManifestWatcher

pytestmark = pytest.mark.needs("desktop")
STANDIN = Path(__file__).parent / "standin"


@pytest.fixture
def display() -> Iterator[str]:
    """A private X display: Xvfb picks a free number and writes it to the pipe (-displayfd)."""
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()
        assert number.isdigit(), "Xvfb gave no display"
        yield f":{number}"
    finally:
        proc.terminate()
        proc.wait(10)


def kitty_ls(listen: str) -> list[dict[str, Any]]:
    out = subprocess.run(["kitty", "@", "--to", listen, "ls"], capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    doc: list[dict[str, Any]] = json.loads(out.stdout)
    return doc


def active_window(listen: str) -> int:
    """The window kitty has in front (kitty 0.26: `is_focused` on the OS window, its tab and the window)."""
    for os_window in kitty_ls(listen):
        for tab in os_window["tabs"]:
            if tab.get("is_focused") or tab.get("is_active_tab"):
                return int(next(w["id"] for w in tab["windows"] if w.get("is_focused")))
    raise AssertionError("no active kitty window")


def test_goto_brings_the_agents_kitty_window_to_the_front(display: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{}\n")
    monkeypatch.setenv("HOME", str(home))
    install = subprocess.run([sys.executable, "-m", "panewatch", "hooks", "install", "--agent", "claude"],
                             capture_output=True, text=True, timeout=60)
    assert install.returncode == 0, install.stderr
    doc = json.loads((home / ".claude" / "settings.json").read_text())
    hook = next(h["command"] for g in doc["hooks"]["PermissionRequest"] for h in g["hooks"])
    go = tmp_path / "go"
    payload = json.dumps({"hook_event_name": "PermissionRequest", "tool_name": "Bash", "session_id": "k"})
    steps = (f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.02; done; printf %s {shlex.quote(payload)} | "
             f"setsid -w /bin/sh -c {shlex.quote(hook)}")
    listen = f"unix:{tmp_path}/kitty.sock"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KITTY", "TMUX", "WEZTERM", "TERM_PROGRAM"))}
    env |= {"DISPLAY": display, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "KITTY_CONFIG_DIRECTORY": str(tmp_path)}
    kitty = subprocess.Popen(["kitty", "--config", "NONE", "-o", "allow_remote_control=yes", "--listen-on", listen,
                              "--", sys.executable, str(STANDIN / "claude-code" / "cli.js"), "sh", steps],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(tmp_path))

    async def main() -> None:
        hub = Hub()
        board = HookOnlyBoard(hub, ManifestWatcher())
        await board.start()
        try:
            deadline = time.monotonic() + 30
            while not (tmp_path / "kitty.sock").exists():
                assert time.monotonic() < deadline and kitty.poll() is None, "kitty did not start"
                await asyncio.sleep(0.05)
            agent_window = await asyncio.to_thread(active_window, listen)
            # another window in front of the agent's
            out = await asyncio.to_thread(subprocess.run, ["kitty", "@", "--to", listen, "launch", "--type=window",
                                                           "sleep", "600"], capture_output=True, text=True, timeout=20)
            assert out.returncode == 0, out.stderr
            other = await asyncio.to_thread(active_window, listen)
            assert other != agent_window
            go.touch()
            deadline = time.monotonic() + 15
            while not hub.panes:
                assert time.monotonic() < deadline, "no hook-only card"
                await asyncio.sleep(0.02)
            handle = next(iter(hub.panes.values()))
            assert isinstance(handle, HookOnlyPane)
            card = handle.card
            assert card["terminal"] == "kitty" and card["where"].startswith(f"kitty window {agent_window} · /dev/pts/")
            assert card["state"] == "blocked"
            await handle.goto()
            assert await asyncio.to_thread(active_window, listen) == agent_window
        finally:
            await board.close()

    try:
        asyncio.run(asyncio.wait_for(main(), 90))
    finally:
        kitty.terminate()
        kitty.wait(10)


def test_the_commands_for_kitty_and_wezterm_take_their_ids_as_words() -> None:
    argv, extra = goto.goto_argv(Terminal({"KITTY_WINDOW_ID": "7", "KITTY_LISTEN_ON": "unix:/tmp/k k;x"}),
                                 tty="/dev/pts/1", where="kitty")
    assert argv[1:] == ["@", "--to", "unix:/tmp/k k;x", "focus-window", "--match", "id:7"] and not extra
    argv, extra = goto.goto_argv(Terminal({"TERM_PROGRAM": "WezTerm", "WEZTERM_PANE": "12",
                                           "WEZTERM_UNIX_SOCKET": "/run/user/1/wezterm/gui-sock-9"}),
                                 tty="/dev/pts/1", where="WezTerm")
    assert argv[1:] == ["cli", "activate-pane", "--pane-id", "12"]
    assert extra == {"WEZTERM_UNIX_SOCKET": "/run/user/1/wezterm/gui-sock-9"}
    argv, _ = goto.goto_argv(Terminal({"KITTY_WINDOW_ID": "7", "KITTY_LISTEN_ON": "tcp:localhost:5555"}),
                             tty="/dev/pts/1", where="kitty")
    assert argv[3] == "tcp:localhost:5555"
    for env in ({"KITTY_WINDOW_ID": "7; rm -rf ~", "KITTY_LISTEN_ON": "unix:/tmp/k"},
                {"KITTY_WINDOW_ID": "7", "KITTY_LISTEN_ON": "tcp:evil.example:80"},
                {"TERM_PROGRAM": "WezTerm", "WEZTERM_PANE": "--help"}, {"TERM_PROGRAM": "vscode"}):
        with pytest.raises(goto.CannotGoThere):
            goto.goto_argv(Terminal(env), tty="/dev/pts/1", where="somewhere")
