"""Helpers for the board's tests: a real `panewatch serve` subprocess, the CLI, polling."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from panewatch.runtime.waitstore import store_path

TIMEOUT = 15.0
AGENT = Path(__file__).parent / "board_agent.py"


def wait_for(pred: Callable[[], Any], what: str, timeout: float = TIMEOUT, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        time.sleep(interval)


def cli(*args: str, check: bool = False, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "panewatch", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, env={**os.environ, "PANEWATCH_BOARD": "off"})
    if check and proc.returncode != 0:
        raise AssertionError(f"panewatch {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@dataclass
class ServeProcess:
    proc: subprocess.Popen[str]
    url: str  # the one-time sign-in link `serve` printed: it works once

    @property
    def base(self) -> str:
        return self.url.split("?", 1)[0]

    def login(self) -> str:
        """A fresh one-time sign-in link, the way a user gets one (`panewatch board --no-open`)."""
        link = cli("board", "--no-open", check=True).stdout.strip()
        assert link.startswith(self.base + "?token=pwb_"), link
        return link

    @property
    def port(self) -> int:
        return int(self.base.rstrip("/").rsplit(":", 1)[1])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start_serve(*extra: str, env: dict[str, str] | None = None, nofile: int | None = None) -> ServeProcess:
    """`panewatch serve` with `extra` arguments, `env` added to ours, its descriptors capped at `nofile`."""

    def limit_files() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))  # hard too: serve cannot raise it

    proc = subprocess.Popen([sys.executable, "-m", "panewatch", "serve", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, **(env or {})},
                            preexec_fn=limit_files)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("panewatch board: "):
        proc.kill()
        proc.wait()
        raise AssertionError(f"panewatch serve did not start: {line!r}")
    return ServeProcess(proc, line.split(": ", 1)[1])


def new_agent(log: Path, name: str = "agent") -> str:
    """A headless pane running the scripted agent, once it drew its idle screen (and reads keys); its id."""
    out = cli("new", "--name", name, "--agent", "claude", "--size", "100x32", "--", sys.executable, str(AGENT),
              str(log), check=True)
    pane_id = out.stdout.strip()
    seen: list[dict[str, Any] | None] = [None]

    def drawn() -> bool:
        seen[0] = card(pane_id)
        return seen[0] is not None and seen[0]["rule"] == "shortcuts-footer"

    try:
        wait_for(drawn, "the agent drew its screen", interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last card: {seen[0]}") from None
    return pane_id


def cards() -> list[dict[str, Any]]:
    out = cli("ls", "--json", check=True)
    panes: list[dict[str, Any]] = json.loads(out.stdout)["panes"]
    return panes


def card(pane_id: str) -> dict[str, Any] | None:
    return next((c for c in cards() if c["id"] == pane_id), None)


def wait_state(pane_id: str, state: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    found: dict[str, Any] = wait_for(lambda: (c := card(pane_id)) is not None and c["state"] == state and c,
                                     f"pane {pane_id} {state}", timeout, interval=0.1)
    return found


def lock_the_database() -> subprocess.Popen[str]:
    """Another process holding the waits database's write lock (a backup tool, a user's sqlite3 shell)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sqlite3, sys
            conn = sqlite3.connect({str(store_path())!r}, isolation_level=None)
            conn.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            sys.stdin.readline()
            conn.execute("COMMIT")
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder
