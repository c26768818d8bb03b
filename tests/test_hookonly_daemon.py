"""Hook-only panes through the real daemon (`panewatch serve`): an agent started by hand in a plain PTY (a stand-in
Claude Code running its installed hooks as the real one does) is a card in `ls` saying where it runs, its dialog
notifies through Apprise to a loopback ntfy receiver with host, question and how long it waited, `send` refuses
saying where to go, `stats` counts its wait, and the card turns exited when the agent ends."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from boardutil import cli, start_serve, wait_for
from panewatch.board.notices import LOCAL_HOST
from panewatch.runtime.pty import PtySession
from pushutil import Receiver

STANDIN = Path(__file__).parent / "standin"


def install_claude_hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{}\n")
    monkeypatch.setenv("HOME", str(home))
    cli("hooks", "install", "--agent", "claude", check=True)
    doc = json.loads((home / ".claude" / "settings.json").read_text())
    return {event: h["command"] for event, groups in doc["hooks"].items() for g in groups for h in g["hooks"]}


def hooks_agent(tmp_path: Path, hooks: dict[str, str], events: list[tuple[str, dict[str, object]]]) -> list[str]:
    steps = []
    for i, (event, fields) in enumerate(events):
        payload = json.dumps({"hook_event_name": event, "session_id": "s-1", **fields})
        go = shlex.quote(str(tmp_path / f"go-{i}"))
        steps.append(f"while [ ! -e {go} ]; do sleep 0.02; done; printf %s {shlex.quote(payload)} | "
                     f"setsid -w /bin/sh -c {shlex.quote(hooks[event])}")
    return [sys.executable, str(STANDIN / "claude-code" / "cli.js"), "sh", "; ".join(steps)]


def hook_cards() -> list[dict[str, object]]:
    out = cli("ls", "--json", check=True)
    return [c for c in json.loads(out.stdout)["panes"] if c.get("origin") == "hooks"]


def test_a_hook_only_agent_through_the_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hooks = install_claude_hooks(tmp_path, monkeypatch)
    argv = hooks_agent(tmp_path, hooks, [
        ("UserPromptSubmit", {}),
        ("PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}),
        ("Stop", {}),
    ])
    with Receiver() as ntfy:
        server = start_serve(env={"PANEWATCH_NOTIFY_URLS": f"ntfy://127.0.0.1:{ntfy.port}/my-agents"})
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "KITTY", "TERM_PROGRAM"))}
        agent = PtySession(argv, env={**env, "TERM_PROGRAM": "WezTerm", "WEZTERM_PANE": "4"}, cwd=str(tmp_path))
        try:
            (tmp_path / "go-0").touch()
            card = wait_for(lambda: (c := hook_cards()) and c[0], "the hook-only card")
            assert card["agent"] == "claude" and card["state"] == "working" and card["pid"] == agent.pid
            (tmp_path / "go-1").touch()
            card = wait_for(lambda: (c := hook_cards()) and c[0]["state"] == "blocked" and c[0], "blocked")
            tty = str(card["tty"])
            assert card["where"] == f"WezTerm pane 4 · {tty} · {tmp_path}"
            listing = cli("ls", check=True).stdout
            assert f"WezTerm pane 4 · {tty}" in listing and "Bash: rm -rf build" in listing, listing
            wait_for(lambda: ntfy.got, "the notification at the receiver")
            sent = ntfy.got[0]["body"]
            assert sent["topic"] == "my-agents"
            assert sent["title"] == f"claude needs your answer ({LOCAL_HOST}:{card['name']})"
            assert sent["message"].startswith("Bash: rm -rf build — waiting ") and f"WezTerm pane 4 · {tty}" in \
                sent["message"], sent
            refused = cli("send", str(card["id"]), "hello")
            assert refused.returncode != 0 and "hooks only" in refused.stderr and "WezTerm pane 4" in refused.stderr
            refused = cli("kill", str(card["id"]))  # not panewatch's to end
            assert refused.returncode != 0 and "you started in WezTerm pane 4" in refused.stderr, refused
            (tmp_path / "go-2").touch()
            wait_for(lambda: (c := hook_cards()) and c[0]["state"] == "idle", "idle after Stop")
            stats = json.loads(cli("stats", "--json", check=True).stdout)
            assert any(a["agent"] == "claude" for a in stats["agents"]), stats
            agent.close()
            wait_for(lambda: (c := hook_cards()) and c[0]["state"] == "exited", "exited", timeout=10)
        finally:
            agent.close()
            server.stop()


def test_an_agent_in_a_tmux_server_nobody_watches_is_a_hook_only_card(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`$TMUX` names a server no one watches (no listener for it): the agent itself reports, as outside tmux."""
    hooks = install_claude_hooks(tmp_path, monkeypatch)
    argv = hooks_agent(tmp_path, hooks, [("PreToolUse", {"tool_name": "Read"})])
    server = start_serve()
    agent = PtySession(argv, env={**os.environ, "TMUX": "/tmp/nobody-watches/default,1,0", "TMUX_PANE": "%3"},
                       cwd=str(tmp_path))
    try:
        (tmp_path / "go-0").touch()
        card = wait_for(lambda: (c := hook_cards()) and c[0], "the hook-only card")
        assert card["state"] == "working" and card["detail"] == "PreToolUse Read" and card["terminal"] == "tmux"
        assert str(card["where"]).startswith("tmux pane %3 · /dev/pts/")
    finally:
        agent.close()
        server.stop()


def test_a_dialog_on_screen_reaches_ntfy_with_its_question_and_options(tmp_path: Path) -> None:
    """The same notification path for a pane watched by its screen: the question and every option, at the receiver;
    the time from the card turning blocked to the receiver's request is printed."""
    from boardutil import new_agent, wait_state

    with Receiver() as ntfy:
        server = start_serve(env={"PANEWATCH_NOTIFY_URLS": f"ntfy://127.0.0.1:{ntfy.port}/my-agents"})
        try:
            pane = new_agent(tmp_path / "log")
            cli("send", "--no-enter", pane, "b", check=True)  # the scripted agent shows its permission dialog
            blocked = wait_state(pane, "blocked")
            wait_for(lambda: ntfy.got, "the notification at the receiver")
            arrived = time.time() - (time.monotonic() - ntfy.arrived[0])
            sent = ntfy.got[0]["body"]
            assert sent["title"] == f"claude needs your answer ({LOCAL_HOST}:{blocked['name']})"
            assert sent["message"].startswith("Do you want to proceed? — 1. Yes · 2. Yes, and don't ask again · 3. No"
                                              " — waiting "), sent
            print(f"\nblocked card → push at the receiver: {(arrived - float(blocked['since'])) * 1000:.0f} ms")
        finally:
            server.stop()
