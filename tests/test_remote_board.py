"""The daemon with `[[remote]]` hosts (real sshd, real tmux, real `panewatch serve`): remote panes are cards
named HOST:%ID, a send into a blocked one is refused, the link stopped turns them unreachable (and refuses
input) and the reconnect brings their states back; a host refusing the key leaves the other one alone."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from boardutil import cli, start_serve, wait_for
from panewatch.testing.sshd import Sshd
from tmuxutil import SHOW_DIALOG

pytestmark = pytest.mark.needs("ssh", "tmux")  # tests/components.py: fail without them unless PANEWATCH_SKIP


def cards() -> list[dict[str, Any]]:
    out = cli("ls", "--json")
    return [c for c in json.loads(out.stdout)["panes"] if c.get("origin") == "remote"] if out.returncode == 0 else []


def card(pane_id: str) -> dict[str, Any] | None:
    return next((c for c in cards() if c["id"] == pane_id), None)


def test_remote_hosts_are_cards_with_honest_staleness(sshd: Sshd, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(sshd.ssh_config, home / ".ssh" / "config")  # the user's own ssh config names the hosts
    config = Path(os.environ["PANEWATCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[tmux]\nwatch = "off"\n\n[[remote]]\nhost = "devbox"\n\n'
                                        '[[remote]]\nhost = "devbox-badkey"\nname = "refusing"\n')
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", SHOW_DIALOG)
    log = tmp_path / "serve.log"
    server = start_serve("--log-file", str(log), env={"HOME": str(home)})
    try:
        blocked = wait_for(lambda: (c := card("devbox:%0")) and c["state"] == "blocked" and c, "the remote card", 30)
        assert blocked["host"] == "devbox" and blocked["target"] == "devbox:work:0.0" and blocked["tmux_pane"] == "%0"
        refused = cli("send", "devbox:%0", "yes")
        assert refused.returncode == 1 and "blocked on a prompt" in refused.stderr
        assert not [c for c in cards() if c["id"].startswith("refusing:")]  # the refused host shows no panes ...
        sshd.stop()
        wait_for(lambda: (c := card("devbox:%0")) and c["state"] == "unreachable", "unreachable", 20)
        refused = cli("send", "devbox:%0", "hello")
        assert refused.returncode == 1 and "nothing was typed" in refused.stderr, refused.stderr
        listing = cli("ls", check=True).stdout
        assert "host devbox: link down for" in listing and "host refusing: link down for" in listing, listing
        assert "refused every key" in listing
        sshd.start()
        wait_for(lambda: (c := card("devbox:%0")) and c["state"] == "blocked", "resynchronised after the reconnect", 30)
        hosts = wait_for(lambda: (h := json.loads(cli("ls", "--json").stdout)["hosts"]) and h["devbox"]["link"] == "up"
                         and h, "the host's link up again in ls --json", 20)
        assert hosts["devbox"]["away"] > 0 and hosts["refusing"]["link"] == "down"
        assert "host devbox" not in cli("ls", check=True).stdout  # an up host's panes speak for it
    finally:
        server.stop()
    text = log.read_text()
    assert "refusing: it refused every key" in text  # ... and the log says why, naming it
    assert "devbox: back after" in text


def test_attach_on_a_remote_pane_attaches_the_hosts_tmux_over_ssh(sshd: Sshd, tmp_path: Path) -> None:
    import sys

    from panewatch.testing.drive import PtyAgent

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(sshd.ssh_config, home / ".ssh" / "config")
    config = Path(os.environ["PANEWATCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[tmux]\nwatch = "off"\n\n[[remote]]\nhost = "devbox"\n')
    sshd.tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "32", "sleep 600")
    sshd.tmux("new-window", "-d", "-t", "work", "-n", "agent", "cat")
    server = start_serve(env={"HOME": str(home)})

    def terminals() -> list[str]:  # clients on the host's tmux that are terminals, not control mode
        out = sshd.tmux("list-clients", "-F", "#{client_control_mode} #{client_session} #{window_index}")
        return [line[2:] for line in out.splitlines() if line.startswith("0 ")]

    try:
        wait_for(lambda: card("devbox:%1"), "the remote pane's card", 30)
        attach = [sys.executable, "-m", "panewatch", "attach", "devbox:%1"]
        with PtyAgent(attach, env={**os.environ, "HOME": str(home)}):
            wait_for(lambda: terminals() == ["work 1"], "a terminal attached at the remote pane's window", 30)
    finally:
        server.stop()
