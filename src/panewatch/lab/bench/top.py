"""`panewatch bench top --panes 1000`: the view's cost while a thousand panes change state, and key → frame.

A real `panewatch serve` in a private runtime dir (no tmux watched, no notification backend) carries N panes,
each a `panewatch run` as the daemon sees one: a connection that registered a card and sends its changes
(board/link.py's side of the socket, without the PTY: what is measured is the view, not detection). Each pane
walks the scale bench's rhythm (lab/loadgen.py, lab/botuser.py): working for a tool's think and stall (0.5-2 s +
0.5-6 s, 1-3 tools a turn), blocked until the bot answers (3-8 s), idle until the next task (3-10 s); seeded.

The view is the real `panewatch top` in a real PTY (testing/drive.py reads its output into an emulated screen
in this process). Over the window, with the panes changing all along:

    view CPU      the `top` process's user + system CPU, % of one core (target <= 10 %)
    key → frame   a key (`j` or `k`, alternately) written to the PTY, to the first output after which the
                  screen shows another pane selected (the detail line's "(id N)"): median, p95, max
                  (target <= 100 ms)
    output        bytes per second `top` wrote to its terminal (what an ssh link carries)
    daemon CPU    `panewatch serve`'s, for reference; the load average at both ends of the window

The load (this process: N connections and their schedules) and the screen emulation of the PTY's output run
here, never in the measured process; on a shared 2-core box they still compete with it for the CPU.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from panewatch.board.rpc import MAX_LINE, Peer
from panewatch.core.screen import Snapshot
from panewatch.lab.botuser import ANSWER_DELAY, TASK_DELAY
from panewatch.testing.drive import PtyAgent

WARMUP = 5.0  # seconds after every pane registered and the view drew them, before the window opens
KEY_EVERY = 0.5  # seconds between two measured keys
KEY_TIMEOUT = 5.0  # a key whose frame never came counts as this
SELECTED = re.compile(r"\(id (\d+)\)")
PROMPT = {"question": "Do you want to proceed?", "fingerprint": "0000000000000000", "body": "Bash command rm -rf x",
          "options": [{"number": 1, "label": "Yes", "kind": "allow_once", "key": "1"},
                      {"number": 2, "label": "No", "kind": "reject", "key": "2"}]}
SCREEN = b"\x1b[2J\x1b[H Claude Code (bench pane)\r\n\r\n> a task\r\n"


@dataclass
class Result:
    panes: int
    size: tuple[int, int]
    window: float = 0.0
    changes: int = 0  # state changes sent by the panes over the window
    view_cpu: float = 0.0  # % of one core
    view_user: float = 0.0
    view_sys: float = 0.0
    daemon_cpu: float = 0.0
    output_rate: float = 0.0  # bytes/s written by the view
    keys: list[float] = field(default_factory=list)  # seconds, key → frame
    missed_keys: int = 0
    load: tuple[float, float] = (0.0, 0.0)
    view_rss_mb: float = 0.0

    def table(self) -> str:
        keys = sorted(self.keys)

        def ms(q: float) -> str:
            return f"{keys[min(len(keys) - 1, int(q * len(keys)))] * 1000:.0f}" if keys else "-"

        median = f"{statistics.median(keys) * 1000:.0f}" if keys else "-"
        cpu_ok = "yes" if self.view_cpu <= 10 else "NO"
        key_ok = "yes" if keys and keys[min(len(keys) - 1, int(0.95 * len(keys)))] <= 0.1 else "NO"
        lines = [
            f"panewatch bench top: {self.panes} panes, {self.changes / self.window:.0f} state changes/s "
            f"(the scale bench's rhythm), a {self.window:.0f} s window, the view at {self.size[0]}x{self.size[1]}",
            "",
            "| measure | value | target | met |",
            "|---|---|---|---|",
            f"| view CPU (`panewatch top`) | {self.view_cpu:.1f} % of a core (user {self.view_user:.1f}, "
            f"sys {self.view_sys:.1f}) | <= 10 % | {cpu_ok} |",
            f"| key → frame ({len(keys)} keys, {self.missed_keys} without a frame) | median {median} ms, p95 "
            f"{ms(0.95)} ms, max {ms(1.0)} ms | <= 100 ms | {key_ok} |",
            f"| the view's output | {self.output_rate / 1024:.1f} KB/s | | |",
            f"| the view's memory | {self.view_rss_mb:.0f} MB RSS | | |",
            f"| daemon CPU (`panewatch serve`, for reference) | {self.daemon_cpu:.1f} % of a core | | |",
            f"| load average (1 min) at the window's start / end | {self.load[0]:.2f} / {self.load[1]:.2f} | | |",
        ]
        return "\n".join(lines)


class BenchPane:
    """One pane as a `panewatch run` shows it to the daemon: a registered card, its changes, its screen."""

    def __init__(self, index: int, rng: random.Random) -> None:
        self.index = index
        self.rng = rng
        self.peer: Peer | None = None
        self.card: dict[str, Any] = {
            "name": f"bench-{index:04d}", "agent": "claude", "agent_version": "2.1.332", "state": "idle",
            "since": time.time(), "kind": "agent", "what": "claude", "cwd": f"/srv/work/project-{index % 37}",
            "command": "claude", "source": "screen", "rule": "shortcuts-footer", "detail": None, "prompt": None,
            "pid": 100000 + index, "interactive": True, "cols": 100, "rows": 30, "unverified": None,
        }
        self.changes = 0

    async def connect(self, sock: str) -> None:
        reader, writer = await asyncio.open_unix_connection(sock, limit=MAX_LINE)
        self.peer = Peer(reader, writer, on_notify=self._on_notify)
        self.peer.start()
        await self.peer.request("register", card=self.card)

    def _on_notify(self, op: str, msg: dict[str, Any]) -> None:
        if op == "watch" and self.peer is not None:  # the view's preview of this pane
            self.peer.notify("repaint", vid=msg.get("vid"), data=base64.b64encode(SCREEN).decode())

    def _set(self, state: str, rule: str) -> None:
        self.card = {**self.card, "state": state, "rule": rule, "since": time.time(),
                     "prompt": PROMPT if state == "blocked" else None}
        self.changes += 1
        if self.peer is not None:
            self.peer.notify("card", card=self.card)

    async def live(self, until: float) -> None:
        """The scale bench's rhythm: a turn of 1-3 tools (think, stall, maybe a prompt), then idle."""
        await asyncio.sleep(self.rng.uniform(0.0, 3.0))  # not all in step
        while time.monotonic() < until:
            for _tool in range(self.rng.randint(1, 3)):
                self._set("working", "title-spinner")
                await asyncio.sleep(self.rng.uniform(0.5, 2.0) + self.rng.uniform(0.5, 6.0))
                if self.rng.random() < 0.5:
                    self._set("blocked", "permission-question")
                    await asyncio.sleep(self.rng.uniform(*ANSWER_DELAY))
            self._set("idle", "shortcuts-footer")
            await asyncio.sleep(self.rng.uniform(*TASK_DELAY))


