"""The daemon and the pane commands with tmux (real tmux, real `panewatch serve`): the user's tmux panes
are listed with their target; send is refused into a blocked one and goes through send-keys into a
free one; goto selects the pane; `panewatch new` puts the agent in tmux, where it survives the daemon."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from boardutil import ServeProcess, cli, wait_for
from panewatch.board.tmux import dedicated_server
from tmuxutil import SHOW_DIALOG, Tmux, agent_cmd
from tmuxutil import tmux as tmux

pytestmark = pytest.mark.needs("tmux")  # tests/components.py: fails without it unless PANEWATCH_SKIP=tmux


def tmux_cards() -> list[dict[str, Any]]:
    out = cli("ls", "--json")
    if out.returncode != 0:
        return []
    return [c for c in json.loads(out.stdout)["panes"] if c.get("origin") == "tmux"]


def by_target(target: str) -> dict[str, Any] | None:
    return next((c for c in tmux_cards() if c.get("target") == target and c["state"] != "exited"), None)


def test_the_users_tmux_panes_are_cards_with_guarded_input(tmux: Tmux, serve: ServeProcess) -> None:
    tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", SHOW_DIALOG)
    tmux("new-window", "-d", "-t", "work", "-n", "echo", agent_cmd("compose"))
    blocked = wait_for(lambda: (c := by_target("work:0.0")) and c["state"] == "blocked" and c, "the dialog card", 20)
    assert blocked["tmux_pane"].startswith("%") and blocked["tmux_server"]
    free = wait_for(lambda: by_target("work:1.0"), "the echo pane's card", 20)
    status = cli("tmux", "status", check=True).stdout.strip()
    assert status.startswith("⚠ 1 blocked") and "idle" in status, status
    wait_for(lambda: tmux("show-options", "-p", "-t", blocked["tmux_pane"], "-v", "@panewatch_state") == "blocked",
             "the @panewatch_state pane option", 10)
    refused = cli("send", blocked["id"], "yes")
    assert refused.returncode == 1 and "blocked on a prompt" in refused.stderr
    assert "yes" not in tmux("capture-pane", "-p", "-t", blocked["tmux_pane"])
    cli("send", "work:1.0", "typed by panewatch", check=True)  # a tmux pane by its target
    wait_for(lambda: "SUBMITTED: typed by panewatch" in tmux("capture-pane", "-p", "-t", free["tmux_pane"]),
             "send-keys", 10)
    assert tmux("display-message", "-p", "-t", "work", "#{window_index}") == "0"
    import asyncio

    from panewatch.board import client

    asyncio.run(client.call("goto", pane=free["id"]))
    assert tmux("display-message", "-p", "-t", "work", "#{window_index}") == "1"
    mine = cli("kill", free["id"])  # the user's own tmux pane: panewatch does not close it
    assert mine.returncode == 1 and "close it in tmux" in mine.stderr and "panewatch run" not in mine.stderr
    tmux("kill-window", "-t", "work:1")
    wait_for(lambda: next((c for c in tmux_cards() if c["id"] == free["id"] and c["state"] == "exited"), None),
             "the killed pane's card exited", 10)


def test_status_without_a_daemon_prints_nothing() -> None:
    out = cli("tmux", "status", check=True)
    assert out.stdout == "" and out.stderr == ""


def test_new_runs_in_tmux_and_survives_the_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PANEWATCH_TMUX_NEW", "auto")
    server = dedicated_server()
    try:
        out = cli("new", "--name", "survivor", "--", "sleep", "600", check=True)
        pane_id = out.stdout.strip()
        card = wait_for(lambda: next((c for c in tmux_cards() if c["id"] == pane_id), None), "the new card", 20)
        assert card["name"] == "survivor" and card["target"].startswith("panewatch:")
        cli("serve", "--stop", check=True)
        commands = subprocess.run(["tmux", *server.args(), "list-panes", "-a", "-F", "#{pane_current_command}"],
                                  capture_output=True, text=True, timeout=20).stdout.split()
        assert "sleep" in commands
        again = wait_for(lambda: next((c for c in tmux_cards() if c["name"] == "survivor"), None),
                         "a restarted daemon lists it", 30)  # `ls` restarts the daemon for it
        assert again["state"] in ("idle", "working")
        assert again["id"] == pane_id  # the same card id across the restart (board/ids.py)
        cli("kill", again["id"], check=True)  # a pane `new` started: kill ends it
        wait_for(lambda: "sleep" not in subprocess.run(["tmux", *server.args(), "list-panes", "-a", "-F",
                                                        "#{pane_current_command}"], capture_output=True, text=True,
                                                       timeout=20).stdout, "the pane ended", 10)
    finally:
        cli("serve", "--stop")
        subprocess.run(["tmux", *server.args(), "kill-server"], capture_output=True, timeout=20)
        os.environ.pop("PANEWATCH_TMUX_NEW", None)


def attached_clients(tmux: Tmux) -> list[str]:
    """The terminals attached to the server (panewatch's own control-mode clients left out)."""
    out = tmux("list-clients", "-F", "#{client_control_mode} #{client_session} #{window_index} #{pane_id}")
    return [line[2:] for line in out.splitlines() if line.startswith("0 ")]


def test_attach_shows_the_panes_window_in_the_users_terminal(tmux: Tmux, serve: ServeProcess) -> None:
    """`panewatch attach` on a tmux pane is tmux itself: from a plain terminal a tmux client attaches at the
    pane's window; from inside the same tmux the user's own client switches there (no second client)."""
    import sys

    from panewatch.testing.drive import PtyAgent

    tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", "sleep 600")
    tmux("new-window", "-d", "-t", "work", "-n", "agent", "cat")
    card = wait_for(lambda: by_target("work:1.0"), "the agent pane's card", 20)
    attach = [sys.executable, "-m", "panewatch", "attach", card["id"]]
    with PtyAgent(attach, cols=100, rows=30) as term:
        wait_for(lambda: attached_clients(tmux) == [f"work 1 {card['tmux_pane']}"], "a tmux client at the pane", 20)
        assert term.alive, "panewatch became the tmux client (exec), it did not exit"
    wait_for(lambda: attached_clients(tmux) == [], "the client gone with its terminal", 20)

    tmux("new-window", "-d", "-t", "work", "-n", "shell", "sh")  # where the user types, inside tmux
    with PtyAgent(["tmux", "-L", tmux.name, "attach-session", "-t", "work:2"], cols=100, rows=30):
        wait_for(lambda: attached_clients(tmux) == ["work 2 " + tmux("display", "-p", "-t", "work:2", "#{pane_id}")],
                 "the user's own client on the shell window", 20)
        line = " ".join(shlex.quote(a) for a in attach)
        tmux("send-keys", "-t", "work:2", "-l", line)
        tmux("send-keys", "-t", "work:2", "Enter")
        wait_for(lambda: attached_clients(tmux) == [f"work 1 {card['tmux_pane']}"],
                 "the same client switched to the pane's window", 20)


def test_attach_on_another_tmux_server_is_nested_and_says_so(tmux: Tmux, serve: ServeProcess) -> None:
    import asyncio

    from panewatch.board import client

    tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", "sleep 600")
    card = wait_for(lambda: by_target("work:0.0"), "the pane's card", 20)
    how = asyncio.run(client.call("attach_command", pane=card["id"], inside="/tmp/some-other-tmux-socket"))
    assert how["nested"] is True and how["argv"][-3:] == ["attach-session", "-t", card["tmux_pane"]]
    plain = asyncio.run(client.call("attach_command", pane=card["id"]))
    assert plain["nested"] is False and plain["argv"][1:3] == ["-S", str(tmux.server.socket_file())]


def test_the_status_line_counts_agents_only_and_names_the_longest_wait() -> None:
    from panewatch.core.panekind import NOT_AGENT
    from panewatch.runtime.tmux_status import NOT_AGENT as STATUS_NOT_AGENT
    from panewatch.runtime.tmux_status import summary

    assert STATUS_NOT_AGENT == NOT_AGENT  # the status line's copy (it imports no layer) says what panekind says
    cards = [{"kind": "agent", "state": "blocked", "since": 20.0, "target": "work:1.0"},
             {"kind": "agent", "state": "blocked", "since": 10.0, "target": "agents:#(x)"},
             {"kind": "other", "state": "blocked", "since": 1.0, "target": "shell:0.0"},
             {"kind": "view", "state": "idle"}, {"kind": "other", "state": "idle"},
             {"kind": "unknown", "state": "working"}]
    assert summary(cards) == "⚠ 2 blocked (agents:##(x)) · 1 working"
