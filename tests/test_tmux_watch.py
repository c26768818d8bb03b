"""runtime/tmux_watch.py against a real tmux server (private socket per test): discovery, a dialog on
screen before attach, panes and windows coming and going, resize, rename, server exit, a flood in one
pane, guarded input through send-keys and the copy-mode refusal."""

from __future__ import annotations

import asyncio
import shlex
import sys
import time
from collections.abc import Awaitable, Callable

import pytest

from panewatch.core.machine import StateChange
from panewatch.core.prompt import parse_prompt
from panewatch.core.screen import Screen
from panewatch.errors import PaneBlockedError, PaneInModeError, TmuxVersionError
from panewatch.runtime.guard import InputGuard
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher
from tmuxutil import DIALOG, SHOW_DIALOG, Tmux, agent_cmd, until
from tmuxutil import tmux as tmux

pytestmark = pytest.mark.needs("tmux")  # tests/components.py: fails without it unless PANEWATCH_SKIP=tmux


class Seen:
    """Every pane the watcher added, and every state change of each."""

    def __init__(self) -> None:
        self.changes: dict[str, list[StateChange]] = {}
        self.removed: list[str] = []

    def added(self, pane: TmuxPane) -> None:
        self.changes.setdefault(pane.pane_id, [])
        pane.subscribe(lambda change: self.changes[pane.pane_id].append(change))

    def states(self, pane_id: str) -> list[str]:
        return [c.new.state for c in self.changes.get(pane_id, [])]

    def last(self, pane_id: str) -> str | None:
        states = self.states(pane_id)
        return states[-1] if states else None


def watching(tmux: Tmux, body: Callable[[TmuxWatcher, Seen], Awaitable[None]]) -> None:
    async def main() -> None:
        seen = Seen()
        watcher = TmuxWatcher(tmux.server, ManifestWatcher(), on_added=seen.added,
                              on_removed=lambda pane: seen.removed.append(pane.pane_id))
        await watcher.start()
        try:
            await body(watcher, seen)
        finally:
            await watcher.close()

    asyncio.run(asyncio.wait_for(main(), 90))


def pane_id(tmux: Tmux, target: str) -> str:
    return tmux("display-message", "-p", "-t", target, "#{pane_id}")


def test_a_dialog_on_screen_before_attach_is_blocked_on_discovery(tmux: Tmux) -> None:
    tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", SHOW_DIALOG)
    tmux("new-window", "-d", "-t", "work", "-n", "plain", "sleep 600")
    dialog, plain = pane_id(tmux, "work:0"), pane_id(tmux, "work:plain")
    deadline = time.monotonic() + 10
    while "Do you want" not in tmux("capture-pane", "-p", "-t", dialog):
        assert time.monotonic() < deadline, "the dialog never showed in tmux"
        time.sleep(0.05)

    async def body(watcher: TmuxWatcher, seen: Seen) -> None:
        # blocked as the pane's FIRST state: seeded from tmux's screen, judged at once
        await until(lambda: seen.states(dialog), 5, "the dialog pane's first state")
        assert seen.states(dialog)[0] == "blocked"
        assert watcher.panes[dialog].target == "work:0.0"
        await until(lambda: seen.states(plain), 5, "the plain pane's first state")
        assert seen.last(plain) == "idle" and watcher.panes[plain].agent is None
        assert len(watcher.clients) == 1

    watching(tmux, body)


def test_windows_splits_renames_resizes_and_kills_are_followed(tmux: Tmux) -> None:
    tmux("new-session", "-d", "-s", "a", "-x", "120", "-y", "32", "sleep 600")

    async def body(watcher: TmuxWatcher, seen: Seen) -> None:
        first = pane_id(tmux, "a:0")
        await until(lambda: first in watcher.panes and watcher.panes[first].seeded, 5, "the first pane")
        tmux("new-window", "-d", "-t", "a", "-n", "two", SHOW_DIALOG)
        second = pane_id(tmux, "a:two")
        await until(lambda: seen.last(second) == "blocked", 10, "the new window's dialog")
        tmux("split-window", "-d", "-t", "a:0", "sleep 600")
        split = tmux("list-panes", "-t", "a:0", "-F", "#{pane_id}").split()[-1]
        await until(lambda: split in watcher.panes, 5, "the split pane")
        await until(lambda: watcher.panes[first].screen.rows < 32, 5, "the split's new size")
        tmux("resize-window", "-t", "a:0", "-x", "90", "-y", "20")
        await until(lambda: watcher.panes[first].screen.cols == 90, 5, "the resize")
        tmux("rename-window", "-t", "a:two", "renamed")
        tmux("rename-session", "-t", "a", "b")
        await until(lambda: watcher.panes[second].target == "b:1.0", 5, "the renames")
        tmux("kill-pane", "-t", split)
        await until(lambda: split in seen.removed, 5, "the killed pane")
        assert seen.last(split) == "exited"
        assert seen.changes[split][-1].new.detail == "the tmux pane was closed"
        tmux("new-session", "-d", "-s", "other", "sleep 600")
        other = pane_id(tmux, "other:0")
        await until(lambda: other in watcher.panes and watcher.panes[other].seeded, 5, "a new session's pane")
        assert len(watcher.clients) == 2
        tmux("kill-session", "-t", "other")
        await until(lambda: other in seen.removed and len(watcher.clients) == 1, 5, "the session's end")

    watching(tmux, body)


def test_server_exit_reports_every_pane_exited(tmux: Tmux) -> None:
    tmux("new-session", "-d", "-s", "a", "sleep 600")
    tmux("new-session", "-d", "-s", "b", SHOW_DIALOG)

    async def body(watcher: TmuxWatcher, seen: Seen) -> None:
        await until(lambda: len(watcher.panes) == 2 and all(p.seeded for p in watcher.panes.values()), 5, "panes")
        ids = list(watcher.panes)
        tmux.kill()
        await until(lambda: not watcher.panes, 5, "the panes to go with the server")
        for pid in ids:
            assert seen.last(pid) == "exited"
            assert seen.changes[pid][-1].new.detail == "the tmux server exited"
        assert not watcher.clients and not watcher.server_alive

    watching(tmux, body)


def test_an_agent_that_exits_back_to_its_shell_is_exited(tmux: Tmux) -> None:
    # the shell runs a program the manifests know by name (a symlink named `claude` to sleep)
    tmux("new-session", "-d", "-s", "a", "bash --norc --noprofile")
    shell = pane_id(tmux, "a:0")

    async def body(watcher: TmuxWatcher, seen: Seen) -> None:
        await until(lambda: shell in watcher.panes and watcher.panes[shell].seeded, 5, "the shell pane")
        pane = watcher.panes[shell]
        link = f"/tmp/{tmux.name}/claude"
        tmux("send-keys", "-t", shell, f"mkdir -p /tmp/{tmux.name} && ln -sf $(command -v sleep) {link} && "
             f"cat {shlex.quote(str(DIALOG))} && {link} 2; clear", "Enter")
        await until(lambda: pane.agent == "claude" and pane.state.state == "blocked", 10, "the agent by its process")
        await until(lambda: pane.state.state == "exited", 10, "exited once the shell is back")
        assert pane.state.source == "process"

    watching(tmux, body)


def test_a_flood_in_one_pane_does_not_hold_up_another(tmux: Tmux) -> None:
    flood = f"{shlex.quote(sys.executable)} -c \"import sys\nwhile True: sys.stdout.write('x' * 4000 + chr(10))\""
    tmux("new-session", "-d", "-s", "a", "-x", "120", "-y", "32", flood)
    tmux("split-window", "-d", "-t", "a", "sleep 1; " + SHOW_DIALOG)
    noisy, quiet = tmux("list-panes", "-t", "a", "-F", "#{pane_id}").split()

    async def body(watcher: TmuxWatcher, seen: Seen) -> None:
        await until(lambda: seen.last(quiet) == "blocked", 15, "the quiet pane's dialog under the flood")
        started = time.monotonic()
        tmux("display-message", "-p", "#{pane_id}")  # tmux still answers at once (nothing stalls it)
        print(f"tmux answered in {time.monotonic() - started:.3f} s during the flood")
        assert watcher.panes[noisy].seeded

    watching(tmux, body)


def test_guarded_send_goes_through_send_keys_and_is_refused_while_blocked_or_in_copy_mode(tmux: Tmux) -> None:
    tmux("new-session", "-d", "-s", "a", "-x", "100", "-y", "20", agent_cmd("compose"))
    tmux("new-window", "-d", "-t", "a", SHOW_DIALOG)
    echo, dialog = pane_id(tmux, "a:0"), pane_id(tmux, "a:1")

    async def body(watcher: TmuxWatcher, seen: Seen) -> None:
        await until(lambda: seen.last(dialog) == "blocked" and echo in watcher.panes and watcher.panes[echo].seeded,
                    5, "both panes")
        guard = InputGuard(watcher.panes[echo], pane_id=echo)
        await guard.send("it's #{x} ; $HOME 'é'")
        await until(lambda: "it's #{x} ; $HOME 'é'" in tmux("capture-pane", "-p", "-t", echo), 5, "the text typed")
        with pytest.raises(PaneBlockedError):
            await InputGuard(watcher.panes[dialog], pane_id=dialog).send("yes")
        assert "yes" not in tmux("capture-pane", "-p", "-t", dialog)
        tmux("copy-mode", "-t", echo)
        await until(lambda: watcher.panes[echo].info.in_mode, 5, "copy mode noticed")
        with pytest.raises(PaneInModeError):
            await guard.send("never typed")
        tmux("send-keys", "-t", echo, "-X", "cancel")
        await until(lambda: not watcher.panes[echo].info.in_mode, 5, "copy mode left")
        await guard.send("after")
        await until(lambda: "after" in tmux("capture-pane", "-p", "-t", echo), 5, "typed after copy mode")
        assert "never typed" not in tmux("capture-pane", "-p", "-t", echo)

    watching(tmux, body)