def _raise_fd_limit() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _private_env(root: Path) -> dict[str, str]:
    config = root / "config"
    config.mkdir()
    (config / "config.toml").write_text('[tmux]\nwatch = "off"\nnew = "off"\n\n[notify]\nbackends = []\n',
                                        encoding="utf-8")
    runtime = root / "run"
    runtime.mkdir(mode=0o700)
    return {**{k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "COLUMNS", "LINES")},
            "PANEWATCH_CONFIG_DIR": str(config), "PANEWATCH_STATE_DIR": str(root / "state"),
            "PANEWATCH_DATA_DIR": str(root / "data"), "PANEWATCH_RUNTIME_DIR": str(runtime),
            "PANEWATCH_CACHE_DIR": str(root / "cache"), "TMUX_TMPDIR": str(root), "PANEWATCH_BOARD": "off"}


def _selected(view: PtyAgent) -> str | None:
    found = SELECTED.search(view.text())
    return found.group(1) if found else None


def _moved_from(before: str | None) -> Callable[[Snapshot], bool]:
    def moved(snapshot: Snapshot) -> bool:
        found = SELECTED.search(snapshot.text())
        return found is not None and found.group(1) != before

    return moved


def _keys(view: PtyAgent, stop: threading.Event, result: Result) -> None:
    """Press j/k alternately; each key's time to the frame that shows another pane selected."""
    down = True
    while not stop.is_set():
        before = _selected(view)
        sent = time.monotonic()
        view.write(b"j" if down else b"k")
        down = not down
        snap = view.wait_for(_moved_from(before), KEY_TIMEOUT)
        if snap is None:
            result.missed_keys += 1
            result.keys.append(KEY_TIMEOUT)
        else:
            result.keys.append(time.monotonic() - sent)
        stop.wait(KEY_EVERY)


