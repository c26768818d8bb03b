"""Guarded input into tmux panes and the pane list's trust, against a real tmux (issue 23, items 1, 6, 9):
synchronize-panes copying keys into another pane's dialog, a send right after `copy-mode`, a server restarted
at once on the same socket, a respawned pane, a process name that splits the pane list, a daemon without a
UTF-8 locale. Each scene is made with blocking tmux calls, so the watcher reads nothing of it before the write
(no tmux notification is awaited: only the round trip before the write can know)."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from panewatch.board.endpoint import PaneEndpoint
from panewatch.board.rpc import RemoteError
from panewatch.core.tmux_formats import TEXT_REPLACEMENT
from panewatch.core.tmux_protocol import Event, Notification
from panewatch.errors import AgentExitedError, NotBlockedError, PaneInModeError, PaneSynchronizedError
from panewatch.runtime.guard import InputGuard
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.tmux import ControlClient
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher
from tmuxutil import DIALOG, SHOW_DIALOG, Tmux, agent_cmd, until
from tmuxutil import tmux as tmux

HERE = Path(__file__).parent
ANSWERING = agent_cmd("answer", DIALOG)

pytestmark = pytest.mark.needs("tmux")


def watching(tmux: Tmux, body: Callable[[TmuxWatcher, list[Event]], Awaitable[None]]) -> None:
    """Run `body` with a watcher of the test's server; every event its clients read is kept, in order."""
    async def main() -> None:
        events: list[Event] = []
        watcher = TmuxWatcher(tmux.server, ManifestWatcher())
        handle = watcher._on_event

        def record(client: ControlClient, event: Event) -> None:
            events.append(event)
            handle(client, event)

        watcher._on_event = record  # type: ignore[method-assign]  # before start: the clients take this one
        await watcher.start()
        try:
            await body(watcher, events)
        finally:
            await watcher.close()

    asyncio.run(asyncio.wait_for(main(), 90))


def panes(tmux: Tmux, target: str) -> list[str]:
    return tmux("list-panes", "-t", target, "-F", "#{pane_id}").split()


def screen(tmux: Tmux, pane_id: str) -> str:
    return tmux("capture-pane", "-p", "-t", pane_id)


async def settled(watcher: TmuxWatcher, *ids: str) -> list[TmuxPane]:
    await until(lambda: all(i in watcher.panes and watcher.panes[i].seeded for i in ids), 10, f"panes {ids}")
    return [watcher.panes[i] for i in ids]


def test_synchronize_panes_refuses_keys_that_tmux_would_copy_into_another_panes_dialog(tmux: Tmux) -> None:
    """Item 1: with synchronize-panes on, `send A 1` into an idle pane A answered pane B's dialog."""
    tmux("new-session", "-d", "-s", "a", "-x", "100", "-y", "40", agent_cmd("compose"))
    tmux("split-window", "-d", "-t", "a:0", ANSWERING)
    idle, dialog = panes(tmux, "a:0")

    async def body(watcher: TmuxWatcher, events: list[Event]) -> None:
        typing, asking = await settled(watcher, idle, dialog)
        await until(lambda: asking.state.state == "blocked", 10, "the dialog")
        fingerprint = InputGuard(asking).prompt().fingerprint
        tmux("set-window-option", "-t", "a:0", "synchronize-panes", "on")  # tmux says nothing of an option
        with pytest.raises(PaneSynchronizedError, match=r"synchronize-panes on: tmux would copy these keys into "
                                                        r"the 1 other pane"):
            await InputGuard(typing, pane_id=idle).send("1")
        with pytest.raises(PaneSynchronizedError):  # confirming one dialog would answer the other panes too
            await InputGuard(asking, pane_id=dialog).answer(1, fingerprint)
        endpoint = PaneEndpoint(typing, cwd="/")  # the board's raw keys: the same path
        try:
            with pytest.raises(RemoteError) as refused:
                await endpoint.keys(b"1")
            assert refused.value.kind == "pane_synchronized"
        finally:
            endpoint.close()
        assert "answered" not in screen(tmux, dialog) and asking.state.state == "blocked"
        tmux("set-window-option", "-t", "a:0", "synchronize-panes", "off")
        await InputGuard(typing, pane_id=idle).send("hello")  # off again: typed at once, into A only
        await until(lambda: "hello" in screen(tmux, idle), 5, "the text in A")
        assert "answered" not in screen(tmux, dialog)

    watching(tmux, body)


