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
import re
import select
import shlex
import signal
import sys
import termios
import tty
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import IO, Any

from panewatch.live import LivePane, ManifestWatcher, StateChange
from panewatch.notify import Notifier
from panewatch.prompt import parse_prompt
from panewatch.pty_session import get_winsize
from panewatch.settings import load_settings

FORCE_OWN_OUTPUT = 1.0  # seconds: our bytes wait at most this long for the child to finish a sequence


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


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


class OuterTerminal:
    """The user's terminal: raw mode in, restore out. A no-op when stdin is not a terminal."""

    def __init__(self, in_fd: int = 0, out_fd: int = 1) -> None:
        self.in_fd, self.out_fd = in_fd, out_fd
        self.saved: list[Any] | None = None
        with contextlib.suppress(termios.error, OSError):
            if os.isatty(in_fd):
                self.saved = termios.tcgetattr(in_fd)

    @property
    def is_tty(self) -> bool:
        return self.saved is not None

    def raw(self) -> None:
        if self.saved is not None:
            tty.setraw(self.in_fd, termios.TCSANOW)  # TCSANOW: keys typed ahead stay for CMD

    def restore(self) -> None:
        if self.saved is not None:
            with contextlib.suppress(termios.error, OSError):  # a hung-up terminal has no modes left
                termios.tcsetattr(self.in_fd, termios.TCSANOW, self.saved)

    def child_modes(self) -> list[Any] | None:
        """Terminal modes for CMD's pty: ours when we have a terminal (erase key, iutf8 …). Without a
        terminal nobody types and nobody watches: no echo, and `\n` stays `\n` in a pipe or file, so
        `echo hi | panewatch run -- cat > f` gives what `echo hi | cat > f` gives."""
        modes: list[Any]
        if self.saved is not None:
            modes = [list(v) if isinstance(v, list) else v for v in self.saved]
        else:
            master, slave = os.openpty()
            try:
                modes = termios.tcgetattr(slave)
            finally:
                os.close(master)
                os.close(slave)
            modes[3] &= ~(termios.ECHO | termios.ECHONL)
        if not _isatty(self.out_fd):
            modes[1] &= ~termios.ONLCR
        return modes

    def size(self) -> tuple[int, int]:
        for fd in (self.out_fd, self.in_fd, 2):
            with contextlib.suppress(OSError):
                cols, rows = get_winsize(fd)
                if cols > 0 and rows > 0:
                    return cols, rows
        return 80, 24


# A complete escape sequence starting at an ESC: CSI, OSC (BEL or ST), DCS/SOS/PM/APC (ST), or a short ESC.
_SEQUENCE = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]"  # CSI
    rb"|\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    rb"|[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC
    rb"|[ -/]+[0-~]|[\x30-\x4f\x51-\x57\x59\x5a\x5c\x60-\x7e])",  # ESC ( B, ESC 7, ESC \ …
    re.DOTALL)
_MAX_TAIL = 4096


