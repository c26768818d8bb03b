"""`[board] port` in config.toml: the daemon listens there; `serve --port` and $PANEWATCH_BOARD_PORT override it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from boardutil import cli, start_serve
from panewatch.runtime.settings import BoardSettings, load_settings, settings_path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def configure(text: str) -> Path:
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_port_setting_and_its_bad_values() -> None:
    assert load_settings().board == BoardSettings(port=0)
    configure("[board]\nport = 8765\n")
    assert load_settings().board.port == 8765 and load_settings().warnings == ()
    for bad in ("70000", "-1", "true", '"8765"'):
        path = configure(f"[board]\nport = {bad}\ncolour = 1\n")
        settings = load_settings()
        assert settings.board.port == 0, bad
        assert f"{path}: board.port: must be a TCP port" in "\n".join(settings.warnings)
        assert f"{path}: board.colour: unknown key (known: port, exited_ttl)" in settings.warnings


def test_the_daemon_listens_on_the_configured_port_and_serve_port_overrides_it() -> None:
    configured = free_port()
    configure(f"[board]\nport = {configured}\n")
    server = start_serve()
    try:
        assert server.port == configured
        assert json.loads(cli("board", "--json", check=True).stdout)["port"] == configured
    finally:
        server.stop()
    override = free_port()
    server = start_serve("--port", str(override))
    try:
        assert server.port == override
    finally:
        server.stop()
    env_port = free_port()
    server = start_serve(env={"PANEWATCH_BOARD_PORT": str(env_port)})
    try:
        assert server.port == env_port
    finally:
        server.stop()


def test_the_autostarted_daemon_uses_the_configured_port() -> None:
    configured = free_port()
    configure(f"[board]\nport = {configured}\n")
    info = json.loads(cli("board", "--json", check=True).stdout)  # no daemon yet: `board` starts one
    try:
        assert info["port"] == configured and info["base"] == f"http://127.0.0.1:{configured}/"
    finally:
        cli("serve", "--stop", check=True)


def test_a_configured_port_in_use_is_named_with_where_it_came_from() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = configure(f"[board]\nport = {port}\n")
        out = subprocess.run([sys.executable, "-m", "panewatch", "serve", "--quiet"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=30, env={**os.environ, "PANEWATCH_BOARD": "off"})
    assert out.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port} (the port is from [board] port in {path})" in out.stderr
