from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Every real component a test needs (`@pytest.mark.needs("browser")`): missing fails the test unless
# PANEWATCH_SKIP names it, and the run ends with the list of skips (tests/components.py).
from components import (  # noqa: F401  (pytest finds hooks by name in a conftest)
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_setup,
    pytest_terminal_summary,
)

DATA = Path(__file__).parent / "data"
# The published example: a real Claude Code 2.1.303 permission dialog, words placed by CSI n G.
EXAMPLE_PATH = DATA / "published_example.raw"


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's own config, data, state or runtime dir."""
    monkeypatch.setenv("PANEWATCH_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("PANEWATCH_DATA_DIR", str(tmp_path / "data"))  # the user corpus (report-wrong, verify --save)
    monkeypatch.setenv("PANEWATCH_STATE_DIR", str(tmp_path / "state"))  # the stats database
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("PANEWATCH_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("PANEWATCH_BOARD", "off")  # no `run` in a test starts a board daemon unless it asks to
    monkeypatch.setenv("PANEWATCH_CACHE_DIR", str(tmp_path / "cache"))  # agents' `--version` answers
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)  # no test notifies the developer's desktop
    monkeypatch.delenv("PANEWATCH_NOTIFY_URLS", raising=False)  # nor their phone
    os.environ.pop("PANEWATCH_CORPUS", None)


@pytest.fixture(autouse=True)
def _private_tmux(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test (a daemon watching tmux by default) sees the developer's tmux servers or another test's:
    a short private TMUX_TMPDIR (a socket path must stay under ~100 bytes), no $TMUX."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="pwt", dir="/tmp")
    monkeypatch.setenv("TMUX_TMPDIR", folder)
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("TMUX_PANE", raising=False)
    monkeypatch.setenv("PANEWATCH_TMUX_NEW", "off")  # `panewatch new` headless unless a test asks for tmux
    yield
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def example() -> bytes:
    data = EXAMPLE_PATH.read_bytes()
    assert data.startswith(b"\r\x1b[1C\x1b[1B\x1b[39mDo\x1b[5Gyou")
    return data


@pytest.fixture
def serve() -> Iterator[Any]:
    """A real `panewatch serve` daemon in this test's private runtime dir (tests/boardutil.py)."""
    from boardutil import start_serve

    server = start_serve()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Any]:
    """A real OpenSSH server on a loopback port (testing/sshd.py), its "remote" tmux private to the test."""
    from panewatch.testing.sshd import Sshd, sshd_binary

    if sshd_binary() is None:
        pytest.fail("OpenSSH's server is not installed (apt-get install openssh-server): remote tests need it")
    server = Sshd(tmp_path / "sshd")
    with server:
        yield server
