"""runtime/tmux_watch.py with many panes and sessions, against a real tmux (private socket per test):
every missing control client attaches at once, every pane is seen and judged, a dialog drawn before
the watcher came is blocked as the pane's first state, one client per session holds the
current-command subscription (and hands it on when it goes)."""

from __future__ import annotations

import asyncio
import time

import pytest

from panewatch.runtime import tmux_watch
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.tmux import ControlClient
from panewatch.runtime.tmux_watch import TmuxWatcher, clients_for
from test_tmux_watch import Seen
from tmuxutil import SHOW_DIALOG, Tmux, until
from tmuxutil import tmux as tmux

pytestmark = pytest.mark.needs("tmux")

PER_CLIENT = 4  # small, so that a few dozen panes need several clients per session


def test_many_sessions_attach_at_once_and_every_pane_is_seen(tmux: Tmux, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tmux_watch, "PANES_PER_CLIENT", PER_CLIENT)
    sizes = {"big": 13, "mid": 6, "one": 1}  # 4 + 2 + 1 clients
    script = []
    for name, count in sizes.items():
        tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "32", "sleep 600")
        script += [f"new-window -d -t {name}: 'sleep 600'\n" for _ in range(count - 1)]
    (tmux.conf.parent / "build.tmux").write_text("".join(script))
    tmux("source-file", str(tmux.conf.parent / "build.tmux"))
    tmux("new-window", "-d", "-t", "mid:", "-n", "dialog", SHOW_DIALOG)  # mid: 7 panes, still 2 clients
    dialog = tmux("display-message", "-p", "-t", "mid:dialog", "#{pane_id}")
    deadline = time.monotonic() + 10
    while "Do you want" not in tmux("capture-pane", "-p", "-t", dialog):
        assert time.monotonic() < deadline, "the dialog never showed in tmux"
        time.sleep(0.05)
    everyone = set(tmux("list-panes", "-a", "-F", "#{pane_id}").split())
    in_flight, most = 0, 0
    real_start = ControlClient.start

    async def counted(self: ControlClient, timeout: float = 5.0) -> None:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            await real_start(self, timeout)
        finally:
            in_flight -= 1

    monkeypatch.setattr(ControlClient, "start", counted)

    async def main() -> None:
        seen = Seen()
        watcher = TmuxWatcher(tmux.server, ManifestWatcher(), on_added=seen.added)
        await watcher.start()
        try:
            assert most == sum(clients_for(n) for n in (13, 7, 1)) == 7  # every attach under way at once
            await until(lambda: set(watcher.panes) == everyone and all(p.seeded for p in watcher.panes.values()),
                        20, "every pane seen and seeded")
            assert all(seen.states(p) for p in everyone)  # each judged: a first state published
            assert seen.states(dialog)[0] == "blocked"
            by_session = {info.session_id for info in (p.info for p in watcher.panes.values())}
            for session in by_session:
                clients = watcher.clients[session]
                panes = [p for p in watcher.panes.values() if p.info.session_id == session]
                assert len(clients) == clients_for(len(panes))
                assert all(p.client in clients for p in panes)
                assert max(sum(p.client is c for p in panes) for c in clients) <= PER_CLIENT
                assert watcher.subscribers[session] in clients  # one holder per session
            assert len(watcher.subscribers) == len(by_session) == 3
        finally:
            await watcher.close()

    asyncio.run(asyncio.wait_for(main(), 90))


def test_the_subscription_moves_to_another_client_when_its_holder_goes(tmux: Tmux,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tmux_watch, "PANES_PER_CLIENT", PER_CLIENT)
    tmux("new-session", "-d", "-s", "a", "sleep 600")
    for _ in range(2 * PER_CLIENT - 1):
        tmux("new-window", "-d", "-t", "a:", "sleep 600")
    session = tmux("display-message", "-p", "-t", "a", "#{session_id}")

    async def main() -> None:
        watcher = TmuxWatcher(tmux.server, ManifestWatcher())
        await watcher.start()
        try:
            await until(lambda: len(watcher.panes) == 2 * PER_CLIENT and all(p.seeded for p in watcher.panes.values()),
                        10, "the panes")
            holder = watcher.subscribers[session]
            await holder.close()  # as if tmux dropped that client
            await until(lambda: session in watcher.subscribers and watcher.subscribers[session] is not holder
                        and not watcher.subscribers[session].closed.is_set(), 10, "a new holder")
            await until(lambda: all(p.client is not holder and p.seeded for p in watcher.panes.values()), 10,
                        "its panes watched by the others")
        finally:
            await watcher.close()

    asyncio.run(asyncio.wait_for(main(), 90))
