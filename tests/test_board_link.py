"""BoardLink: a `run` pane registers with the daemon, is driven through its own input guard, keeps
working while the daemon is gone, and registers again when a daemon is back.

Every reply on the socket comes REPLY_DELAY late here (`late_replies`): a loaded machine does that at
random, and a test that reads one side's state between the other side's action and its reply then
fails once in a while (issue 10, defect 7); late every time, such a test fails every time."""

from __future__ import annotations

import asyncio
import base64
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from boardutil import AGENT
from panewatch.board import client
from panewatch.board.daemon import Daemon
from panewatch.board.link import BoardLink
from panewatch.board.panes import RemotePane
from panewatch.board.rpc import Peer, RemoteError
from panewatch.runtime.live import LivePane

TIMEOUT = 15.0
REPLY_DELAY = 0.05


@pytest.fixture(autouse=True)
def late_replies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each reply leaves REPLY_DELAY after it was made, and what the peer sends after it waits behind it
    (one stream keeps its order)."""
    send = Peer.send
    held: dict[Peer, list[dict[str, Any]]] = {}

    def release(peer: Peer) -> None:
        for msg in held.pop(peer, []):
            send(peer, msg)

    def late(peer: Peer, msg: dict[str, Any]) -> None:
        if peer not in held and "re" not in msg:
            send(peer, msg)
            return
        if peer not in held:
            asyncio.get_running_loop().call_later(REPLY_DELAY, release, peer)
        held.setdefault(peer, []).append(msg)

    monkeypatch.setattr(Peer, "send", late)


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), 90))


async def until(pred: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := pred()):
        if loop.time() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        await asyncio.sleep(0.02)
    return value


def remote(daemon: Daemon) -> RemotePane | None:
    return next((h for h in daemon.hub.panes.values() if isinstance(h, RemotePane)), None)


def test_run_pane_registers_is_guarded_and_reregisters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PANEWATCH_BOARD", "connect")
    log = tmp_path / "agent.log"

    def lines() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    async def body() -> None:
        pane = LivePane([sys.executable, str(AGENT), str(log)], pane_id="run-42", agent="claude", headless=True)
        link = BoardLink(pane, cwd="/somewhere", command="claude --resume")
        pane.start()
        link.start()  # no daemon yet: the pane must not care
        await until(lambda: pane.state.state == "idle" and pane.verdict.rule == "shortcuts-footer", "pane idle")
        assert not link.connected

        daemon = Daemon()
        await daemon.start()
        try:
            handle = await until(lambda: remote(daemon), "the run pane registered")
            await until(lambda: handle.card["state"] == "idle", "its card idle")
            assert handle.card["name"] == "run-42" and handle.card["origin"] == "run"
            assert handle.card["cwd"] == "/somewhere" and handle.card["command"] == "claude --resume"
            assert handle.card["pid"] == pane.pid

            await handle.send("hello", True)  # typed by the pane's own guard, in "its" process
            await until(lambda: "typed hello" in lines(), "text reached the agent")
            await until(lambda: handle.card["state"] == "working", "card working")

            # The live view: a repaint, then the stream.
            screens: list[tuple[bytes, bool]] = []
            unwatch = handle.watch(lambda data, repaint: screens.append((data, repaint)))
            await until(lambda: screens and screens[0][1], "a repaint")
            assert b"Claude Code v2.1.332" in screens[0][0]
            await handle.send("b", False)  # a key of the scripted agent's, not a task
            card = await until(lambda: handle.card["state"] == "blocked" and handle.card, "card blocked")
            assert any(b"Do you want to proceed?" in data for data, repaint in screens if not repaint)
            unwatch()

            with pytest.raises(RemoteError) as refused:
                await handle.send("oops", True)
            assert refused.value.kind == "pane_blocked"
            assert refused.value.data["prompt"]["fingerprint"] == card["prompt"]["fingerprint"]
            with pytest.raises(RemoteError) as refused:
                await handle.keys(b"1", False)  # the board's live view cannot type into a dialog
            assert refused.value.kind == "pane_blocked"
            with pytest.raises(RemoteError) as refused:
                await handle.answer("1", "0000000000000000")
            assert refused.value.kind == "prompt_changed"
            assert not any(line.startswith("answered") for line in lines())
            result = await handle.answer("1", card["prompt"]["fingerprint"])
            assert result["cleared"] is True and result["option"]["label"] == "Yes"
            assert lines()[-1] == "answered 1 rm -rf build/"

            # Two sends pipelined on the link's connection: "d" draws the dialog 30 ms later, and the pane's
            # own guard must not let the "1" behind it answer that dialog.
            await until(lambda: handle.card["state"] == "idle", "idle after the answer")
            first, second = await asyncio.gather(handle.send("d", False), handle.send("1", True),
                                                 return_exceptions=True)
            assert isinstance(first, dict) and isinstance(second, RemoteError), (first, second)
            assert second.kind in ("pane_blocked", "pane_busy"), second
            card = await until(lambda: handle.card["state"] == "blocked" and handle.card, "the dialog waits")
            assert lines().count("answered 1 rm -rf build/") == 1
            await handle.answer("1", card["prompt"]["fingerprint"])
            await until(lambda: handle.card["state"] == "idle", "idle again")
        finally:
            await daemon.close()

        # The daemon died: the pane goes on, the link waits quietly.
        await until(lambda: not link.connected, "link noticed")
        pane.write(b"w")
        await until(lambda: pane.state.state == "working", "pane still detected without a daemon")

        again = Daemon()
        await again.start()
        try:
            handle = await until(lambda: remote(again), "registered again", timeout=20)
            # Listed by the daemon before its reply reaches the link: the link counts on the reply.
            await until(lambda: link.registrations == 2, "the link saw its registration confirmed")
            await until(lambda: handle.card["state"] == "working", "current state on the new daemon")
        finally:
            await link.close()
            await pane.close()
            await until(lambda: handle.card["state"] == "exited", "the card says the run ended")
            await again.close()

    run(body)


def test_attach_protocol_over_the_socket(tmp_path: Path) -> None:
    """What `panewatch attach` relies on: repaint, stream, keys as an attached user, card updates."""
    async def body() -> None:
        daemon = Daemon()
        await daemon.start()
        try:
            log = tmp_path / "agent.log"
            made = await client.call("new", argv=[sys.executable, str(AGENT), str(log)], agent="claude", name="a")
            pane_id = made["card"]["id"]
            await until(lambda: daemon.hub.panes[pane_id].card["rule"] == "shortcuts-footer", "drawn, idle")
            peer = await client.connect()
            events: list[tuple[str, dict[str, Any]]] = []
            peer.on_notify = lambda op, msg: events.append((op, msg))
            peer.start()
            await peer.request("attach", pane=pane_id)
            await until(lambda: any(op == "screen" and m["repaint"] for op, m in events), "repaint")
            peer.notify("keys", pane=pane_id, data=base64.b64encode(b"b").decode())
            await until(lambda: any(op == "card" and m["card"]["state"] == "blocked" for op, m in events), "blocked")
            # Attached, the user sees the whole dialog: a key may answer it (unlike the board's view).
            peer.notify("keys", pane=pane_id, data=base64.b64encode(b"3").decode())
            await until(lambda: log.exists() and "answered 3" in log.read_text(), "answered by a key")
            peer.notify("detach")
            await peer.close()
        finally:
            await daemon.close()

    run(body)


def test_a_dropped_link_comes_back_as_the_same_pane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PANEWATCH_BOARD", "connect")

    async def body() -> None:
        daemon = Daemon()
        await daemon.start()
        pane = LivePane([sys.executable, str(AGENT), str(tmp_path / "log")], pane_id="run-7", agent="claude")
        link = BoardLink(pane)
        pane.start()
        link.start()
        try:
            first = await until(lambda: remote(daemon), "registered")
            assert link.peer is not None
            link.peer.writer.close()  # the connection drops; the daemon and the pane live on
            await until(lambda: first.card["state"] == "exited", "the card notices")
            second = await until(lambda: (h := remote(daemon)) is not first and h, "registered again")
            assert second.id == first.id and len(daemon.hub.panes) == 1
            await until(lambda: second.card["state"] == "idle", "live again")
        finally:
            await link.close()
            await pane.close()
            await daemon.close()

    run(body)


def test_the_board_resizes_a_run_pane_up_to_its_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A board resize (the user's "fit" click) reaches the pty of a `run` pane, clamped to the terminal that
    shows it; a pane whose link has no terminal refuses, saying why."""
    import fcntl
    import struct
    import termios

    monkeypatch.setenv("PANEWATCH_BOARD", "connect")
    terminal = [(100, 30)]

    def pty_size(pane: LivePane) -> tuple[int, int]:
        assert pane._session is not None
        rows, cols = struct.unpack("HHHH", fcntl.ioctl(pane._session.master_fd, termios.TIOCGWINSZ, b"\0" * 8))[:2]
        return cols, rows

    async def body() -> None:
        pane = LivePane([sys.executable, str(AGENT), str(tmp_path / "agent.log")], pane_id="run-7", agent="claude",
                        headless=True, cols=100, rows=30)
        other = LivePane([sys.executable, str(AGENT), str(tmp_path / "other.log")], pane_id="run-8", agent="claude",
                         headless=True)
        link = BoardLink(pane, terminal_size=lambda: terminal[0])
        unsized = BoardLink(other)
        daemon = Daemon()
        await daemon.start()
        try:
            for p, lk in ((pane, link), (other, unsized)):
                p.start()
                lk.start()
            await until(lambda: len([h for h in daemon.hub.panes.values() if isinstance(h, RemotePane)]) == 2,
                        "both run panes registered")
            handles = {h.card["name"]: h for h in daemon.hub.panes.values() if isinstance(h, RemotePane)}
            handle = handles["run-7"]
            await handle.resize(60, 20)
            assert pty_size(pane) == (60, 20) and (pane.screen.cols, pane.screen.rows) == (60, 20)
            await until(lambda: (handle.card["cols"], handle.card["rows"]) == (60, 20), "the card's new size")
            await handle.resize(200, 50)  # larger than the user's terminal: the terminal's size
            assert pty_size(pane) == (100, 30)
            with pytest.raises(RemoteError) as refused:
                await handles["run-8"].resize(60, 20)
            assert refused.value.kind == "not_resizable"
        finally:
            for lk in (link, unsized):
                await lk.close()
            for p in (pane, other):
                await p.close()
            await daemon.close()

    run(body)
