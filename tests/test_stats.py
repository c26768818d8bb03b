"""Minutes lost waiting, end to end: a real daemon records a fake agent's blocked wait, and
`panewatch stats --json` shows it as the test measured it (within a second), across a restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from boardutil import ServeProcess, cli, lock_the_database, new_agent, start_serve, wait_for, wait_state
from panewatch.runtime.waitstore import store_path

HOLD = 3.0  # seconds the test leaves the prompt unanswered


def stats(*args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(cli("stats", "--json", *args, check=True).stdout)
    return out


def truth(path: Path) -> list[dict[str, Any]]:
    """The fake agent's own record of its true state: one line per change, stamped when the bytes that
    show it were written (lab/fakeagent.py --truth): the clock this test measures the wait on."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_blocked_wait_is_measured_and_survives_a_restart(tmp_path: Path) -> None:
    serve = start_serve()
    try:
        side = tmp_path / "truth.jsonl"
        fake = [sys.executable, "-m", "panewatch.lab.fakeagent", "--seed", "7", "--tasks", "1", "--truth", str(side)]
        pane = cli("new", "--name", "waiter", "--agent", "claude", "--", *fake, check=True).stdout.strip()
        wait_state(pane, "idle")
        cli("send", pane, "run the tests", check=True)  # working ~0.5 s, then the agent asks
        blocked = wait_state(pane, "blocked")
        shown = next(e["t"] for e in truth(side) if e["state"] == "blocked")
        wait_for(lambda: time.time() - shown >= HOLD, "the user takes a while", timeout=HOLD + 5)
        cli("answer", pane, "1", "--yes", "--fingerprint", blocked["prompt"]["fingerprint"], check=True)
        states = wait_for(lambda: [e for e in truth(side) if e["t"] > shown], "the agent went on")
        assert states[0]["state"] == "working"
        truly = states[0]["t"] - shown  # from the dialog drawn to the answer taken, on the agent's clock

        summary = wait_for(lambda: (s := stats())["totals"]["blocked"]["count"] and s, "the wait recorded")
        (wait,) = summary["longest"]
        assert wait["kind"] == "blocked" and wait["name"] == "waiter" and wait["id"] == pane
        assert wait["agent"] == "claude" and wait["ended_by"] == "working"
        assert truly >= HOLD and abs(wait["seconds"] - truly) < 1.0, (wait, truly)
        print(f"blocked wait: recorded {wait['seconds']:.3f} s, the agent's own clock {truly:.3f} s")
        assert abs(wait["start"] - shown) < 1.0 and abs(wait["end"] - states[0]["t"]) < 1.0
        assert summary["totals"]["blocked"]["seconds"] == wait["seconds"]
        assert [a["agent"] for a in summary["agents"]] == ["claude"]
        assert [p["name"] for p in summary["panes"]] == ["waiter"] and len(summary["days"]) == 1
        assert summary["totals"]["idle"]["count"] == 0  # the turn has not ended yet: no idle wait
    finally:
        serve.stop()

    # The daemon is gone: the figures are still there (read from the file, no daemon needed).
    after = stats("--since", "1h")
    assert after["longest"] == summary["longest"]
    text = cli("stats", "--since", "1d", check=True).stdout
    assert "blocked until answered:" in text and "waiter (#" in text and "longest waits:" in text
    assert cli("stats", "--since", "yesterday-ish").returncode == 2

    # A new daemon writes to the same file; the idle wait of the old one ended with it, unanswered.
    serve = start_serve()
    try:
        pane = new_agent(tmp_path / "agent2.log", name="second")
        cli("send", "--no-enter", pane, "b", check=True)
        blocked = wait_state(pane, "blocked")
        cli("answer", pane, "2", "--yes", "--fingerprint", blocked["prompt"]["fingerprint"], check=True)
        wait_state(pane, "idle")
        summary = wait_for(lambda: (s := stats())["totals"]["blocked"]["count"] == 2 and s, "both waits")
        assert {p["name"] for p in summary["panes"]} == {"waiter", "second"}
    finally:
        serve.stop()


def test_stats_says_when_recording_is_off_since_when_and_why(tmp_path: Path) -> None:
    """Issue 23, item 8: the daemon's `recording` flag was shown nowhere. Now `stats` (and --json) says
    it is off, since when and why (a lock another process holds; a second daemon on the same state
    dir), and that no daemon runs; the wait kept meanwhile reaches the file once the lock is let go."""
    serve = start_serve()
    holder: subprocess.Popen[str] | None = None
    second: ServeProcess | None = None
    try:
        pane = new_agent(tmp_path / "agent.log")
        wait_for(lambda: store_path().exists(), "the daemon opened the waits database at start")
        assert stats()["recording"] == {"daemon": True, "on": True, "since": None, "why": None, "pending": 0,
                                         "dropped": 0}
        holder = lock_the_database()
        before = time.time()
        cli("send", "--no-enter", pane, "b", check=True)
        blocked = wait_state(pane, "blocked")
        cli("answer", pane, "1", "--yes", "--fingerprint", blocked["prompt"]["fingerprint"], check=True)
        wait_state(pane, "idle")  # the blocked wait closed: the daemon's writer waits for the lock, then gives up
        off = wait_for(lambda: (s := stats())["recording"]["on"] is False and s, "recording off")["recording"]
        assert off["why"] == "database is locked" and off["pending"] >= 1 and before <= off["since"] <= time.time()
        text = cli("stats", check=True).stdout
        assert text.startswith("RECORDING IS OFF since ") and "database is locked" in text, text
        assert "waits kept in memory" in text

        # A second daemon on the same state dir (another runtime dir: another login) does not record.
        env = {"PANEWATCH_RUNTIME_DIR": str(tmp_path / "run2")}
        (tmp_path / "run2").mkdir(mode=0o700)
        second = start_serve(env=env)
        other = json.loads(subprocess.run([sys.executable, "-m", "panewatch", "stats", "--json"], capture_output=True,
                                          text=True, env={**os.environ, **env}, check=True, timeout=30).stdout)
        assert other["recording"]["on"] is False
        assert other["recording"]["why"] == (f"another panewatch daemon (pid {serve.proc.pid}) records the waits of "
                                             f"{store_path().parent}")

        holder.stdin.write("\n")  # type: ignore[union-attr]
        holder.stdin.flush()  # type: ignore[union-attr]
        assert holder.wait(10) == 0
        back = wait_for(lambda: (s := stats())["recording"]["on"] and s["totals"]["blocked"]["count"] == 1 and s,
                        "recording back on, the kept wait written", timeout=30)
        assert back["recording"]["pending"] == 0
        assert "RECORDING IS OFF" not in cli("stats", check=True).stdout
    finally:
        for proc in (holder,):
            if proc is not None:
                proc.kill()
                proc.communicate()
        if second is not None:
            second.stop()
        serve.stop()
    none = cli("stats", check=True).stdout
    assert none.rstrip().endswith("recording: no panewatch daemon is running now; the daemon records the waits of "
                                  "every pane on its board")
    assert json.loads(cli("stats", "--json", check=True).stdout)["recording"] == {"daemon": False, "on": None}
