"""The user's tmux hooks never run because panewatch watches (real tmux, private socket per test).

tmux runs `client-attached`, `after-capture-pane`, … for control-mode clients too, and has no flag to
leave one out: a hook that selects a window or renames one would do so each time panewatch attaches
or seeds a pane. So the watcher reads the hooks first, does not watch what they would touch (saying
so once), and watches as soon as the user guards them with #{client_control_mode}."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from panewatch.core.tmux_formats import tripping_hooks
from panewatch.runtime import tmux_watch
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher
from tmuxutil import Tmux, until
from tmuxutil import tmux as tmux

GUARD = "if -F '#{client_control_mode}' '' "


def test_tripping_hooks_are_the_set_unguarded_ones_panewatch_would_run() -> None:
    lines = ["after-bind-key", "client-attached", "client-attached[0] select-window -t :1",
             "client-attached[1] if-shell -F \"#{client_control_mode}\" '' \"select-window -t :1\"",
             "after-capture-pane[3] rename-window captured", "pane-focus-in[0] display-message hi",
             "after-send-keys[0] display-message typed",
             "client-detached[0] if -F '#{m:/dev/*,#{hook_client}}' 'rename-window detached'"]
    assert tripping_hooks(lines) == ["client-attached: select-window -t :1",
                                     "after-capture-pane: rename-window captured"]
    assert tripping_hooks([]) == []


needs_tmux = pytest.mark.needs("tmux")  # the pure test above needs none


Skipped = list[tuple[str, list[str]]]


def watch(tmux: Tmux, body: Callable[[TmuxWatcher, list[TmuxPane], Skipped], Awaitable[None]],
          attach_hooks: str = "skip") -> None:
    async def main() -> None:
        panes: list[TmuxPane] = []
        skipped: Skipped = []
        watcher = TmuxWatcher(tmux.server, ManifestWatcher(), on_added=panes.append, attach_hooks=attach_hooks,
                              on_skipped=lambda session, hooks: skipped.append((session, hooks)))
        await watcher.start()
        try:
            await body(watcher, panes, skipped)
        finally:
            await watcher.close()

    asyncio.run(asyncio.wait_for(main(), 90))


def current(tmux: Tmux, session: str = "work") -> str:
    return tmux("display-message", "-p", "-t", session, "#{window_index} #{window_name}")


@needs_tmux
def test_a_global_attach_hook_keeps_the_server_unwatched_until_it_is_guarded(
        tmux: Tmux, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tmux_watch, "HOOKS_RECHECK", 0.5)
    tmux("new-session", "-d", "-s", "work", "-n", "main", "-x", "120", "-y", "32", "sleep 600")
    tmux("new-window", "-d", "-t", "work", "-n", "other", "sleep 600")
    tmux("set-hook", "-g", "client-attached", "select-window -t :1")
    tmux("set-hook", "-g", "after-capture-pane", "rename-window captured")
    tmux("set-hook", "-g", "client-detached", "rename-window detached")

    async def body(watcher: TmuxWatcher, panes: list[TmuxPane], skipped: Skipped) -> None:
        await until(lambda: skipped, 10, "the skip said")
        assert skipped[0][0] == "" and "client-attached: select-window -t :1" in skipped[0][1]
        await asyncio.sleep(1.5)  # several rechecks and server polls: still nothing attached
        assert panes == [] and watcher.clients == {} and len(skipped) == 1  # said once
        assert current(tmux) == "0 main"  # the user's current window and names untouched
        tmux("set-hook", "-g", "client-attached", GUARD + "'select-window -t :1'")  # the user's guards
        tmux("set-hook", "-g", "after-capture-pane", GUARD + "'rename-window captured'")
        # a detach hook no longer knows the client's flags, only its name: a terminal's is its tty
        tmux("set-hook", "-g", "client-detached", "if -F '#{m:/dev/*,#{hook_client}}' 'rename-window detached'")
        await until(lambda: len(panes) == 2, 15, "both panes watched once the hooks are guarded")
        assert watcher.skipped == {}
        assert current(tmux) == "0 main"

    watch(tmux, body)
    assert current(tmux) == "0 main"  # our clients left: the guarded detach hook did not run either


@needs_tmux
def test_a_session_hook_skips_that_session_only(tmux: Tmux) -> None:
    tmux("new-session", "-d", "-s", "work", "-n", "main", "-x", "120", "-y", "32", "sleep 600")
    tmux("new-window", "-d", "-t", "work", "-n", "other", "sleep 600")
    tmux("new-session", "-d", "-s", "play", "-x", "120", "-y", "32", "sleep 600")
    tmux("set-hook", "-t", "work", "client-session-changed", "select-window -t :1")

    async def body(watcher: TmuxWatcher, panes: list[TmuxPane], skipped: Skipped) -> None:
        await until(lambda: panes and skipped, 15, "the play pane watched and work skipped")
        assert [p.target for p in panes] == ["play:0.0"]
        assert skipped == [("work", ["client-session-changed: select-window -t :1"])]
        assert current(tmux) == "0 main"

    watch(tmux, body)


@needs_tmux
def test_attach_hooks_run_is_the_users_choice(tmux: Tmux) -> None:
    """With attach_hooks="run" panewatch attaches anyway, and tmux runs the hook: why "skip" is the default."""
    tmux("new-session", "-d", "-s", "work", "-n", "main", "-x", "120", "-y", "32", "sleep 600")
    tmux("new-window", "-d", "-t", "work", "-n", "other", "sleep 600")
    tmux("set-hook", "-g", "client-attached", "select-window -t :1")

    async def body(watcher: TmuxWatcher, panes: list[TmuxPane], skipped: Skipped) -> None:
        await until(lambda: len(panes) == 2, 15, "both panes watched")
        assert skipped == []
        await until(lambda: current(tmux) == "1 other", 10, "tmux ran the user's hook for our client")

    watch(tmux, body, attach_hooks="run")


@needs_tmux
def test_panewatch_tmux_says_once_why_it_watches_nothing(tmux: Tmux) -> None:
    import subprocess
    import sys
    import time

    tmux("new-session", "-d", "-s", "work", "-n", "main", "-x", "120", "-y", "32", "sleep 600")
    tmux("set-hook", "-g", "client-attached", "select-window -t :1")
    proc = subprocess.Popen([sys.executable, "-m", "panewatch", "tmux", "-L", tmux.name, "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        line = ""
        while "not watching" not in line:
            assert time.monotonic() < deadline, "no word on stderr about the hook"
            line = proc.stderr.readline() if proc.stderr else ""
        assert "client-attached: select-window -t :1" in line and "attach_hooks" in line
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    assert out == "" and "not watching" not in err  # no pane line, and said once (the log did not repeat it)
