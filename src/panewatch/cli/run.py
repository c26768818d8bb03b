"""`panewatch run [--agent ID] [--record F.cast] [--events F.jsonl] [--no-hooks] -- CMD ...`

Runs CMD on a pty inside the user's terminal, transparently: raw mode, every byte of input and
output passed through unchanged, the size follows the outer terminal, the exit status is CMD's,
and the terminal's modes come back on every way out (normal exit, crash, SIGTERM, SIGHUP). The
outer terminal answers CMD's queries itself, so this pane is not headless.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import os
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any

from panewatch.board.watchdog import Watchdog
from panewatch.core.machine import StateChange
from panewatch.core.prompt import parse_prompt
from panewatch.runtime.hooks import PaneHooks, remove_stale_sockets
from panewatch.runtime.live import LivePane, ManifestWatcher
from panewatch.runtime.notify import Notifier, open_board_at
from panewatch.runtime.settings import load_settings
from panewatch.runtime.terminal import InputPump, OuterTerminal, OutputGate, forward_signal, isatty

if TYPE_CHECKING:
    from panewatch.board.link import BoardLink


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run", help="run CMD in a pty inside this terminal and watch whether it waits on you",
        description="Run CMD transparently in a pty, detect its state live (blocked/working/idle/exited), "
                    "inject Claude Code hooks, notify. Exit status is CMD's.")
    parser.add_argument("--agent", metavar="ID", help="the agent's manifest id (default: from the process, "
                                                      "then the screen)")
    parser.add_argument("--record", metavar="F.cast", type=Path, help="record an asciicast v2 (o, i, r events)")
    parser.add_argument("--events", metavar="F.jsonl", type=Path, help="append one JSON line per state change")
    parser.add_argument("--no-hooks", action="store_true", help="do not add panewatch's hooks to Claude Code")
    parser.add_argument("--pane-id", metavar="ID", help="the pane's name in events and hooks "
                                                        "(default: $TMUX_PANE or run-PID)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ...")
    parser.set_defaults(func=main)


class _Signalled(BaseException):
    """SIGTERM/SIGHUP outside the event loop: unwinds through every `finally` that restores things."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _pane_id() -> str:
    for name in ("TMUX_PANE", "WEZTERM_PANE", "KITTY_WINDOW_ID"):
        if value := os.environ.get(name):
            return value
    return f"run-{os.getpid()}"


