"""One process that drives many fake agents, for `panewatch bench scale` and `panewatch demo`.

Each fake agent writes its screen into a FIFO (the runtime under test runs `cat FIFO` in a real
PTY per pane), or straight into a pane's pty slave (`--targets`: a file of paths, one per pane;
`bench scale`: no `cat` between the write and the pane, so a write's time stamp is when the bytes
reached the pty). Every pane is a real PTY with a real process while the fakes themselves cost one
asyncio loop instead of hundreds of Python processes. A built-in bot answers each prompt after
3-8 s and types the next task after 3-10 s (seeded). The true states go to a JSON-lines file
that only the scorer reads: {"pane", "t", "state"}.

    python -m panewatch.lab.loadgen (--fifo-dir DIR | --targets FILE) --panes N --truth FILE [--seconds S] [--seed N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import IO

from panewatch.lab.botuser import ANSWER_DELAY, TASK_DELAY, TASK_TEXTS
from panewatch.lab.fakeagent import FakeAgentScript, Truth, interpret_async
from panewatch.runtime.fd import write_all


def fifo_path(fifo_dir: Path, index: int) -> Path:
    return fifo_dir / f"pane-{index}.fifo"


def fifo_reader(folder: Path) -> str:
    """The command a pane runs to show a fake agent's FIFO: `cat`, under the name `claude` (a link in `folder`),
    so panewatch names the pane's process Claude Code as it would the real CLI (core/identity.py; a pane running
    `cat` is "another program", never judged: core/panekind.py). The fakes draw Claude's screens."""
    link = folder / "bin" / "claude"
    link.parent.mkdir(exist_ok=True)
    if not link.exists():
        link.symlink_to(shutil.which("cat") or "/bin/cat")
    return str(link)


async def drive_one(index: int, fd: int, truth: IO[str], *, seed: int, deadline: float,
                    first_task: float, time_scale: float) -> None:
    rng = random.Random(f"panewatch.loadgen:{seed}:{index}")
    script = FakeAgentScript(seed=seed * 1000 + index)
    state = "idle"  # the last true state drawn: the script reads an answer when blocked, a task when idle
    tasks = 0

    def record(t: Truth) -> None:
        nonlocal state
        state = t.state
        truth.write(json.dumps({"pane": index, "t": time.time(), "state": t.state, "prompt": t.prompt}) + "\n")

    async def next_line() -> str | None:
        nonlocal tasks
        if state == "blocked":
            delay, line = rng.uniform(*ANSWER_DELAY), "1"
        else:
            tasks += 1
            delay = first_task if tasks == 1 else rng.uniform(*TASK_DELAY)
            line = f"Task {tasks}: {rng.choice(TASK_TEXTS)}"
        delay *= time_scale
        if time.time() + delay >= deadline:
            await asyncio.sleep(max(0.0, deadline - time.time()))
            return None  # end of the run: the fake agent leaves its screen
        await asyncio.sleep(delay)
        return line

    await interpret_async(script.steps(), write=lambda data: write_all(fd, data), readline=next_line,
                          record=record, time_scale=time_scale)


async def drive(fifo_dir: Path | None, panes: int, truth_path: Path, *, seconds: float, seed: int,
                time_scale: float = 1.0, targets: list[Path] | None = None) -> None:
    """Into the FIFOs of `fifo_dir`, or into `targets` (a pty slave each: O_NOCTTY, never ours)."""
    deadline = time.time() + seconds
    rng = random.Random(seed)
    if targets is None:
        if fifo_dir is None:
            raise ValueError("a FIFO folder or a list of targets is needed")
        targets = [fifo_path(fifo_dir, i) for i in range(panes)]
    with truth_path.open("a", buffering=1) as truth:
        fds = [os.open(path, os.O_WRONLY | os.O_NOCTTY) for path in targets[:panes]]
        try:
            await asyncio.gather(*(drive_one(i, fd, truth, seed=seed, deadline=deadline,
                                             first_task=rng.uniform(0.0, 1.0), time_scale=time_scale)
                                   for i, fd in enumerate(fds)))
        finally:
            for fd in fds:
                os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m panewatch.lab.loadgen")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fifo-dir", type=Path)
    where.add_argument("--targets", type=Path, help="a file naming the path to write each pane into, one a line")
    parser.add_argument("--panes", type=int, required=True)
    parser.add_argument("--truth", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--time-scale", type=float, default=1.0)
    ns = parser.parse_args(argv)
    targets = None if ns.targets is None else [Path(line) for line in ns.targets.read_text().splitlines() if line]
    try:
        asyncio.run(drive(ns.fifo_dir, ns.panes, ns.truth, seconds=ns.seconds, seed=ns.seed,
                          time_scale=ns.time_scale, targets=targets))
    except (KeyboardInterrupt, BrokenPipeError):
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
