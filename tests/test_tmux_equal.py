"""The same recording, played into a real tmux pane and watched through control mode, goes through the
same states as its replay through the PaneMachine `run` panes use (golden corpus, several agents)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from panewatch.core.cast import parse_cast
from panewatch.core.manifest import load_all
from panewatch.core.replay import replay
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.tmux_watch import TmuxPane, TmuxWatcher
from tmuxutil import Tmux, agent_cmd, until
from tmuxutil import tmux as tmux

CORPUS = Path(__file__).parent.parent / "src" / "panewatch" / "golden" / "corpus"
CASES = ["claude-code/2.1.332/bash_120x32", "codex/0.171.0/bash_120x32", "claude-code/2.1.332/trap_120x32"]


def collapse(states: list[str]) -> list[str]:
    out: list[str] = []
    for state in states:
        if state != "exited" and (not out or out[-1] != state):
            out.append(state)
    return out


@pytest.mark.parametrize("case", CASES)
def test_control_mode_sees_what_the_replay_sees(tmux: Tmux, case: str) -> None:
    folder = CORPUS / case
    with open(folder / "session.cast", encoding="utf-8") as fh:
        cast = parse_cast(iter(fh), str(folder))
    want = collapse([c.state for c in replay(cast, load_all().list()).changes])
    end = cast.duration
    cols, rows = cast.header.width, cast.header.height
    tmux("new-session", "-d", "-s", "eq", "-x", str(cols), "-y", str(rows), "sleep 600")

    async def main() -> list[str]:
        seen: list[str] = []

        def added(pane: TmuxPane) -> None:
            if pane.info.window_name == "play":
                pane.subscribe(lambda change: seen.append(change.new.state))

        watcher = TmuxWatcher(tmux.server, ManifestWatcher(), on_added=added)
        await watcher.start()
        try:
            tmux("new-window", "-d", "-t", "eq", "-n", "play",
                 agent_cmd("play", folder / "session.cast", agent=case.split("/")[0]))
            with contextlib.suppress(AssertionError):  # (the comparison below says what differs)
                await until(lambda: collapse(seen) == want, end + 10, "the replay's states")
        finally:
            await watcher.close()
        return collapse(seen)

    got = asyncio.run(asyncio.wait_for(main(), end + 60))
    assert got == want, f"{case}: control mode saw {got}, the replay {want}"
