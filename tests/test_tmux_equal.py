"""The same recording, played into a real tmux pane and watched through control mode, goes through the
same states as its replay through the PaneMachine `run` panes use (golden corpus, several agents).

From the end of the agent's start-up on: before it (truth.json says "ignore") what a pane shows depends on when
it was first read (Codex's title spins while it loads: read then, it is working for 0.7 s, later it never was),
so there either may differ, but neither may say blocked."""

from __future__ import annotations

import asyncio
import contextlib
import json
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


def started(folder: Path) -> float:
    """When the agent's start-up ends: the truth's first scored entry."""
    timeline = json.loads((folder / "truth.json").read_text())["timeline"]
    return min(float(entry["t"]) for entry in timeline if entry["state"] != "ignore")


def agrees(seen: list[str], want: list[str]) -> bool:
    """The states seen end with the replay's since the start-up; before that, anything but blocked."""
    start = len(seen) - len(want)
    return start >= 0 and seen[start:] == want and "blocked" not in seen[:start]


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
    changes = replay(cast, load_all().list()).changes
    ready = started(folder)
    in_force = [c for c in changes if c.t <= ready][-1:]  # the state when the start-up ended
    want = collapse([c.pane.state for c in in_force + [c for c in changes if c.t > ready]])
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
            loop = asyncio.get_running_loop()
            played = loop.time() + end  # judged once the whole recording played, not at a match half way
            tmux("new-window", "-d", "-t", "eq", "-n", "play",
                 agent_cmd("play", folder / "session.cast", agent=case.split("/")[0]))
            with contextlib.suppress(AssertionError):  # (the comparison below says what differs)
                await until(lambda: loop.time() >= played and agrees(collapse(seen), want), end + 10,
                            "the replay's states")
        finally:
            await watcher.close()
        return collapse(seen)

    got = asyncio.run(asyncio.wait_for(main(), end + 60))
    assert agrees(got, want), f"{case}: control mode saw {got}, the replay (since the start-up) {want}"
