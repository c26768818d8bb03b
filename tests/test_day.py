"""A day in tmux, watched by a real daemon (issue 22): one card per agent, never a shell, one notification path.

A real tmux server holds an agent's dialog (A), the everyday panes that only show its words (a shell after
`cat`, a shell after `panewatch ls`, a pager), a nested `tmux attach` view of A (C) and a `panewatch run` inside
a pane (D); a real `panewatch serve` watches it with the `[notify] command` backend writing what it is told.
Then a real tmux client in a PTY: a dialog on the pane it looks at notifies nobody; elsewhere, the client gets
the notification as a tmux message.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from boardutil import ServeProcess, cli, start_serve, wait_for
from panewatch.board import client
from panewatch.testing.drive import PtyAgent
from tmuxutil import DIALOG, Tmux, agent_cmd
from tmuxutil import tmux as tmux

pytestmark = pytest.mark.needs("tmux")


def notify_config(tmp_path: Path) -> Path:
    """`[notify] command` appending what it was told, one JSON line per call."""
    log = tmp_path / "notify.jsonl"
    script = tmp_path / "notify-log"
    script.write_text(f"#!{sys.executable}\nimport json, os\n"
                      "call = {k[10:].lower(): v for k, v in os.environ.items() if k.startswith('PANEWATCH_')}\n"
                      f"open({str(log)!r}, 'a').write(json.dumps(call) + '\\n')\n")
    script.chmod(0o755)
    config = Path(os.environ["PANEWATCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f'[notify]\nbackends = ["command"]\ncommand = {json.dumps(str(script))}\n'
                                        "cooldown = 0\n", encoding="utf-8")
    return log


def calls(log: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def listed() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(cli("ls", "--json", check=True).stdout)["panes"]
    return out


def by_pane(tmux_pane: str) -> dict[str, Any] | None:
    return next((c for c in listed() if c.get("origin") == "tmux" and c.get("tmux_pane") == tmux_pane), None)


def pane_of(tmux: Tmux, target: str) -> str:
    return tmux("display-message", "-p", "-t", target, "#{pane_id}")


def test_one_card_per_agent_never_a_shell_and_one_notification_each(tmux: Tmux, tmp_path: Path) -> None:
    log = notify_config(tmp_path)
    tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", "-n", "B", "bash --norc --noprofile")
    b = pane_of(tmux, "work:B")
    serve = start_serve()
    try:
        wait_for(lambda: by_pane(b), "the shell's card", 20)
        tmux("new-session", "-d", "-s", "agents", "-x", "120", "-y", "32", "-n", "A", agent_cmd("dialogs", DIALOG))
        a = pane_of(tmux, "agents:A")
        run = f"env PANEWATCH_BOARD=connect {shlex.quote(sys.executable)} -m panewatch run -- " + \
            agent_cmd("show", DIALOG)
        tmux("new-window", "-d", "-t", "work", "-n", "D", run)
        tmux("new-window", "-d", "-t", "work", "-n", "C", f"env -u TMUX tmux -L {tmux.name} attach -t agents")
        d, c = pane_of(tmux, "work:D"), pane_of(tmux, "work:C")
        tmux("send-keys", "-t", b, f"cat {shlex.quote(str(DIALOG))}", "Enter")
        card_a = wait_for(lambda: (x := by_pane(a)) and x["state"] == "blocked" and x, "A blocked", 20)
        runs = wait_for(lambda: [x for x in listed() if x.get("origin") == "run" and x["state"] == "blocked"],
                        "D's run card blocked", 20)
        assert len(runs) == 1 and runs[0]["tmux_pane"] == d and runs[0]["target"] == "work:1.0", runs
        view_c = wait_for(lambda: (x := by_pane(c)) and x.get("view_of") and x, "C named a view", 20)
        view_d = wait_for(lambda: (x := by_pane(d)) and x.get("view_of") and x, "D's pane named a view", 20)
        assert (view_c["kind"], view_c["view_of"], view_c["state"]) == ("view", card_a["id"], "idle")
        assert (view_d["kind"], view_d["view_of"], view_d["state"]) == ("view", runs[0]["id"], "idle")
        shell = wait_for(lambda: (x := by_pane(b)) and "Do you want" in tmux("capture-pane", "-p", "-t", b) and x,
                         "the dialog's words in the shell")
        assert (shell["kind"], shell["what"], shell["state"]) == ("other", "bash", "idle")

        # the status line and the notifications count the two agents, once each
        assert cli("tmux", "status", check=True).stdout.startswith("⚠ 2 blocked")
        wait_for(lambda: len([x for x in calls(log) if x["state"] == "blocked"]) >= 2, "two notifications", 10)
        told = sorted(x["pane"] for x in calls(log) if x["state"] == "blocked")
        assert told == sorted([card_a["target"], runs[0]["target"]]), calls(log)
        human = cli("ls", check=True).stdout
        assert f"{view_c['id']}  view of {card_a['id']} (agents:0.0)" in human
        assert "without an agent (1 bash)" in human

        # nothing is typed into the shell; an answer to the agent is confirmed
        before = tmux("capture-pane", "-p", "-t", b)
        refused = cli("answer", shell["id"], "1", "--yes", "--fingerprint", card_a["prompt"]["fingerprint"])
        assert refused.returncode == 1 and "runs bash, not an agent" in refused.stderr
        assert cli("send", shell["id"], "rm -rf /tmp/x").returncode == 1
        assert tmux("capture-pane", "-p", "-t", b) == before
        done = cli("answer", card_a["id"], "1", "--yes", "--fingerprint", card_a["prompt"]["fingerprint"])
        assert done.returncode == 0 and "applied:" in done.stdout, done.stdout + done.stderr
        assert "answered 1" in tmux("capture-pane", "-p", "-t", a)
        assert (by_pane(a) or {}).get("answer", {}).get("applied") is True

        stats = daemon("stats")  # the waits of every card: the ended ones per pane, the open ones
        ended = [p["id"] for p in stats["panes"] for _ in range(p["blocked"]["count"])]
        ongoing = [w["id"] for w in stats["ongoing"] if w["kind"] == "blocked"]
        assert (ended, ongoing) == ([card_a["id"]], [runs[0]["id"]]), stats  # A's answered, D's still open

        # a program no list names starts under the dialog's words: it did not draw them (it is judged all the same)
        tmux("send-keys", "-t", b, "python3 -c 'import time; time.sleep(120)'", "Enter")
        wait_for(lambda: (x := by_pane(b)) and (x["kind"], x["what"]) == ("unknown", "python3"), "b's python3", 20)
        deadline = time.monotonic() + 3  # a window to see a false block in (the screen is judged within 0.2 s)
        while time.monotonic() < deadline:
            assert (by_pane(b) or {}).get("state") == "idle", by_pane(b)
            time.sleep(0.1)
    finally:
        serve.stop()


def test_a_pane_in_front_of_the_user_does_not_notify_and_a_tmux_client_gets_the_message(tmux: Tmux,
                                                                                          tmp_path: Path) -> None:
    log = notify_config(tmp_path)
    tmux("new-session", "-d", "-s", "agents", "-x", "100", "-y", "30", "-n", "A", agent_cmd("dialogs", DIALOG))
    tmux("new-window", "-d", "-t", "agents", "-n", "elsewhere", "bash --norc --noprofile")
    a = pane_of(tmux, "agents:A")
    serve: ServeProcess = start_serve()
    user = PtyAgent(["tmux", "-L", tmux.name, "attach", "-t", "agents"], env={**os.environ, "TERM": "xterm-256color"},
                    cols=100, rows=31).start()
    try:
        first = wait_for(lambda: (x := by_pane(a)) and x["state"] == "blocked" and x, "A blocked", 20)
        wait_for(lambda: user.screen.snapshot().text().count("Do you want") > 0, "the user sees A", 10)

        def again() -> dict[str, Any]:
            card = by_pane(a) or {}
            fp = card["prompt"]["fingerprint"]
            assert cli("answer", card["id"], "1", "--yes", "--fingerprint", fp).returncode == 0
            tmux("send-keys", "-t", a, "x")  # the agent asks again
            return wait_for(lambda: (x := by_pane(a)) and x["state"] == "blocked" and x["since"] > card["since"]
                            and x, "blocked again", 10)

        assert first
        wait_for(lambda: "0 " in tmux("list-clients", "-F", "#{client_control_mode} #{pane_id}"), "the user attached")
        told, seen = len(calls(log)), daemon("info")["notices"]["seen"]
        again()  # the dialog comes back on the pane the user looks at
        wait_for(lambda: daemon("info")["notices"]["seen"] == seen + 1, "not notified: the user looks at it", 10)
        assert [x for x in calls(log)[told:] if x["state"] == "blocked"] == []
        tmux("select-window", "-t", "agents:elsewhere")  # the user looks elsewhere
        again()
        wait_for(lambda: [x for x in calls(log)[told:] if x["state"] == "blocked"], "the notification", 10)
        config = Path(os.environ["PANEWATCH_CONFIG_DIR"]) / "config.toml"
        config.write_text(config.read_text().replace('backends = ["command"]', 'backends = ["terminal", "command"]'))
        assert cli("serve", "--reload", check=True).returncode == 0
        again()
        wait_for(lambda: "needs your answer" in user.screen.snapshot().text(), "the tmux message on the client", 10)
    finally:
        user.close()
        serve.stop()


def daemon(op: str) -> dict[str, Any]:
    reply: dict[str, Any] = asyncio.run(client.call(op))
    return reply


def test_cards_keep_their_ids_across_a_daemon_restart(tmux: Tmux) -> None:
    """A restart kept neither ids nor stats rows: `send 5` named another pane, and one pane's waits split into
    two rows of `stats`. Ids come back by the pane's key (board/ids.py); the waits of both daemons are one row."""
    tmux("new-session", "-d", "-s", "agents", "-x", "100", "-y", "30", agent_cmd("dialogs", DIALOG))
    tmux("new-window", "-d", "-t", "agents", "bash --norc --noprofile")
    a = pane_of(tmux, "agents:0")

    def answer_once() -> None:
        card = wait_for(lambda: (x := by_pane(a)) and x["state"] == "blocked" and x, "the dialog", 20)
        assert cli("answer", card["id"], "1", "--yes", "--fingerprint", card["prompt"]["fingerprint"]).returncode == 0
        wait_for(lambda: (by_pane(a) or {}).get("state") == "idle", "answered", 10)

    serve = start_serve()
    try:
        before = {c["tmux_pane"]: c["id"] for c in wait_for(lambda: len(listed()) == 2 and listed(), "two cards")}
        answer_once()
        stop = cli("serve", "--stop", check=True)
        assert "stopped" in stop.stdout and serve.proc.poll() is not None  # gone when it says so
    finally:
        serve.stop()
    serve = start_serve()
    try:
        after = {c["tmux_pane"]: c["id"] for c in wait_for(lambda: len(listed()) == 2 and listed(), "two cards")}
        assert after == before
        tmux("send-keys", "-t", a, "x")  # the agent asks again
        answer_once()
        rows = wait_for(lambda: [p for p in daemon("stats")["panes"] if p["id"] == before[a]
                                 and p["blocked"]["count"] == 2], "both answered waits in one row", 10)
        assert len([p for p in daemon("stats")["panes"] if p["id"] == before[a]]) == 1, rows
    finally:
        serve.stop()
