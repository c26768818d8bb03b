"""`panewatch attach ID`: this terminal becomes the pane until the detach key (Ctrl-\\ by default).

The pane's screen is repainted on our alternate screen (the shell's screen comes back untouched on
detach), then every byte it writes is streamed here and every key typed here goes to the pane.
Keys go through the pane's endpoint with `attached=True`: the whole screen is in front of the
user, as under `panewatch run`, so a dialog may be answered by typing, but nothing is ever typed
into an exited pane. A headless pane takes this terminal's size; a `run` pane keeps its own.

The terminal's modes are restored on every way out: the detach key, the pane exiting, the daemon
going away, SIGTERM/SIGHUP, or an error.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import sys
import termios
import tty
from typing import Any

from panewatch.board import client
from panewatch.board.rpc import Peer, RemoteError
from panewatch.runtime.fd import write_all

DETACH_KEYS = {"^\\": b"\x1c", "^]": b"\x1d"}
# What an application may have switched on that must not outlive the attach.
_RESET = (b"\x1b[0m\x1b[?25h\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l"
          b"\x1b[?1l\x1b>\x1b[r")
_ENTER, _LEAVE = b"\x1b[?1049h\x1b[H\x1b[2J", b"\x1b[?1049l"


def attach(pane_ref: str, detach_key: bytes, key_name: str) -> int:
    if not (os.isatty(0) and os.isatty(1)):
        print("panewatch attach: needs a terminal on stdin and stdout", file=sys.stderr)
        return 2
    saved = termios.tcgetattr(0)
    session = _Attach(pane_ref, detach_key)
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        code = asyncio.run(session.run())
    finally:
        with contextlib.suppress(OSError):
            write_all(1, _RESET + _LEAVE)
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(0, termios.TCSADRAIN, saved)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if session.message:
        print(session.message, file=sys.stderr if code else sys.stdout)
    return code


class _Attach:
    def __init__(self, pane_ref: str, detach_key: bytes) -> None:
        self.pane_ref = pane_ref
        self.detach_key = detach_key
        self.message = ""
        self.pane_id = pane_ref
        self.card: dict[str, Any] = {}
        self._done: asyncio.Future[int] | None = None
        self._peer: Peer | None = None

    def _finish(self, code: int, message: str) -> None:
        if self._done is not None and not self._done.done():
            self.message = message
            self._done.set_result(code)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        for sig in (signal.SIGTERM, signal.SIGHUP):  # before raw mode: a signal always unwinds through restore
            loop.add_signal_handler(sig, self._finish, 128 + sig, f"[pane {self.pane_ref}: signal {sig}]")
        task = loop.create_task(self._run(loop))
        try:
            await asyncio.wait([task, self._done], return_when=asyncio.FIRST_COMPLETED)
            if not task.done():  # a signal during the setup: stop waiting on the daemon
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                return self._done.result()
            return task.result()
        finally:
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.remove_signal_handler(sig)

    async def _run(self, loop: asyncio.AbstractEventLoop) -> int:
        assert self._done is not None
        peer = self._peer = await client.connect()
        peer.on_notify = self._on_notify
        runner = peer.start()
        card = (await peer.request("prompt", pane=self.pane_ref))["card"]
        self.pane_id, self.card = card["id"], card
        if card.get("state") == "exited":
            await peer.close()
            raise RemoteError("exited", f"pane {self.pane_id} has exited")
        tty.setraw(0, termios.TCSANOW)
        write_all(1, _ENTER)
        await self._follow_size()
        await peer.request("attach", pane=self.pane_id)
        loop.add_reader(0, self._on_key)
        loop.add_signal_handler(signal.SIGWINCH, lambda: loop.create_task(self._follow_size()))
        runner.add_done_callback(lambda _t: self._finish(1, "[the panewatch daemon went away]"))
        try:
            return await self._done
        finally:
            loop.remove_reader(0)
            loop.remove_signal_handler(signal.SIGWINCH)
            peer.notify("detach")
            await peer.drain()
            await peer.close()

    async def _follow_size(self) -> None:
        if self.card.get("origin") != "headless" or self._peer is None:
            return
        with contextlib.suppress(OSError, RemoteError):
            cols, rows = os.get_terminal_size(1)
            if cols < 10 or rows < 4:  # a terminal that reports no size: keep the pane's own
                return
            await self._peer.request("resize", pane=self.pane_id, cols=cols, rows=rows)

    def _on_key(self) -> None:
        try:
            data = os.read(0, 4096)
        except OSError:
            data = b""
        if not data:
            self._finish(1, "[input closed]")
            return
        cut = data.find(self.detach_key)
        if cut >= 0:
            data = data[:cut]
        if data and self._peer is not None:
            self._peer.notify("keys", pane=self.pane_id, data=base64.b64encode(data).decode())
        if cut >= 0:
            self._finish(0, f"[detached from pane {self.pane_id}]")

    def _on_notify(self, op: str, msg: dict[str, Any]) -> None:
        if op == "screen":
            data = base64.b64decode(str(msg.get("data", "")))
            write_all(1, (b"\x1b[H\x1b[2J" + data) if msg.get("repaint") else data)
        elif op == "card":
            card = msg.get("card")
            if card is None:
                self._finish(0, f"[pane {self.pane_id} was closed]")
            elif isinstance(card, dict):
                self.card = card
                if card.get("state") == "exited":
                    self._finish(0, f"[pane {self.pane_id} exited: {card.get('detail') or ''}]")
        elif op == "error":
            write_all(1, b"\x07")  # a refused key: ring, do not scribble over the pane's screen
