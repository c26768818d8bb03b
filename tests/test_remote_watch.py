"""runtime/remote.py through a real sshd to a real "remote" tmux: discovery with HOST:%ID ids, identity from
tmux's formats, a dialog answered and a send refused through the guard, the link killed (the ssh master
killed; separately sshd stopped) -> every pane unreachable -> reconnect -> resynchronised, a host that
refuses the key, two hosts at once."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from panewatch.core.machine import StateChange
from panewatch.errors import KeyRefusedError, PaneBlockedError, PaneNotResyncedError
from panewatch.runtime.guard import InputGuard
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.remote import LinkChange, RemotePane, RemoteServer, RemoteWatcher
from panewatch.runtime.ssh import SshOptions, ssh_options
from panewatch.runtime.tmux_watch import TmuxPane
from panewatch.testing.sshd import Sshd
from tmuxutil import DIALOG, SHOW_DIALOG, agent_cmd, until

HERE = Path(__file__).parent
ANSWERING = agent_cmd("answer", DIALOG)
FAST = (0.2, 0.5, 1.0)  # reconnection backoff for tests

pytestmark = pytest.mark.needs("ssh", "tmux")  # tests/components.py: fail without them unless PANEWATCH_SKIP


class Seen:
    def __init__(self) -> None:
        self.changes: dict[str, list[StateChange]] = {}
        self.panes: dict[str, RemotePane] = {}
        self.links: list[LinkChange] = []

    def added(self, pane: TmuxPane) -> None:
        assert isinstance(pane, RemotePane)
        self.panes[pane.board_id] = pane
        self.changes.setdefault(pane.board_id, [])
        pane.subscribe(lambda change: self.changes[pane.board_id].append(change))

    def states(self, board_id: str) -> list[str]:
        return [c.new.state for c in self.changes.get(board_id, [])]

    def last(self, board_id: str) -> str | None:
        states = self.states(board_id)
        return states[-1] if states else None


def watcher_for(sshd: Sshd, seen: Seen, alias: str | None = None, name: str = "") -> RemoteWatcher:
    server = RemoteServer(host=alias or sshd.alias, name=name, ssh=SshOptions(config_file=str(sshd.ssh_config)))
    return RemoteWatcher(server, ManifestWatcher(), on_added=seen.added, on_link=seen.links.append, backoff=FAST)


def watching(sshd: Sshd, body: Callable[[RemoteWatcher, Seen], Awaitable[None]]) -> None:
    async def main() -> None:
        seen = Seen()
        watcher = watcher_for(sshd, seen)
        await watcher.start()
        try:
            await body(watcher, seen)
        finally:
            await watcher.close()

    asyncio.run(asyncio.wait_for(main(), 120))


def pane_id(sshd: Sshd, target: str) -> str:
    return sshd.tmux("display-message", "-p", "-t", target, "#{pane_id}").strip()


def master_pid(sshd: Sshd) -> int:
    check = subprocess.run([*ssh_options(SshOptions(config_file=str(sshd.ssh_config)), sshd.alias), "-O", "check", "--",
                            sshd.alias], capture_output=True, text=True, timeout=10)
    found = re.search(r"pid=(\d+)", check.stderr)
    assert found, check.stderr
    return int(found.group(1))


def test_discovery_names_panes_by_host_and_identity_comes_from_tmux(sshd: Sshd, tmp_path: Path) -> None:
    agent = tmp_path / "claude"  # a process tmux will call "claude": identity from pane_current_command
    agent.symlink_to("/bin/sleep")
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", SHOW_DIALOG)
    sshd.tmux("new-window", "-d", "-t", "work", "-n", "agent", f"{agent} 600")
    sshd.tmux("new-window", "-d", "-t", "work", "-n", "shell", "sh")
    dialog, named, shell = (pane_id(sshd, f"work:{w}") for w in ("0", "agent", "shell"))

    async def body(watcher: RemoteWatcher, seen: Seen) -> None:
        await until(lambda: seen.last(f"devbox:{dialog}") == "blocked", 10, "the dialog pane blocked")
        change = seen.changes[f"devbox:{dialog}"][-1]
        assert change.pane == f"devbox:{dialog}" and change.as_json()["pane"] == f"devbox:{dialog}"
        assert seen.panes[f"devbox:{dialog}"].target == "devbox:work:0.0"
        await until(lambda: f"devbox:{named}" in seen.panes and seen.panes[f"devbox:{named}"].agent == "claude", 10,
                    "the agent named by tmux's pane_current_command")
        pane = seen.panes[f"devbox:{shell}"]
        assert pane.agent is None and pane.pid is None  # a remote pid is never looked up here
        # tmux's subscription tells us when the pane's command changes (no poll on either side)
        sshd.tmux("send-keys", "-t", shell, f"exec {agent} 600", "Enter")
        await until(lambda: pane.agent == "claude", 10, "the subscription's news")
        assert len(watcher.clients) == 1

    watching(sshd, body)


def test_a_dialog_is_answered_and_a_send_refused_through_the_guard(sshd: Sshd) -> None:
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", ANSWERING)
    target = f"devbox:{pane_id(sshd, 'work:0')}"

    async def body(watcher: RemoteWatcher, seen: Seen) -> None:
        await until(lambda: seen.last(target) == "blocked", 10, "the dialog")
        guard = InputGuard(seen.panes[target], pane_id=target)
        with pytest.raises(PaneBlockedError, match=re.escape(target)):
            await guard.send("rm -rf build")
        result = await guard.answer(1, guard.prompt().fingerprint, timeout=10)
        assert result.cleared, result
        assert "answered 1" in sshd.tmux("capture-pane", "-p", "-t", target.split(":", 1)[1])

    watching(sshd, body)


def _reconnects(sshd: Sshd, cut: Callable[[], None], restore: Callable[[], None]) -> None:
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", SHOW_DIALOG)
    sshd.tmux("new-session", "-d", "-s", "other", "-x", "100", "-y", "30", "sleep 600")
    dialog, other = f"devbox:{pane_id(sshd, 'work:0')}", f"devbox:{pane_id(sshd, 'other:0')}"

    async def body(watcher: RemoteWatcher, seen: Seen) -> None:
        await until(lambda: seen.last(dialog) == "blocked" and seen.last(other) == "idle", 10, "both panes")
        cut()
        await until(lambda: seen.last(dialog) == "unreachable" and seen.last(other) == "unreachable", 15,
                    "every pane of the host unreachable")
        assert seen.changes[dialog][-1].new.source == "link"
        with pytest.raises(PaneNotResyncedError):
            await InputGuard(seen.panes[dialog], pane_id=dialog).send("hello")
        restore()
        await until(lambda: seen.last(dialog) == "blocked" and seen.last(other) == "idle", 20,
                    "resynchronised states after the reconnect")
        assert seen.panes[dialog].synced and watcher.link_up and watcher.reconnects >= 1
        ups = [link for link in seen.links if link.up]
        assert ups and ups[-1].away is not None and ups[-1].away > 0
        assert seen.states(dialog)[-2:] == ["unreachable", "blocked"]  # never a stale state in between

    watching(sshd, body)


def test_the_ssh_client_killed_then_reconnected_and_resynced(sshd: Sshd) -> None:
    import os
    import signal

    _reconnects(sshd, lambda: os.kill(master_pid(sshd), signal.SIGKILL), lambda: None)


def test_sshd_stopped_then_started_again(sshd: Sshd) -> None:
    _reconnects(sshd, sshd.stop, sshd.start)


def test_a_host_refusing_the_key_is_named_and_other_hosts_go_on(sshd: Sshd) -> None:
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", SHOW_DIALOG)
    dialog = f"devbox:{pane_id(sshd, 'work:0')}"

    async def main() -> None:
        seen = Seen()
        good, bad = watcher_for(sshd, seen), watcher_for(sshd, seen, alias=f"{sshd.alias}-badkey")
        results: list[Any] = await asyncio.gather(good.start(), bad.start(), return_exceptions=True)
        try:
            assert results[0] is None
            assert isinstance(results[1], KeyRefusedError)
            assert str(results[1]).startswith("devbox-badkey: it refused every key")
            await until(lambda: seen.last(dialog) == "blocked", 10, "the good host's pane")
            assert not [p for p in seen.panes if p.startswith("devbox-badkey:")]
        finally:
            await good.close()
            await bad.close()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_two_hosts_at_once_same_tmux_ids_distinct_board_ids(tmp_path: Path) -> None:
    with Sshd(tmp_path / "a", alias="alpha") as a, Sshd(tmp_path / "b", alias="beta") as b:
        a.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", SHOW_DIALOG)
        b.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", "sleep 600")
        assert pane_id(a, "work:0") == pane_id(b, "work:0") == "%0"

        async def main() -> None:
            seen = Seen()
            alpha, beta = watcher_for(a, seen), watcher_for(b, seen)
            await asyncio.gather(alpha.start(), beta.start())
            try:
                await until(lambda: seen.last("alpha:%0") == "blocked" and seen.last("beta:%0") == "idle", 10,
                            "both hosts' panes")
                a.stop()  # one host's link dies: only its panes change
                await until(lambda: seen.last("alpha:%0") == "unreachable", 15, "alpha unreachable")
                assert seen.states("beta:%0") == ["idle"]
                b.tmux("new-window", "-d", "-t", "work", SHOW_DIALOG)
                await until(lambda: seen.last("beta:%1") == "blocked", 10, "beta goes on while alpha is down")
            finally:
                await asyncio.gather(alpha.close(), beta.close())

        asyncio.run(asyncio.wait_for(main(), 90))


def test_panes_over_several_control_clients_all_stream(sshd: Sshd) -> None:
    """More panes than one control client takes (tmux_watch.PANES_PER_CLIENT): every client's panes keep
    streaming (a client given panes while its attach was still on its way over ssh once went silent)."""
    from panewatch.runtime.tmux_watch import PANES_PER_CLIENT

    count = 2 * PANES_PER_CLIENT + 2
    redraw = "printf '\\033[2J\\033[Hworking'"
    blink = agent_cmd("sh", f"sleep 2; while :; do cat {shlex.quote(str(DIALOG))}; sleep 1; {redraw}; sleep 1; done")
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", blink)
    for _ in range(count - 1):
        sshd.tmux("new-window", "-d", "-t", "work", blink)

    async def body(watcher: RemoteWatcher, seen: Seen) -> None:
        await until(lambda: len(seen.panes) == count, 20, "every pane")
        await until(lambda: all(seen.states(p).count("blocked") >= 2 for p in seen.panes), 30,
                    "every pane blocked twice (its output keeps coming)")
        assert len(watcher.clients["$0"]) == 3

    watching(sshd, body)


@contextlib.contextmanager
def frozen_link(sshd: Sshd) -> Iterator[Callable[[], None]]:
    """The server's side of every ssh connection stopped (SIGSTOP): a link that hangs without dropping. Yields
    `thaw`, which resumes them; they are resumed on the way out whatever happened."""
    import os
    import signal

    stopped = sshd.sessions()
    assert stopped, "no ssh connection to freeze"
    for proc in stopped:
        os.kill(proc.pid, signal.SIGSTOP)

    def thaw() -> None:
        for proc in stopped:
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGCONT)
        stopped.clear()

    try:
        yield thaw
    finally:
        thaw()


def test_a_silent_link_is_noticed_by_the_keepalives(sshd: Sshd) -> None:
    """No FIN, no RST: the server's side of the connection frozen (SIGSTOP). ssh's keepalives give up after
    alive_interval * alive_count seconds and the panes turn unreachable; thawed, a new connection resyncs."""
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", SHOW_DIALOG)
    board_id = f"devbox:{pane_id(sshd, 'work:0')}"

    async def main() -> None:
        seen = Seen()
        options = SshOptions(config_file=str(sshd.ssh_config), alive_interval=1, alive_count=2, connect_timeout=2)
        watcher = RemoteWatcher(RemoteServer(host=sshd.alias, ssh=options), ManifestWatcher(), on_added=seen.added,
                                on_link=seen.links.append, backoff=FAST)
        await watcher.start()
        try:
            await until(lambda: seen.last(board_id) == "blocked", 10, "the dialog")
            with frozen_link(sshd):
                await until(lambda: seen.last(board_id) == "unreachable", 15, "unreachable by keepalive")
            await until(lambda: seen.last(board_id) == "blocked", 30, "resynchronised")
        finally:
            await watcher.close()

    asyncio.run(asyncio.wait_for(main(), 90))


def test_a_hung_link_refuses_a_send_instead_of_typing_it_into_the_dialog_drawn_meanwhile(sshd: Sshd) -> None:
    """Issue 23, item 2: the link hangs without dropping (the per-connection sshd stopped: a suspended laptop,
    a roaming network), the remote agent opens its dialog, the board still shows idle. `send PANE 1` was typed
    into the link and answered the dialog when it resumed (5 of 5). Now the round trip before the write gets no
    answer within ROUND_TRIP_TIMEOUT and the send is refused; the dialog is still there when the link resumes."""
    from panewatch.runtime.tmux_watch import ROUND_TRIP_TIMEOUT

    idle_then_dialog = f"printf 'ready> '; read line; exec {ANSWERING}"
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", idle_then_dialog)
    tmux_id = pane_id(sshd, "work:0")
    board_id = f"devbox:{tmux_id}"

    async def main() -> None:
        seen = Seen()
        options = SshOptions(config_file=str(sshd.ssh_config), alive_interval=10, alive_count=3)  # not noticed
        watcher = RemoteWatcher(RemoteServer(host=sshd.alias, ssh=options), ManifestWatcher(), on_added=seen.added,
                                on_link=seen.links.append, backoff=FAST)
        await watcher.start()
        try:
            await until(lambda: seen.last(board_id) == "idle" and seen.panes[board_id].seeded, 10, "the idle pane")
            pane = seen.panes[board_id]
            guard = InputGuard(pane, pane_id=board_id)
            with frozen_link(sshd) as thaw:
                sshd.tmux("send-keys", "-t", tmux_id, "go", "Enter")  # on the host, not through the link
                deadline = asyncio.get_running_loop().time() + 10
                while "Do you want" not in sshd.tmux("capture-pane", "-p", "-t", tmux_id):
                    assert asyncio.get_running_loop().time() < deadline, "the dialog never opened on the host"
                    await asyncio.sleep(0.05)
                assert seen.last(board_id) == "idle" and watcher.link_up  # the stale screen, the link not yet dead
                started = asyncio.get_running_loop().time()
                with pytest.raises(PaneNotResyncedError, match=rf"pane {re.escape(board_id)}: tmux on devbox did "
                                                               "not confirm that its screen here is current"):
                    await guard.send("1")
                print(f"refused after {asyncio.get_running_loop().time() - started:.2f} s "
                      f"(ROUND_TRIP_TIMEOUT {ROUND_TRIP_TIMEOUT:g} s)")
                thaw()
                await until(lambda: seen.last(board_id) == "blocked", 15, "the dialog seen once the link resumed")
            assert "answered" not in sshd.tmux("capture-pane", "-p", "-t", tmux_id)
        finally:
            await watcher.close()

    asyncio.run(asyncio.wait_for(main(), 90))
