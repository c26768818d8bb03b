"""Desktop notifications through desktop-notifier (issue 26, item 3), against a real D-Bus session bus
(dbus-daemon) and a notification server on it: the notification arrives with its title and body and an "Open in
board" action; a click (the server's ActionInvoked) opens the board at that pane; with no notification server on
the bus the failure is said once and the caller never waits."""

from __future__ import annotations

import logging
import subprocess
import time

import pytest

from dbusutil import Server, session_bus
from panewatch.runtime.notify import Notifier
from panewatch.runtime.settings import NotifySettings
from pushutil import wait_until

pytestmark = pytest.mark.needs("desktop")


def test_a_notification_reaches_the_desktop_and_a_click_opens_the_board_at_its_pane(
        monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    with session_bus() as address:
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)  # where desktop-notifier (dbus-fast) connects
        server = Server(address)
        notify = Notifier(NotifySettings(backends=("desktop",)), time.monotonic, open_board=opened.append,
                          environ={"DBUS_SESSION_BUS_ADDRESS": address})
        try:
            assert notify.desktop is not None
            assert notify.availability()[0] == ("desktop", True, "through desktop-notifier (D-Bus session bus)")
            fired = notify.on_change("laptop:work:1.0", "claude", "working", "blocked", "Allow rm? — 1. Yes · 2. No",
                                     board_pane="7")
            assert fired == ["desktop"]
            wait_until(lambda: server.service.got, 15, "the notification on the bus")
            got = server.service.got[0]
            assert got["app"] == "panewatch" and got["title"] == "claude needs your answer (laptop:work:1.0)"
            assert got["body"] == "Allow rm? — 1. Yes · 2. No"
            assert "default" in got["actions"] and "Open in board" in got["actions"]
            server.click(1)
            wait_until(lambda: opened, 15, "the board opened by the click")
            assert opened == ["7"]
        finally:
            notify.close()
            server.close()


def test_no_notification_server_is_said_once(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG, logger="panewatch.runtime.notify")
    with session_bus() as address:
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        notify = Notifier(NotifySettings(backends=("desktop",), cooldown=0), time.monotonic,
                          environ={"DBUS_SESSION_BUS_ADDRESS": address})
        try:
            for pane in ("a", "b"):
                assert notify.on_change(pane, "codex", "working", "blocked", "Allow?") == ["desktop"]
            wait_until(lambda: notify.failures["desktop"] == 2, 30, "both tries failed")
            # every D-Bus link it made is closed (two first sends at once each made one, and one stayed connected)
            wait_until(lambda: connections(address) == 0, 10, "no connection of ours left on the bus")
        finally:
            notify.close()
    said = [r for r in caplog.records if r.name == "panewatch.runtime.notify" and r.levelno >= logging.WARNING]
    assert len(said) == 1 and "desktop failed" in said[0].getMessage()


def connections(address: str) -> int:
    """Clients connected to the bus besides the one asking (their unique names, ':1.N')."""
    out = subprocess.run(["dbus-send", f"--bus={address}", "--print-reply", "--dest=org.freedesktop.DBus",
                          "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"], capture_output=True, text=True,
                         timeout=10)
    assert out.returncode == 0, out.stderr
    return out.stdout.count('string ":') - 1