def _utf8_incomplete(data: bytes) -> bool:
    """True if `data` ends inside a multi-byte UTF-8 character."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte or ASCII: how many bytes does its character need?
            need = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
            return need > back
    return False


class OutputGate:
    """The real stdout. CMD's output goes straight through; our own bytes (a notification's OSC 9 or
    BEL) are written only where CMD's stream is between escape sequences and characters."""

    def __init__(self, fd: int, on_error: Callable[[OSError], None]) -> None:
        self.fd = fd
        self.on_error = on_error
        self.broken = False
        self._tail = b""  # an unfinished sequence at the end of CMD's last chunk
        self._clean = True
        self._queued = bytearray()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def clean(self) -> bool:
        return self._clean

    def child(self, data: bytes) -> None:
        self._write(data)
        self._track(data)
        if self._queued and self._clean:
            self._flush_own()

    def own(self, data: bytes) -> None:
        """Write our own bytes now if CMD's stream allows it, else right after its sequence ends."""
        self._queued += data
        if self._clean:
            self._flush_own()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FORCE_OWN_OUTPUT, self._flush_own)

    def _flush_own(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        data, self._queued = bytes(self._queued), bytearray()
        self._write(data)

    def _track(self, data: bytes) -> None:
        buf = self._tail + data if self._tail else data
        start = buf.rfind(b"\x1b")
        self._tail = b""
        if start >= 0 and not _SEQUENCE.match(buf, start) and len(buf) - start < _MAX_TAIL:
            self._tail = buf[start:]
        self._clean = not self._tail and not _utf8_incomplete(buf)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.broken:
            try:
                sent = os.write(self.fd, view)
            except BlockingIOError:  # someone left our stdout non-blocking: wait for room
                select.select([], [self.fd], [], 1.0)
                continue
            except OSError as exc:
                self.broken = True
                self.on_error(exc)
                return
            view = view[sent:]

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _pane_id() -> str:
    for name in ("TMUX_PANE", "WEZTERM_PANE", "KITTY_WINDOW_ID"):
        if value := os.environ.get(name):
            return value
    return f"run-{os.getpid()}"


def _wants_hooks(argv: list[str], watcher: ManifestWatcher) -> bool:
    """Only a command that *is* claude gets `--settings` (a wrapper like npx would take it as its own)."""
    claude = watcher.get("claude")
    return claude is not None and Path(argv[0]).name in claude.processes


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
        from panewatch.hooks import remove_stale_sockets

        remove_stale_sockets()  # left by a `run` or daemon killed before it could remove them
        loop = asyncio.get_running_loop()
        gate = OutputGate(1, self._output_failed)
        pane_id = self.ns.pane_id or _pane_id()
        argv, env = self.argv, dict(os.environ)
        server = None
        if not self.ns.no_hooks and _wants_hooks(argv, self.watcher):
            from panewatch.hooks import ReportServer, hook_launcher, inject_claude_hooks

            try:
                server = ReportServer(lambda _pane, report: pane.report(report), clock=loop.time)
                await server.start()
            except OSError as exc:  # no socket, no hooks: the screen alone still detects everything
                self.errors.append(f"panewatch run: hooks disabled, no report socket: {exc}")
                server = None
            else:
                env.update(server.pane_env(pane_id))
                argv = inject_claude_hooks(argv, hook_launcher(), cwd=os.getcwd())
        cols, rows = self.terminal.size()
        pane = LivePane(argv, pane_id=pane_id, cols=cols, rows=rows, env=env, agent=self.ns.agent, headless=False,
                        manifests=self.watcher, record=self.record, events=self.events, on_output=gate.child,
                        on_error=self.errors.append, tcattrs=self.terminal.child_modes())
        notifier, on_change = _notifier(pane, gate, self.errors)
        pane.subscribe(on_change)
        try:
            pane.start()
        except OSError as exc:
            notifier.close()
            if server is not None:
                await server.close()
            self.errors.append(f"panewatch run: cannot run {argv[0]!r}: {exc.strerror or exc}")
            return 127 if exc.errno == errno.ENOENT else 126
        pump = _InputPump(pane, self.terminal.is_tty)
        from panewatch.board.link import BoardLink  # the sessions board sees this pane; never in its way

        link = BoardLink(pane, name=pane_id, command=shlex.join(self.argv))
        link.start()

        def follow_size() -> None:
            pane.resize(*self.terminal.size())

        def resumed() -> None:  # after a stop, our shell put the terminal back in cooked mode
            self.terminal.raw()
            follow_size()

        for sig, action in ((signal.SIGWINCH, follow_size), (signal.SIGCONT, resumed),
                            (signal.SIGINT, lambda: _forward(pane, signal.SIGINT))):
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
            if server is not None:
                await server.close()


def _forward(pane: LivePane, sig: int) -> None:
    """A signal meant for CMD (e.g. SIGINT while stdin is a pipe): to the pty's foreground group."""
    session = pane.session
    pgid = session.foreground_pgid() if session is not None else None
    if pgid:
        with contextlib.suppress(OSError):
            os.killpg(pgid, sig)


def _notifier(pane: LivePane, gate: OutputGate, errors: list[str]) -> tuple[Notifier, Callable[[StateChange], None]]:
    """Notifications for this pane; the terminal backend writes through `gate`, between CMD's sequences."""
    settings = load_settings()
    errors.extend(f"panewatch: {warning}" for warning in settings.warnings)
    # The terminal backend only where a terminal shows it: never into a file or pipe CMD's output goes to.
    writer = gate.own if _isatty(gate.fd) else None
    notifier = Notifier(settings, asyncio.get_running_loop().time, terminal_writer=writer)

    def on_change(change: StateChange) -> None:
        if change.old is None:
            return
        prompt_text = ""
        if change.new.state == "blocked":
            prompt_text = parse_prompt(pane.snapshot(), pane.verdict).text()
        notifier.on_change(change.pane, change.agent or "", change.old.state, change.new.state, prompt_text)

    return notifier, on_change


class _InputPump:
    """Our stdin → the pane, byte for byte. A pipe's end becomes an EOF (^D) for CMD."""

    def __init__(self, pane: LivePane, is_tty: bool) -> None:
        self.pane = pane
        self.is_tty = is_tty
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._reading = False
        self._last = b"\n"

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            self._loop.add_reader(0, self._on_readable)
            self._reading = True
        except (OSError, ValueError):  # a regular file or /dev/null cannot be polled: read it in a thread
            self._task = self._loop.create_task(self._read_file())

    def _on_readable(self) -> None:
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._write(data)
            return
        self._stop_reader()
        self._eof()

    async def _read_file(self) -> None:
        assert self._loop is not None
        while data := await self._loop.run_in_executor(None, os.read, 0, 65536):
            self._write(data)
        self._eof()

    def _write(self, data: bytes) -> None:
        self.pane.write(data)
        self._last = data[-1:]

    def _eof(self) -> None:
        # `echo hi | panewatch run -- cat` must end like `echo hi | cat`: VEOF at a line start is EOF,
        # after a partial line the first one only ends that line.
        if not self.is_tty:
            self.pane.write(b"\x04" if self._last in (b"\n", b"\r") else b"\x04\x04")

    def _stop_reader(self) -> None:
        if self._reading and self._loop is not None:
            self._loop.remove_reader(0)
        self._reading = False

    def stop(self) -> None:
        self._stop_reader()
        if self._task is not None:
            self._task.cancel()