def test_a_send_right_after_copy_mode_is_refused_not_lost(tmux: Tmux) -> None:
    """Item 9: sends right after `copy-mode` were reported typed but went to copy mode (14 of 80)."""
    tmux("new-session", "-d", "-s", "a", "-x", "100", "-y", "20", agent_cmd("compose"))
    (pane_id,) = panes(tmux, "a:0")

    async def body(watcher: TmuxWatcher, events: list[Event]) -> None:
        (pane,) = await settled(watcher, pane_id)
        guard = InputGuard(pane, pane_id=pane_id)
        for attempt in range(3):
            tmux("copy-mode", "-t", pane_id)
            assert not pane.info.in_mode  # tmux's notification is not read yet
            with pytest.raises(PaneInModeError):
                await guard.send(f"lost {attempt}")
            tmux("send-keys", "-t", pane_id, "-X", "cancel")
            await guard.send(f"typed {attempt}")  # left a moment ago: the round trip knows that too
        await until(lambda: "typed 2" in screen(tmux, pane_id), 5, "the last text")
        shown = screen(tmux, pane_id)
        assert "lost" not in shown and all(f"typed {n}" in shown for n in range(3))

    watching(tmux, body)


def test_a_server_restarted_on_the_same_socket_exits_the_old_cards_and_adopts_none(tmux: Tmux) -> None:
    """Item 6: the old card (blocked) became the new server's `%0`, and a send to it typed into the new program."""
    tmux("new-session", "-d", "-s", "a", "-x", "100", "-y", "40", SHOW_DIALOG)
    tmux("new-window", "-d", "-t", "a", "sleep 600")

    async def body(watcher: TmuxWatcher, events: list[Event]) -> None:
        old, other = await settled(watcher, "%0", "%1")
        await until(lambda: old.state.state == "blocked", 10, "the dialog")
        restart(tmux, agent_cmd("compose"))  # blocking: the watcher reads nothing of it before the new server runs
        assert panes(tmux, "a:0") == ["%0"]  # %0 again, another program
        await until(lambda: old.exited and other.exited, 10, "the old server's panes exited")
        restarted = "the tmux server exited (another one was started on its socket)"
        assert old.state.detail == other.state.detail == restarted
        (new,) = await settled(watcher, "%0")
        await until(lambda: new.kind.kind == "agent", 10, "the new program identified")
        assert new is not old and new.state.state == "idle" and new.info.server != old.info.server
        assert "%1" not in watcher.panes
        with pytest.raises(AgentExitedError):
            await InputGuard(old, pane_id="%0").send("typed into the wrong program")
        await InputGuard(new, pane_id="%0").send("into the new one")
        await until(lambda: "into the new one" in screen(tmux, "%0"), 5, "the new pane typed into")
        assert "wrong program" not in screen(tmux, "%0")

    watching(tmux, body)


def restart(tmux: Tmux, command: str) -> None:
    """Kill the server and start another on its socket at once (polling, without the event loop running, until
    the old one has let go: a client that reaches it while it exits gets "server exited unexpectedly")."""
    tmux.kill()
    deadline = time.monotonic() + 10
    while True:
        done = subprocess.run(["tmux", "-L", tmux.name, "-f", str(tmux.conf), "new-session", "-d", "-s", "a", "-x",
                               "100", "-y", "40", command], capture_output=True, text=True, timeout=20)
        if done.returncode == 0:
            return
        assert time.monotonic() < deadline, done.stderr
        time.sleep(0.01)


def test_a_respawned_pane_is_a_new_pane_and_an_answer_to_the_old_dialog_is_refused(tmux: Tmux) -> None:
    """Item 6, a pane's own process: respawn-pane leaves our screen on the old dialog (the new program draws
    nothing), and the answer bound to its fingerprint was typed into the new program."""
    tmux("new-session", "-d", "-s", "a", "-x", "100", "-y", "40", SHOW_DIALOG)
    (pane_id,) = panes(tmux, "a:0")

    async def body(watcher: TmuxWatcher, events: list[Event]) -> None:
        (old,) = await settled(watcher, pane_id)
        await until(lambda: old.state.state == "blocked", 10, "the dialog")
        fingerprint = InputGuard(old).prompt().fingerprint
        tmux("respawn-pane", "-k", "-t", pane_id, "cat")
        with pytest.raises(NotBlockedError):
            await InputGuard(old, pane_id=pane_id).answer(1, fingerprint)
        assert old.exited and old.state.detail.startswith("the tmux pane's program was replaced (pid ")
        await until(lambda: pane_id in watcher.panes and watcher.panes[pane_id] is not old
                    and watcher.panes[pane_id].seeded, 10, "the respawned pane adopted as a new one")
        assert screen(tmux, pane_id).strip() == ""  # nothing typed into `cat`

    watching(tmux, body)