async def _bench(panes: int, seconds: float, seed: int, size: tuple[int, int], root: Path) -> Result:
    env = _private_env(root)
    result = Result(panes, size)
    daemon = subprocess.Popen([sys.executable, "-m", "panewatch", "serve"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=_raise_fd_limit)
    view: PtyAgent | None = None
    try:
        assert daemon.stdout is not None
        await asyncio.to_thread(daemon.stdout.readline)  # "panewatch board: …": the socket listens
        sock = str(Path(env["PANEWATCH_RUNTIME_DIR"]) / "board.sock")
        rng = random.Random(f"panewatch.bench.top:{seed}")
        fleet = [BenchPane(i, random.Random(rng.random())) for i in range(panes)]
        for start in range(0, panes, 50):
            await asyncio.gather(*(p.connect(sock) for p in fleet[start:start + 50]))
        cols, rows = size
        view = PtyAgent([sys.executable, "-m", "panewatch", "top", "--no-start"],
                        env={**env, "TERM": "xterm-256color"}, cols=cols, rows=rows).start()
        until = time.monotonic() + seconds + WARMUP + 10
        lives = [asyncio.get_running_loop().create_task(p.live(until)) for p in fleet]
        if await asyncio.to_thread(view.wait_for, "panewatch ·", 30) is None:
            raise RuntimeError(f"panewatch top did not draw: {view.text()!r}")
        await asyncio.sleep(WARMUP)
        top, serve = psutil.Process(view.proc.pid if view.proc else 0), psutil.Process(daemon.pid)
        t0, top0, serve0 = time.monotonic(), top.cpu_times(), serve.cpu_times()
        out0, changes0 = sum(len(c) for _, c in view.output), sum(p.changes for p in fleet)
        result.load = (os.getloadavg()[0], 0.0)
        stop = threading.Event()
        keys = asyncio.get_running_loop().run_in_executor(None, _keys, view, stop, result)
        await asyncio.sleep(seconds)
        stop.set()
        await keys
        result.window = time.monotonic() - t0
        top1, serve1 = top.cpu_times(), serve.cpu_times()
        result.view_user = (top1.user - top0.user) / result.window * 100
        result.view_sys = (top1.system - top0.system) / result.window * 100
        result.view_cpu = result.view_user + result.view_sys
        result.daemon_cpu = (serve1.user + serve1.system - serve0.user - serve0.system) / result.window * 100
        result.output_rate = (sum(len(c) for _, c in view.output) - out0) / result.window
        result.changes = sum(p.changes for p in fleet) - changes0
        result.view_rss_mb = top.memory_info().rss / 1e6
        result.load = (result.load[0], os.getloadavg()[0])
        for task in lives:
            task.cancel()
        view.write(b"q")
        for p in fleet:
            if p.peer is not None:
                await p.peer.close()
        return result
    finally:
        if view is not None:
            view.close()
        daemon.terminate()
        try:
            daemon.wait(10)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(5)
        if daemon.stdout is not None:
            daemon.stdout.close()


def run(panes: int = 1000, seconds: float = 30.0, seed: int = 7, size: str = "120x40", as_json: bool = False) -> str:
    cols, rows = (int(x) for x in size.lower().split("x"))
    _raise_fd_limit()
    with tempfile.TemporaryDirectory(prefix="pwtop-", dir="/tmp") as tmp:
        result = asyncio.run(_bench(panes, seconds, seed, (cols, rows), Path(tmp)))
    if as_json:
        return json.dumps({**result.__dict__, "size": list(result.size)})
    return result.table()
