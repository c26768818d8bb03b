"""A private tmux server per test (its own -L socket, killed at teardown) and polling helpers."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from panewatch.runtime.tmux import TmuxServer

DATA = Path(__file__).parent / "data"
DIALOG = DATA / "published_example.raw"  # a real Claude Code permission dialog
STANDIN = Path(__file__).parent / "standin"  # stand-in agents named as the real CLIs (tests/standin/agent.py)


def agent_cmd(mode: str, *args: object, agent: str = "claude-code") -> str:
    """A shell command line running the stand-in agent `agent` (claude-code, codex, gemini-cli): `show FILE…`,
    `play FILE.cast` or `sh STEPS`, then it holds. panewatch names its pane's agent by its process, as it
    would the real CLI's (a `cat FILE; sleep 600` pane is a shell and a `sleep`: never judged)."""
    return shlex.join([sys.executable, str(STANDIN / agent / "cli.js"), mode, *map(str, args)])


SHOW_DIALOG = agent_cmd("show", DIALOG)  # a Claude Code pane holding its permission dialog


class Tmux:
    def __init__(self, tmp: Path) -> None:
        self.name = f"pw-{uuid.uuid4().hex[:12]}"
        self.conf = tmp / "tmux.conf"
        self.conf.write_text("set -g default-size 120x32\nset -g history-limit 1000\n")
        self.server = TmuxServer(socket_name=self.name)

    def __call__(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.name, "-f", str(self.conf), *args], capture_output=True, text=True,
                             timeout=20)
        assert out.returncode == 0, f"tmux {' '.join(args)}: {out.stderr}"
        return out.stdout.strip()

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True, timeout=20)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (.ci/run installs it): these tests need a real tmux")
    server = Tmux(tmp_path)
    try:
        yield server
    finally:
        server.kill()


async def until(condition: Callable[[], object], timeout: float = 10.0, what: str = "") -> None:
    """Poll `condition` until it is true; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what or condition}")
        await asyncio.sleep(0.02)


def run_async(coro_factory: Callable[[], object], timeout: float = 90.0) -> None:
    async def main() -> None:
        await asyncio.wait_for(coro_factory(), timeout)  # type: ignore[arg-type]

    asyncio.run(main())
