"""Desktop notifications through desktop-notifier (a maintained library: D-Bus org.freedesktop.Notifications on
Linux, Notification Center on macOS), with a click that opens the board at the pane on both. Used by
runtime/notify.py's desktop backend when it can work here (`usable`): on Linux a session bus
($DBUS_SESSION_BUS_ADDRESS), on macOS always; else that backend runs notify-send or osascript as before.

desktop-notifier is asyncio: it runs on its own thread and event loop, started with the first notification, so a
slow notification server never delays the caller's loop (detection), and the loop stays to hear the click. A
notification counts as delivered when the server took it (desktop-notifier's `on_dispatched`); a failure is
reported once through `on_result`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from panewatch.runtime import system

TIMEOUT = 10.0  # seconds for the notification server to take one
OnResult = Callable[[bool, str], None]  # (delivered, why not)


def usable(environ: Mapping[str, str] | None = None) -> bool:
    """Whether desktop-notifier can deliver here: installed, and a session bus (Linux) or Notification Center (a
    real Mac: the macOS branch forced on Linux has no Notification Center to talk to)."""
    if importlib.util.find_spec("desktop_notifier") is None:
        return False
    if system.is_mac():
        return sys.platform == "darwin"
    return bool((os.environ if environ is None else environ).get("DBUS_SESSION_BUS_ADDRESS"))


class Desktop:
    def __init__(self, on_result: OnResult, app_name: str = "panewatch") -> None:
        self._on_result = on_result
        self._app_name = app_name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._notifier: Any = None
        self._lock = threading.Lock()
        self._sending: asyncio.Lock | None = None  # made on the notifier's own loop

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name="panewatch-desktop", daemon=True)
                self._thread.start()
                self._loop = loop
            return self._loop

    def send(self, title: str, body: str, on_click: Callable[[], None] | None = None) -> None:
        """Queue one notification; returns at once. `on_click`: a click on it or its "Open in board" button."""
        asyncio.run_coroutine_threadsafe(self._send(title, body, on_click), self._start())

    async def _send(self, title: str, body: str, on_click: Callable[[], None] | None) -> None:
        if self._sending is None:
            self._sending = asyncio.Lock()
        async with self._sending:  # one at a time: two first sends at once made two D-Bus links, one left open
            await self._send_one(title, body, on_click)

    async def _send_one(self, title: str, body: str, on_click: Callable[[], None] | None) -> None:
        dispatched = asyncio.Event()
        try:
            from desktop_notifier import Button, DesktopNotifier

            if self._notifier is None:
                self._notifier = DesktopNotifier(app_name=self._app_name, app_icon=None)
            buttons = [Button(title="Open in board", on_pressed=on_click)] if on_click is not None else []
            await asyncio.wait_for(self._notifier.send(title=title, message=body, on_clicked=on_click,
                                                       buttons=buttons, on_dispatched=dispatched.set), TIMEOUT)
        except Exception as exc:  # a notification must never break the runtime
            await self._leave()
            self._on_result(False, f"desktop-notifier: {type(exc).__name__}: {exc}")
            return
        if not dispatched.is_set():  # its D-Bus link is left half made (each try made another): start afresh
            await self._leave()
        self._on_result(dispatched.is_set(), "" if dispatched.is_set() else "no notification server took it")

    async def _leave(self) -> None:
        """Disconnect desktop-notifier's D-Bus link (it has no close of its own) and forget the notifier."""
        notifier, self._notifier = self._notifier, None
        bus = getattr(getattr(notifier, "_backend", None), "bus", None)
        if bus is not None:
            bus.disconnect()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(bus.wait_for_disconnect(), 2.0)
            sock = getattr(bus, "_sock", None)  # dbus-fast shuts its socket down but leaves closing it to the GC
            if sock is not None:
                sock.close()

    def close(self) -> None:
        """Leave the session bus and end the thread (bounded: a hung bus is not waited on for long)."""
        loop, self._loop = self._loop, None
        if loop is None:
            return

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._leave(), loop).result(3.0)
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(3.0)
            if not self._thread.is_alive():
                loop.close()
