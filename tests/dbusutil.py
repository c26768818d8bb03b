"""A private D-Bus session bus (dbus-daemon) and a notification server on it (org.freedesktop.Notifications, as a
desktop's notification daemon serves it), for desktop notification tests: it records every Notify call and can
send ActionInvoked, what a person's click on a notification makes the daemon send."""

# ruff: noqa: F821, F722 - dbus-fast reads D-Bus signatures ('s', 'a{sv}') from string annotations, and the
# method names are the specification's

import asyncio
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dbus_fast.aio import MessageBus
from dbus_fast.service import ServiceInterface, method, signal


class Notifications(ServiceInterface):
    def __init__(self) -> None:
        super().__init__("org.freedesktop.Notifications")
        self.got: list[dict[str, Any]] = []

    @method()
    def Notify(self, app_name: "s", replaces_id: "u", app_icon: "s", summary: "s", body: "s", actions: "as",
               hints: "a{sv}", expire_timeout: "i") -> "u":
        self.got.append({"app": app_name, "title": summary, "body": body, "actions": list(actions)})
        return len(self.got)

    @method()
    def GetCapabilities(self) -> "as":
        return ["actions", "body"]

    @method()
    def CloseNotification(self, id: "u") -> None:
        pass

    @method()
    def GetServerInformation(self) -> "ssss":
        return ["fake", "panewatch tests", "1", "1.2"]

    @signal()
    def ActionInvoked(self, id: "u", key: "s") -> "us":
        return [id, key]

    @signal()
    def NotificationClosed(self, id: "u", reason: "u") -> "uu":
        return [id, reason]


class Server:
    """The notification server on its own loop and thread."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.service = Notifications()
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self.loop).result(10)

    async def _serve(self) -> None:
        self.bus = await MessageBus(bus_address=self.address).connect()
        self.bus.export("/org/freedesktop/Notifications", self.service)
        await self.bus.request_name("org.freedesktop.Notifications")

    def click(self, notification_id: int, key: str = "default") -> None:
        self.loop.call_soon_threadsafe(self.service.ActionInvoked, notification_id, key)

    def close(self) -> None:
        async def stop() -> None:
            self.bus.disconnect()
            await self.bus.wait_for_disconnect()
            self.bus._sock.close()  # dbus-fast leaves it to the GC (a ResourceWarning)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@contextmanager
def session_bus() -> Iterator[str]:
    """A private dbus-daemon; its address."""
    proc = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1", "--nopidfile"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        address = proc.stdout.readline().strip()
        assert address, "dbus-daemon gave no address"
        yield address
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
