"""Hook-only panes (issue 26, item 1): an agent started by hand outside any watched pane, in a real PTY, runs the
hooks `panewatch hooks install` put in its settings (through `setsid sh -c`, as Claude Code does); the daemon's
listener names the agent by walking up from the hook (pid, tty, cwd), and its card follows the hook events,
in hook order, and turns exited when the process ends. Forged secrets and pids are refused; an agent whose
tty is a pane watched by its screen gets no second card."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hookutil import installed as installed
from panewatch.board.hookonly import HookOnlyBoard, HookOnlyPane
from panewatch.board.ids import PaneIds
from panewatch.board.model import Card
from panewatch.board.panes import Hub
from panewatch.board.rpc import RemoteError
from panewatch.core.combine import Report
from panewatch.core.hookpane import HookPane
from panewatch.runtime import paneclient
from panewatch.runtime.agentproc import find_agent
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.pty import PtySession

STANDIN = Path(__file__).parent / "standin"


def test_reports_apply_in_hook_order_and_nothing_after_the_exit() -> None:
    pane = HookPane(now=100.0)
    assert pane.report("working", 10.0, "PreToolUse Bash", 100.1) is not None
    blocked = pane.report("blocked", 10.05, "PermissionRequest Bash", 100.2)
    assert blocked is not None and blocked.state == "blocked"
    # PreToolUse's twin from a hook that started earlier but arrived later: stale, never applied
    assert pane.report("working", 10.01, "PreToolUse Bash", 100.3) is None
    assert pane.current is not None and pane.current.state == "blocked" and pane.stale == 1
    done = pane.report("done", 11.0, "Stop", 101.0)
    assert done is not None and done.state == "idle"
    assert pane.exited(102.0) is not None and pane.ended
    assert pane.report("working", 12.0, "UserPromptSubmit", 103.0) is None  # a hook after the exit: nothing
    assert pane.current.state == "exited"


def agent_steps(tmp_path: Path, installed: dict[str, str], events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """A stand-in Claude Code (named by its path, as the real one) on a PTY: before each event it waits for the
    file `go-N`, then runs that event's installed hook with its payload through `setsid sh -c` (a new session,
    no terminal: as Claude Code 2.1.332 runs hooks); then it holds."""
    steps = []
    for i, (event, fields) in enumerate(events):
        payload = json.dumps({"hook_event_name": event, "session_id": "sess-1", "cwd": str(tmp_path), **fields})
        go = shlex.quote(str(tmp_path / f"go-{i}"))
        steps.append(f"while [ ! -e {go} ]; do sleep 0.02; done; printf %s {shlex.quote(payload)} | "
                     f"setsid -w /bin/sh -c {shlex.quote(installed[event])}")
    return [sys.executable, str(STANDIN / "claude-code" / "cli.js"), "sh", "; ".join(steps)]


async def until(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(0.02)


def hook_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "KITTY", "WEZTERM", "TERM_PROGRAM"))}
    return {**env, "TERM": "xterm-256color", **extra}


def test_an_agent_started_by_hand_in_a_plain_pty_is_a_card_that_follows_its_hooks(
        tmp_path: Path, installed: dict[str, str]) -> None:
    events: list[tuple[str, dict[str, Any]]] = [
        ("UserPromptSubmit", {}),
        ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "touch /tmp/x"}}),
        ("PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "touch /tmp/x"}}),
        ("PostToolUse", {"tool_name": "Bash"}),
        ("Stop", {}),
    ]
    argv = agent_steps(tmp_path, installed, events)
    changes: list[tuple[str, str]] = []

    async def main() -> None:
        hub = Hub(PaneIds(tmp_path / "ids.json"))
        hub.listeners.add(lambda pane_id, card: changes.append((pane_id, card["state"] if card else "-")))
        watcher = ManifestWatcher()
        board = HookOnlyBoard(hub, watcher)
        await board.start()
        assert board.server is not None
        agent = PtySession(argv, env=hook_env(KITTY_WINDOW_ID="3", TERM_PROGRAM="kitty"), cwd=str(tmp_path))
        try:
            expected = ["working", "working", "blocked", "working", "idle"]
            for i, state in enumerate(expected):
                (tmp_path / f"go-{i}").touch()
                await until(lambda i=i: board.server is not None and board.server.accepted == i + 1, 10,
                            f"report {i}")
                card = only_card(hub)
                assert card["state"] == state, (i, card)
            card = only_card(hub)
            assert card["origin"] == "hooks" and card["agent"] == "claude" and card["kind"] == "agent", card
            assert card["pid"] == agent.pid
            assert card["tty"] == os.ttyname(agent_slave(agent.pid)), card  # the agent's tty, not the hook's (none)
            assert card["cwd"] == str(tmp_path) and card["session"] == "sess-1"
            assert card["terminal"] == "kitty" and card["where"].startswith("kitty window 3 · /dev/pts/")
            assert card["key"] and not card["interactive"]
            handle = hub.panes[card["id"]]
            assert isinstance(handle, HookOnlyPane)
            with pytest.raises(RemoteError) as refused:
                await handle.send("hello", True)
            assert refused.value.kind == "no_screen" and "kitty window 3" in str(refused.value)
            with pytest.raises(RemoteError) as nowhere:
                await handle.goto()  # kitty without remote control: it says where the agent is
            assert nowhere.value.kind == "cannot_go_there" and "remote control is off" in str(nowhere.value)
            agent.close()
            await until(lambda: only_card(hub)["state"] == "exited", 5, "exited")
            assert only_card(hub)["source"] == "process"
            assert not board.handles  # nothing left to look at
        finally:
            agent.close()
            await board.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    states = [s for _, s in changes]
    assert states[-1] == "exited" and "blocked" in states


def only_card(hub: Hub) -> Card:
    cards = hub.cards()
    assert len(cards) == 1, cards
    return cards[0]


def agent_slave(pid: int) -> int:
    """An fd on the agent's controlling terminal (its stdin, through /proc: the test's own view of it)."""
    return os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NOCTTY)


def test_blocked_while_the_dialog_waits_in_a_permission_request_with_what_it_asks(tmp_path: Path,
                                                                                   installed: dict[str, str]) -> None:
    argv = agent_steps(tmp_path, installed, [("PermissionRequest", {"tool_name": "Bash",
                                                                    "tool_input": {"command": "rm -rf build"}})])

    async def main() -> None:
        hub = Hub()
        board = HookOnlyBoard(hub, ManifestWatcher())
        await board.start()
        agent = PtySession(argv, env=hook_env(), cwd=str(tmp_path))
        try:
            (tmp_path / "go-0").touch()
            await until(lambda: bool(hub.panes), 10, "the card")
            card = only_card(hub)
            assert card["state"] == "blocked" and card["prompt"]["question"] == "Bash: rm -rf build", card
            assert card["prompt"]["options"] == []
        finally:
            agent.close()
            await board.close()

    asyncio.run(asyncio.wait_for(main(), 60))


def send(path: str, message: dict[str, Any]) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(path)
        sock.sendall(json.dumps(message).encode() + b"\n")
        sock.recv(1)


def test_forged_secrets_pids_and_late_reports_move_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        hub = Hub()
        board = HookOnlyBoard(hub, ManifestWatcher())
        await board.start()
        server = board.server
        assert server is not None
        secret = paneclient.read_secret(os.environ["PANEWATCH_RUNTIME_DIR"])
        assert secret is not None
        path = str(server.path)
        me = str(os.getpid())
        base = {"hook_pid": me, "parent": str(os.getppid()), "t": repr(time.time()), "terminal": {},
                "event": "PermissionRequest", "state": "blocked", "payload": {}}
        try:
            await asyncio.to_thread(send, path, {**base, "token": "0" * 64})
            await asyncio.to_thread(send, path, {**base, "token": secret, "hook_pid": "1"})  # not who connected
            await asyncio.to_thread(send, path, {**base, "token": secret, "t": "nan"})
            await asyncio.to_thread(send, path, {**base, "token": secret, "state": "exited"})
            await until(lambda: sum(server.rejected.values()) == 4, 5, "the refusals")
            assert server.rejected == {"bad_secret": 1, "bad_pid": 1, "bad_json": 1, "bad_state": 1}
            assert not hub.panes and server.accepted == 0
        finally:
            await board.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_an_agent_whose_tty_is_watched_by_its_screen_stays_one_card(tmp_path: Path, installed: dict[str, str]) -> None:
    """A pane watched by its screen (here: its tty claimed by a screen pane's sink) takes the report; no card."""
    argv = agent_steps(tmp_path, installed, [("PreToolUse", {"tool_name": "Bash"})])
    got: list[Report] = []

    async def main() -> None:
        hub = Hub()
        ttys: list[str] = []
        board = HookOnlyBoard(hub, ManifestWatcher(), screen_pane=lambda tty: got.append if tty in ttys else None)
        await board.start()
        agent = PtySession(argv, env=hook_env(), cwd=str(tmp_path))
        fd = agent_slave(agent.pid)
        ttys.append(os.ttyname(fd))
        os.close(fd)
        try:
            (tmp_path / "go-0").touch()
            await until(lambda: bool(got), 10, "the report on the screen pane")
            assert got[0].state == "working" and got[0].source == "hook" and got[0].detail == "PreToolUse Bash"
            assert not hub.panes and board.counts == {"screen_pane": 1}
        finally:
            agent.close()
            await board.close()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_terminal_opened_after_the_first_look_is_named(tmp_path: Path) -> None:
    """psutil names terminals from a map it reads once per process: a pty opened later came out as no tty at all
    (the card said none, and a pane watched by its screen got a second card)."""
    first = PtySession([sys.executable, str(STANDIN / "claude-code" / "cli.js"), "sh", "true"], env=hook_env())
    later: PtySession | None = None
    try:
        found = find_agent(first.pid, ManifestWatcher().current())  # the daemon's first look, earlier in its life
        assert found is not None and found.tty.startswith("/dev/")
        # a new pty while the first is still open (a closed one's number may come back)
        later = PtySession([sys.executable, str(STANDIN / "claude-code" / "cli.js"), "sh", "true"], env=hook_env())
        fd = agent_slave(later.pid)
        expected = os.ttyname(fd)
        os.close(fd)
        found = find_agent(later.pid, ManifestWatcher().current())
        assert found is not None and found.agent == "claude" and found.tty == expected, found
    finally:
        first.close()
        if later is not None:
            later.close()


def test_a_pane_watched_by_its_screen_later_takes_the_agent_over(tmp_path: Path, installed: dict[str, str]) -> None:
    """The agent's first hook came before its pane was watched (a tmux server the daemon finds up to SCAN seconds
    later): a hook-only card at first; once a watched pane has its tty, that card leaves and its last report goes to
    the pane's card. One card per agent."""
    argv = agent_steps(tmp_path, installed, [("PermissionRequest", {"tool_name": "Bash"})])
    got: list[Report] = []

    async def main() -> None:
        hub = Hub()
        watched: list[str] = []
        board = HookOnlyBoard(hub, ManifestWatcher(), screen_pane=lambda tty: got.append if tty in watched else None)
        await board.start()
        agent = PtySession(argv, env=hook_env(), cwd=str(tmp_path))
        try:
            (tmp_path / "go-0").touch()
            await until(lambda: bool(hub.panes), 10, "the hook-only card")
            assert only_card(hub)["state"] == "blocked" and not got
            watched.append(only_card(hub)["tty"])  # its tmux server is watched now
            await until(lambda: not hub.panes, 5, "the hook-only card handed over")
            assert got and got[0].state == "blocked" and got[0].detail == "PermissionRequest Bash"
            assert board.counts["handed_over"] == 1 and not board.handles
        finally:
            agent.close()
            await board.close()

    asyncio.run(asyncio.wait_for(main(), 60))
