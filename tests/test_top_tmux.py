"""`panewatch top` in tmux, as a user has it: the README's `.tmux.conf` lines sourced as written into a real tmux
server, a real client in a PTY pressing the keys, a real daemon watching (issue 25).

    prefix P   the popup opens on `panewatch top --popup`; `b` then Enter lands the client on the blocked pane
               (list-clients says so) and closes the popup; `1` then Enter answers it (the pane leaves blocked)
    prefix N   `panewatch tmux next`: the longest-blocked pane, then the next, then round; a message when none
    @panewatch_window_state  set on the window holding the blocked agent, shown by the README's window format
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from boardutil import cli, new_agent, start_serve, wait_for
from panewatch.testing.drive import PtyAgent
from test_day import by_pane, pane_of
from tmuxutil import DIALOG, Tmux, agent_cmd
from tmuxutil import tmux as tmux

pytestmark = pytest.mark.needs("tmux")
README = Path(__file__).parent.parent / "README.md"


def readme_tmux_lines() -> str:
    """The README's `.tmux.conf` block that binds `panewatch top --popup`, exactly as written there."""
    blocks = re.findall(r"```tmux\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if "panewatch top --popup" in b]
    assert len(found) == 1, "the README has one tmux block with the popup binding"
    return found[0]


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's lines run `panewatch` by name: this checkout's (the tmux server takes our PATH)."""
    bindir = Path(sys.executable).parent
    assert (bindir / "panewatch").exists(), "the panewatch script next to the test interpreter"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")


def configured(tmux: Tmux, tmp_path: Path) -> None:
    conf = tmp_path / "readme.tmux.conf"
    conf.write_text(readme_tmux_lines(), encoding="utf-8")
    tmux("source-file", str(conf))
    tmux("set", "-g", "display-time", "5000")  # the test reads tmux's messages off the client's screen


def where_clients_are(tmux: Tmux) -> list[str]:
    """Each user client's session, window and pane (panewatch's control clients left out)."""
    lines = tmux("list-clients", "-F", "#{client_control_mode} #{session_name} #{window_name} #{pane_id}")
    return [line[2:] for line in lines.splitlines() if line.startswith("0 ")]


@pytest.fixture
def user(tmux: Tmux, on_path: None) -> Iterator[PtyAgent]:
    tmux("new-session", "-d", "-s", "work", "-x", "100", "-y", "30", "-n", "home", "bash --norc --noprofile")
    terminal = PtyAgent(["tmux", "-L", tmux.name, "attach", "-t", "work"],
                        env={**os.environ, "TERM": "xterm-256color"}, cols=100, rows=30).start()
    try:
        wait_for(lambda: where_clients_are(tmux) == [f"work home {pane_of(tmux, 'work:home')}"], "the user attached")
        yield terminal
    finally:
        terminal.close()


def popup_open(user: PtyAgent) -> bool:
    """A popup's frame is on the client's screen (tmux draws it with these corners; the panes here draw none)."""
    text = user.text()
    return "┌" in text and "┘" in text


def blocked_card(pane: str) -> dict[str, Any]:
    card: dict[str, Any] = wait_for(lambda: (x := by_pane(pane)) and x["state"] == "blocked" and x,
                                    f"{pane} blocked", 20)
    return card


def test_the_popup_goes_to_the_blocked_pane_and_answers_it(tmux: Tmux, user: PtyAgent, tmp_path: Path) -> None:
    tmux("new-session", "-d", "-s", "agents", "-x", "100", "-y", "30", "-n", "quiet", "bash --norc --noprofile")
    tmux("new-window", "-d", "-t", "agents", "-n", "A", agent_cmd("dialogs", DIALOG))
    a = pane_of(tmux, "agents:A")
    configured(tmux, tmp_path)
    serve = start_serve()
    try:
        blocked_card(a)
        # the window holding the blocked agent is marked, and the README's window format shows it
        wait_for(lambda: tmux("display", "-p", "-t", "agents:A", "#{@panewatch_window_state}") == "blocked",
                 "the window option", 10)
        assert "⚠" in tmux("display", "-p", "-t", "agents:A", "#{E:window-status-format}")
        assert tmux("display", "-p", "-t", "agents:quiet", "#{@panewatch_window_state}") == ""  # a shell only

        user.write(b"\x02P")  # prefix P: the popup
        wait_for(lambda: "panewatch · ⚠ 1 blocked" in user.text(), "top in the popup, the pane blocked", 20)
        user.write(b"b")
        wait_for(lambda: "Do you want to proceed?" in user.text(), "the blocked pane selected, its prompt shown")
        user.write(b"\r")
        wait_for(lambda: where_clients_are(tmux) == [f"agents A {a}"], "the client on the blocked pane", 10)
        wait_for(lambda: not popup_open(user), "the popup closed")

        user.write(b"\x02P")
        wait_for(lambda: "panewatch · ⚠ 1 blocked" in user.text(), "the popup again", 20)
        user.write(b"b")
        wait_for(lambda: "Do you want to proceed?" in user.text(), "the prompt shown")
        user.write(b"1")
        wait_for(lambda: "Enter: answer" in user.text(), "the confirmation")
        assert "fingerprint " in user.text()
        user.write(b"\r")
        wait_for(lambda: (x := by_pane(a)) and x["state"] != "blocked", "the pane left blocked", 20)
        assert "answered 1" in tmux("capture-pane", "-p", "-t", a)
        wait_for(lambda: "answered pane" in user.text(), "the view says the answer's outcome")
        wait_for(lambda: tmux("display", "-p", "-t", "agents:A", "#{@panewatch_window_state}") != "blocked",
                 "the window no longer marked", 10)
        user.write(b"q")
        wait_for(lambda: not popup_open(user), "q closed the popup")
    finally:
        serve.stop()


def test_tmux_next_walks_the_blocked_panes_and_says_when_there_is_none(tmux: Tmux, user: PtyAgent,
                                                                       tmp_path: Path) -> None:
    tmux("new-session", "-d", "-s", "agents", "-x", "100", "-y", "30", "-n", "A", agent_cmd("dialogs", DIALOG))
    a = pane_of(tmux, "agents:A")
    configured(tmux, tmp_path)
    serve = start_serve()
    try:
        first = blocked_card(a)
        tmux("new-session", "-d", "-s", "more", "-x", "100", "-y", "30", "-n", "C", agent_cmd("dialogs", DIALOG))
        c = pane_of(tmux, "more:C")
        second = blocked_card(c)
        assert first["since"] < second["since"]
        assert cli("tmux", "status", check=True).stdout.startswith("⚠ 2 blocked (agents:0.0)")  # the next one named

        user.write(b"\x02N")  # prefix N: the longest wait first
        wait_for(lambda: where_clients_are(tmux) == [f"agents A {a}"], "the client on A", 10)
        user.write(b"\x02N")  # again: the one after it
        wait_for(lambda: where_clients_are(tmux) == [f"more C {c}"], "the client on C", 10)
        user.write(b"\x02N")  # and round
        wait_for(lambda: where_clients_are(tmux) == [f"agents A {a}"], "the client back on A", 10)

        for card in (first, second):
            fingerprint = card["prompt"]["fingerprint"]
            assert cli("answer", card["id"], "1", "--yes", "--fingerprint", fingerprint).returncode == 0
        wait_for(lambda: all((by_pane(p) or {}).get("state") != "blocked" for p in (a, c)), "none blocked", 20)
        user.write(b"\x02N")
        wait_for(lambda: "no pane is blocked" in user.text(), "tmux's message line says so", 10)
        assert where_clients_are(tmux) == [f"agents A {a}"]  # nobody moved
    finally:
        serve.stop()


def test_from_the_popup_a_pane_tmux_does_not_hold_opens_in_a_window_of_its_own(tmux: Tmux, user: PtyAgent,
                                                                               tmp_path: Path) -> None:
    configured(tmux, tmp_path)
    serve = start_serve()
    try:
        new_agent(tmp_path / "headless.log", "headless")  # a pane the daemon holds (no tmux pane to switch to)
        user.write(b"\x02P")
        wait_for(lambda: "panewatch · ○ 1 idle" in user.text(), "the popup lists it", 20)
        user.write(b"\r")
        wait_for(lambda: [c.split(" ")[:2] for c in where_clients_are(tmux)] == [["work", "panewatch"]],
                 "the client in a new window", 10)
        wait_for(lambda: "Claude Code v2.1.332" in user.text() and not popup_open(user), "the pane streamed there")
        user.write(b"\x1c")  # Ctrl-\ detaches: the window's command ends, the window with it
        wait_for(lambda: [c.split(" ")[:2] for c in where_clients_are(tmux)] == [["work", "home"]], "back", 10)
    finally:
        serve.stop()