def test_an_old_tmux_is_refused_naming_the_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from panewatch.runtime import tmux as runtime_tmux

    real = subprocess.run

    def old_tmux(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        if argv[1:] == ["-V"]:
            return subprocess.CompletedProcess(argv, 0, "tmux 3.1c\n", "")
        return real(argv, **kw)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(runtime_tmux.subprocess, "run", old_tmux)
    with pytest.raises(TmuxVersionError, match=r"tmux 3\.2 or newer.*found tmux 3\.1c"):
        runtime_tmux.check_version()


class _Looked:
    """A stand-in for a TmuxPane in LaterLooks: when it was last looked at, and its looks."""

    def __init__(self, pane_id: str, looked_at: float) -> None:
        self.pane_id, self.looked_at = pane_id, looked_at
        self.looks: list[float] = []

    def look_later(self) -> None:
        self.looked_at = asyncio.get_running_loop().time()
        self.looks.append(self.looked_at)


def test_output_soon_after_a_look_gets_one_later_look_from_one_timer_for_all_panes() -> None:
    from panewatch.runtime.tmux_watch import FOREGROUND_MIN, LOOK_SWEEP, LaterLooks

    async def main() -> None:
        loop = asyncio.get_running_loop()
        looks = LaterLooks()
        start = loop.time()
        panes = [_Looked(f"%{i}", start - 0.5 * i) for i in range(3)]  # looked at 0, 0.5 and 1 s ago
        handles_before = len(loop._scheduled)  # type: ignore[attr-defined]
        for _ in range(5):  # many outputs: still one entry each, one timer in all
            for pane in panes:
                looks.add(pane, loop)  # type: ignore[arg-type]
        assert len(loop._scheduled) == handles_before + 1  # type: ignore[attr-defined]
        looks.discard(panes[1])  # gone: never looked at
        await until(lambda: bool(panes[0].looks), 10, "the later look")
        assert [len(p.looks) for p in panes] == [1, 0, 1]
        assert panes[0].looks[0] >= start + FOREGROUND_MIN  # not before its minimum gap
        assert panes[2].looks[0] < panes[0].looks[0]  # already due: at the first sweep
        await asyncio.sleep(2 * LOOK_SWEEP)
        assert [len(p.looks) for p in panes] == [1, 0, 1] and looks._handle is None  # nothing owed: no timer
        looks.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_panes_size_is_its_own_not_its_layout_cell_with_border_status(tmux: Tmux) -> None:
    """With `pane-border-status top` a layout cell holds the border's row too (150x39 for a pane of 150x38): the
    screen takes the pane's own size, and a dialog drawn after resizes is read right (its options and all)."""
    tmux("new-session", "-d", "-s", "b", "-x", "150", "-y", "40", agent_cmd("compose"))
    tmux("set-option", "-g", "pane-border-status", "top")
    tmux("split-window", "-d", "-t", "b:0", agent_cmd("sh", "sleep 1"))
    target = pane_id(tmux, "b:0.0")

    def own() -> tuple[int, int]:
        w, h = tmux("display-message", "-p", "-t", target, "#{pane_width} #{pane_height}").split()
        return int(w), int(h)

    async def body(watcher: TmuxWatcher, seen: Seen) -> None:
        await until(lambda: target in watcher.panes and watcher.panes[target].seeded, 10, "the pane")
        pane = watcher.panes[target]
        for cols, rows in ((150, 40), (120, 33), (90, 27)):
            tmux("resize-window", "-t", "b:0", "-x", str(cols), "-y", str(rows))
            await until(lambda: (pane.screen.cols, pane.screen.rows) == own(), 10, f"the pane's size at {cols}x{rows}")
        assert (pane.screen.cols, pane.screen.rows) == own()
        tmux("respawn-pane", "-k", "-t", target, SHOW_DIALOG)  # a dialog drawn at the last size
        await until(lambda: target in watcher.panes and watcher.panes[target].state.state == "blocked", 10,
                    "the dialog")
        drawn = watcher.panes[target]
        assert (drawn.screen.cols, drawn.screen.rows) == own()
        prompt = InputGuard(drawn).prompt()
        fresh = Screen(*own())  # the same dialog drawn on a screen of the pane's own size
        fresh.feed(DIALOG.read_bytes().replace(b"\n", b"\r\n"))
        want = parse_prompt(fresh.snapshot())
        assert prompt.question == want.question == "Do you want to proceed?"
        assert [(o.number, o.label) for o in prompt.options] == [(o.number, o.label) for o in want.options] != []

    watching(tmux, body)