def test_a_respawned_pane_running_another_program_is_noticed_without_a_write(tmux: Tmux) -> None:
    """tmux's current-command subscription names another program: the pane's info is read again, and a pane
    whose process changed is exited and adopted anew (before, its card showed the old dialog until a write)."""
    tmux("new-session", "-d", "-s", "a", "-x", "100", "-y", "40", SHOW_DIALOG)
    (pane_id,) = panes(tmux, "a:0")

    async def body(watcher: TmuxWatcher, events: list[Event]) -> None:
        (old,) = await settled(watcher, pane_id)
        await until(lambda: old.state.state == "blocked", 10, "the dialog")
        tmux("respawn-pane", "-k", "-t", pane_id, "cat")
        await until(lambda: old.exited, 10, "the old card exited")
        await until(lambda: pane_id in watcher.panes and watcher.panes[pane_id] is not old
                    and watcher.panes[pane_id].seeded, 10, "the respawned pane adopted as a new one")
        assert watcher.panes[pane_id].state.state == "idle"

    watching(tmux, body)


RENAME = """import os
fields = ["$0", "@0", "%99", "0", "0", "80", "24", "0", "0", "1", "0", "0", "0", "1", "/dev/pts/99", "claude"]
os.execv("/bin/sleep", ["x\\n" + "\\t".join(fields), "600"])
"""


def test_a_process_named_with_a_newline_neither_closes_its_pane_nor_forges_one(tmux: Tmux, tmp_path: Path) -> None:
    """Item 9: a newline in a process name split the pane list: the running pane shown closed, and the rest of
    the name read as another pane (`%99` here, a forged "claude"). tmux now replaces control characters in every
    free-text field, in the list and in the current-command subscription."""
    script = tmp_path / "rename.py"
    script.write_text(RENAME)
    tmux("new-session", "-d", "-s", "a", "-x", "100", "-y", "20", "bash --norc --noprofile")
    (pane_id,) = panes(tmux, "a:0")

    async def body(watcher: TmuxWatcher, events: list[Event]) -> None:
        (pane,) = await settled(watcher, pane_id)
        tmux("send-keys", "-t", pane_id, f"exec {shlex.quote(sys.executable)} {shlex.quote(str(script))}", "Enter")
        await until(lambda: "%99" in tmux("display-message", "-p", "-t", pane_id, "#{pane_current_command}"), 10,
                    "the process renamed")
        tmux("new-window", "-d", "-t", "a", "sleep 600")  # a structural change: the watcher lists every pane
        (added,) = [p for p in panes(tmux, "a:1")]
        await settled(watcher, added)
        assert pane_id in watcher.panes and not pane.exited, "the renamed pane was taken as closed"
        assert "%99" not in watcher.panes, "a pane forged by the process name"
        assert "\n" not in pane.info.current_command and TEXT_REPLACEMENT in pane.info.current_command
        # tmux's subscription to the current command: one notification, one line
        await until(lambda: any(isinstance(e, Notification) and e.name == "subscription-changed" and pane_id in e.args
                                and b"x" in e.line.partition(b" : ")[2] for e in events), 10, "the subscription")
        assert not [e for e in events if isinstance(e, Notification) and e.name == "" and b"%99" in e.line], \
            "the rest of the name read as a line of its own"

    watching(tmux, body)


def test_panes_are_listed_when_the_watcher_has_no_utf8_locale(tmux: Tmux, monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon started without a UTF-8 locale (LANG=C) saw no pane: tmux wrote the list's tabs as `_`."""
    tmux("new-session", "-d", "-s", "a", "-x", "100", "-y", "40", SHOW_DIALOG)  # the user's server, from UTF-8
    monkeypatch.setenv("LC_ALL", "C")
    monkeypatch.setenv("LANG", "C")
    (pane_id,) = panes(tmux, "a:0")

    async def body(watcher: TmuxWatcher, events: list[Event]) -> None:
        (pane,) = await settled(watcher, pane_id)
        await until(lambda: pane.state.state == "blocked", 10, "the dialog")

    watching(tmux, body)


def test_a_pane_list_with_an_unreadable_line_takes_no_pane_as_closed(tmux: Tmux) -> None:
    """What an unreadable line hides is unknown, not closed: a pane missing from such a listing stays (a line
    tmux split or garbled used to publish a running pane `exited`)."""
    tmux("new-session", "-d", "-s", "a", "-x", "100", "-y", "40", SHOW_DIALOG)
    tmux("new-window", "-d", "-t", "a", "sleep 600")

    async def body(watcher: TmuxWatcher, events: list[Event]) -> None:
        dialog, _ = await settled(watcher, "%0", "%1")
        listing = watcher._list_panes

        async def garbled() -> list[bytes] | None:
            lines = await listing()
            assert lines is not None
            return [line if line.split(b"\t")[2:3] != [b"%0"] else line[:20] for line in lines]  # %0's cut short

        watcher._list_panes = garbled  # type: ignore[method-assign]
        await watcher.resync()
        assert "%0" in watcher.panes and not dialog.exited
        watcher._list_panes = listing  # type: ignore[method-assign]
        tmux("kill-pane", "-t", "%0")  # a readable listing without it: closed
        await until(lambda: dialog.exited, 10, "the closed pane")

    watching(tmux, body)