def main(ns: argparse.Namespace) -> int:
    argv = list(ns.command)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("panewatch run: no command given (usage: panewatch run [options] -- CMD ...)", file=sys.stderr)
        return 2
    terminal = OuterTerminal()
    errors: list[str] = []

    def manifest_error(message: str) -> None:
        errors.append(message)
        if not terminal.is_tty or not os.isatty(2):
            print(message, file=sys.stderr, flush=True)  # stderr is not the screen CMD draws on

    watcher = ManifestWatcher(on_error=manifest_error)
    if ns.agent is not None and watcher.get(ns.agent) is None:
        print(f"panewatch run: unknown agent {ns.agent!r} (known: {', '.join(m.id for m in watcher.current())})",
              file=sys.stderr)
        return 2
    files: list[IO[str]] = []
    try:
        events = _open(ns.events, "a", files)
        record = _open(ns.record, "w", files)
    except OSError as exc:
        for fh in files:
            fh.close()
        print(f"panewatch run: cannot open {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    signalled: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    for sig in previous:
        signal.signal(sig, _raise_signalled)
    try:
        terminal.raw()
        runner = _Runner(ns, argv, terminal, watcher, events, record)
        try:
            code = asyncio.run(runner.run())
        finally:
            errors += runner.errors
            signalled += runner.signalled
    except _Signalled as exc:
        signalled.append(exc.signum)
        code = 128 + exc.signum
    finally:
        terminal.restore()
        for fh in files:
            with contextlib.suppress(OSError):
                fh.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for message in errors:
        print(message, file=sys.stderr)
    if signalled:  # die of the same signal, so our parent sees what happened
        sys.stdout.flush()
        signal.signal(signalled[0], signal.SIG_DFL)
        os.kill(os.getpid(), signalled[0])
    return code


def _raise_signalled(signum: int, frame: FrameType | None) -> None:
    # Outside the event loop a SIGTERM/SIGHUP unwinds through every `finally` (terminal restore first).
    raise _Signalled(signum)


def _open(path: Path | None, mode: str, files: list[IO[str]]) -> IO[str] | None:
    if path is None:
        return None
    # "replace": a lone surrogate in a hook's text must not stop the log (that stops it for good).
    fh = path.open(mode, encoding="utf-8", errors="replace")
    files.append(fh)
    return fh


class _Runner:
    """The event-loop side of `run`: one LivePane, our stdin, signals, hooks, notifications."""

    def __init__(self, ns: argparse.Namespace, argv: list[str], terminal: OuterTerminal, watcher: ManifestWatcher,
                 events: IO[str] | None, record: IO[str] | None) -> None:
        self.ns, self.argv, self.terminal, self.watcher = ns, argv, terminal, watcher
        self.events, self.record = events, record
        self.errors: list[str] = []
        self.signalled: list[int] = []

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        self._stop: asyncio.Future[int] = loop.create_future()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            loop.call_soon_threadsafe(self._request_stop, signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):  # in the loop: a graceful stop that also ends CMD
            signal.signal(sig, on_signal)
        try:
            return await self._run_pane()
        finally:
            for sig in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, _raise_signalled)

    def _request_stop(self, signum: int) -> None:
        if not self._stop.done():
            self._stop.set_result(signum)

    def _output_failed(self, exc: OSError) -> None:
        # Our stdout is gone: a closed pipe ends us like SIGPIPE would, a dead terminal like a hangup.
        asyncio.get_running_loop().call_soon(self._request_stop,
                                             signal.SIGPIPE if exc.errno == errno.EPIPE else signal.SIGHUP)

    async def _run_pane(self) -> int:
        remove_stale_sockets()  # left by a `run` or daemon killed before it could remove them
        loop = asyncio.get_running_loop()
        gate = OutputGate(1, self._output_failed)
        pane_id = self.ns.pane_id or _pane_id()
        argv, env = self.argv, dict(os.environ)
        hooks = PaneHooks(lambda _pane, report: pane.report(report), clock=loop.time)
        if not self.ns.no_hooks:
            try:
                argv = await hooks.wire(pane_id, argv, env, cwd=os.getcwd(), manifests=self.watcher.get)
            except OSError as exc:  # no socket (or no way for this agent): the screen alone still detects
                self.errors.append(f"panewatch run: hooks disabled: {exc}")
        # However we die (kill -9 too), CMD is ended and the terminal's modes put back: by the watchdog.
        watchdog = Watchdog()
        await watchdog.start(self.terminal.for_watchdog())
        cols, rows = self.terminal.size()
        pane = LivePane(argv, pane_id=pane_id, cols=cols, rows=rows, env=env, agent=self.ns.agent, headless=False,
                        manifests=self.watcher, record=self.record, events=self.events, on_output=gate.child,
                        on_error=self.errors.append, tcattrs=self.terminal.child_modes())
        links: list[BoardLink] = []  # a notification's click opens the board at the id the link registered
        notifier, on_change = _notifier(pane, gate, self.errors, lambda: links[0] if links else None)
        pane.subscribe(on_change)
        try:
            pane.start()
        except OSError as exc:
            notifier.close()
            await hooks.close()
            await watchdog.close()
            self.errors.append(f"panewatch run: cannot run {argv[0]!r}: {exc.strerror or exc}")
            return 127 if exc.errno == errno.ENOENT else 126
        watchdog.watch(pane)
        pump = InputPump(pane, self.terminal.is_tty)
        from panewatch.board.link import BoardLink  # the sessions board sees this pane; never in its way

        link = BoardLink(pane, name=pane_id, command=shlex.join(self.argv),
                         terminal_size=self.terminal.size if self.terminal.is_tty else None)
        link.on_ring = notifier.ring  # the daemon's notification for this pane rings this terminal
        link.start()
        links.append(link)

        def follow_size() -> None:
            pane.resize(*self.terminal.size())

        def resumed() -> None:  # after a stop, our shell put the terminal back in cooked mode
            self.terminal.raw()
            follow_size()

        for sig, action in ((signal.SIGWINCH, follow_size), (signal.SIGCONT, resumed),
                            (signal.SIGINT, lambda: forward_signal(pane, signal.SIGINT))):
            loop.add_signal_handler(sig, action)
        try:
            pump.start()
            exited = loop.create_task(pane.wait())
            await asyncio.wait([exited, self._stop], return_when=asyncio.FIRST_COMPLETED)
            if self._stop.done():
                signum = self._stop.result()
                if signum != signal.SIGPIPE:
                    self.signalled.append(signum)
                return 128 + signum
            return exited.result()
        finally:
            for sig in (signal.SIGWINCH, signal.SIGCONT, signal.SIGINT):
                loop.remove_signal_handler(sig)
            pump.stop()
            await pane.close()
            await link.close()
            notifier.close()
            gate.close()
            await hooks.close()
            self.terminal.restore()  # ours to do now (main() does it again on every way out)
            watchdog.release_terminal()
            await watchdog.close()


REGISTER_WAIT = 2.0  # seconds a change waits for the board link to register before `run` notifies it itself


def _notifier(pane: LivePane, gate: OutputGate, errors: list[str],
              link: Callable[[], BoardLink | None]) -> tuple[Notifier, Callable[[StateChange], None]]:
    """Notifications for this pane while no daemon takes them (one connected notifies for every pane: once per
    dialog, board/notices.py, and rings this terminal through the link); the terminal backend writes through
    `gate`, between CMD's sequences."""
    settings = load_settings()
    errors.extend(f"panewatch: {warning}" for warning in settings.warnings)
    # The terminal backend only where a terminal shows it: never into a file or pipe CMD's output goes to.
    writer = gate.own if isatty(gate.fd) else None
    notifier = Notifier(settings, asyncio.get_running_loop().time, terminal_writer=writer, open_board=open_board_at)

    def notify(change: StateChange) -> None:
        board = link()
        if board is not None and board.connected and board.board_id is not None:
            return  # registered with the daemon: it notifies (a card that registers blocked too: board/notices.py)
        notifier.on_state_change(change, prompt_text=lambda: parse_prompt(pane.snapshot(), pane.verdict).text(),
                                 board_pane=board.board_id if board is not None else None)

    def on_change(change: StateChange) -> None:
        board = link()
        if board is not None and board.enabled and board.board_id is None:
            # Not registered yet: the daemon will hear of this state with the card; if no daemon takes the pane
            # by REGISTER_WAIT, this process notifies itself.
            asyncio.get_running_loop().call_later(REGISTER_WAIT, notify, change)
            return
        notify(change)

    return notifier, on_change


