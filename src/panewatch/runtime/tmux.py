"""tmux servers and control-mode connections to them, on the asyncio loop.

`TmuxServer`: which server (the default socket, `-L NAME`, `-S PATH`, the one in `$TMUX`), how to run
one-off commands against it, its version (older than MIN_VERSION: `TmuxVersionError`, naming the
minimum), and the sockets of the user's servers (for the daemon's `[tmux] watch = "auto"`) as tmux's own
rule trusts them: `check_socket_dir`/`check_socket` (a socket named with -S skips tmux's check, so we make it:
a directory another user made first would have us watch, start agents in, and type into their server).

`ControlClient`: one long-lived `tmux -C attach-session` to one session. It never takes part in window
sizing (`ignore-size`), cannot change anything by its own keys (`read-only`: our commands still run),
does not apply update-environment on attach (`-E`), and asks for flow control (`pause-after`): tmux
pauses a pane we lag on instead of buffering without bound. Its reader task only parses and hands
events on (`on_event`, in tmux's order, replies matched to commands in order); it never waits on
anything else, so tmux never waits on us. A reply handler passed to `send` runs inside that order:
it sees the reply before any later `%output` is handed on (a seed and the output after it line up).
When the server or the session goes, pending commands fail with TmuxError and `closed` is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import pwd
import shutil
import stat
import subprocess
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from panewatch.core.tmux_formats import MIN_VERSION, parse_version
from panewatch.core.tmux_protocol import ControlParser, Event, Notification, Reply, command
from panewatch.errors import TmuxError, TmuxUnsafeError, TmuxVersionError

log = logging.getLogger("panewatch.runtime.tmux")

PAUSE_AFTER = 2  # seconds of lag before tmux pauses a pane for us (we then resync it from its screen)
COMMAND_TIMEOUT = 5.0
READ_SIZE = 256 * 1024

ReplyHandler = Callable[[Reply], None]


@dataclass(frozen=True, slots=True)
class TmuxServer:
    """One tmux server: `socket_name` (-L), `socket_path` (-S), or neither (the default socket)."""

    socket_name: str | None = None
    socket_path: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TmuxServer | None:
        """The server of the tmux we run inside (`$TMUX` = socket,pid,session), if any."""
        value = (os.environ if env is None else env).get("TMUX", "")
        path = value.split(",")[0]
        return cls(socket_path=path) if path else None

    def args(self) -> list[str]:
        if self.socket_path:
            return ["-S", self.socket_path]
        if self.socket_name:
            return ["-L", self.socket_name]
        return []

    @property
    def label(self) -> str:
        """How the user names it: `default`, `-L NAME`, or the socket path."""
        if self.socket_path:
            return self.socket_path
        return f"-L {self.socket_name}" if self.socket_name else "default"

    def argv(self, *args: str) -> list[str]:
        return [tmux_binary(), *self.args(), *args]

    def command_argv(self, *args: str) -> list[str]:
        """argv for panewatch's own commands and control clients: with `-u`, as tmux writes every tab (the pane
        list's separator) and non-ASCII byte as `_` to a client whose locale is not UTF-8 (a daemon started with
        LANG=C saw no pane at all). Not for the user's terminal (`attach_argv`): that one follows their locale."""
        return self.argv("-u", *args)

    def socket_file(self, env: Mapping[str, str] | None = None) -> Path:
        """The server's socket on disk (the default one and `-L NAME` live in `socket_dir()`)."""
        return Path(self.socket_path) if self.socket_path else socket_dir(env) / (self.socket_name or "default")

    def attach_argv(self, pane_id: str, inside: str | None) -> tuple[list[str], bool]:
        """The command that shows pane `pane_id` (its window, the pane active) in the user's terminal, and
        whether it nests tmux. `inside`: the socket of the tmux the user is in (`$TMUX`), if any: the same
        server switches that client over; another one can only be attached nested (`$TMUX` unset)."""
        if inside and _same_file(inside, self.socket_file()):
            return self.argv("switch-client", "-t", pane_id), False
        return self.argv("attach-session", "-t", pane_id), bool(inside)

    async def run(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> list[str]:
        """A one-off command (for when no control client is attached): its stdout lines; TmuxError if it failed."""
        proc = await asyncio.create_subprocess_exec(*self.command_argv(*args), stdin=subprocess.DEVNULL,
                                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise TmuxError(f"tmux {' '.join(args[:1])} did not answer within {timeout:g} s") from None
        if proc.returncode != 0:
            raise TmuxError(err.decode("utf-8", "replace").strip() or f"tmux exited {proc.returncode}")
        return out.decode("utf-8", "replace").splitlines()


def tmux_binary() -> str:
    found = shutil.which("tmux")
    if found is None:
        raise TmuxError("tmux is not installed (panewatch watches tmux panes through tmux itself)")
    return found


def check_version() -> tuple[int, int] | None:
    """The installed tmux's version; TmuxVersionError below MIN_VERSION (unknown, e.g. `master`: accepted)."""
    try:
        text = subprocess.run([tmux_binary(), "-V"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise TmuxError(f"tmux -V failed: {exc}") from None
    version = parse_version(text)
    if version is not None and version < MIN_VERSION:
        raise TmuxVersionError(text, ".".join(map(str, MIN_VERSION)))
    return version


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def socket_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where tmux keeps this user's sockets, found as tmux finds it (tmux.c `make_label`): `$TMUX_TMPDIR`
    resolved (unset or not there: /tmp), then `tmux-UID`. Trusted only as `check_socket_dir` says."""
    base = (os.environ if env is None else env).get("TMUX_TMPDIR") or ""
    try:
        root = os.path.realpath(base, strict=True) if base else os.path.realpath("/tmp")
    except OSError:
        root = os.path.realpath("/tmp")
    return Path(root) / f"tmux-{os.getuid()}"


def _owner(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def check_socket_dir(path: Path, *, create: bool = False) -> None:
    """tmux's rule for its socket directory (tmux.c `make_label`), which `-S PATH` skips: a directory, not a
    link, owned by the user, with no access for others (group access is tmux's to allow). TmuxUnsafeError
    naming its owner and mode otherwise. Missing: fine (nothing is there), or made 0700 first with `create`."""
    if create:
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise TmuxError(f"cannot make tmux's socket directory {path}: {exc.strerror or exc}") from None
    info = _lstat(path, "tmux's socket directory")
    if info is None:
        return
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISDIR(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a directory"
        raise TmuxUnsafeError(str(path), f"it is {kind}, owned by {_owner(info.st_uid)}")
    if info.st_uid != os.getuid():
        raise TmuxUnsafeError(str(path), f"the directory is owned by {_owner(info.st_uid)}, not by you "
                                         f"(uid {os.getuid()}); mode {mode:04o}")
    if mode & stat.S_IRWXO:
        raise TmuxUnsafeError(str(path), f"the directory's mode {mode:04o} lets other users in")


def _lstat(path: Path, what: str) -> os.stat_result | None:
    """`path`'s own status (a link is not followed); None if it is missing."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TmuxError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def check_socket(path: Path) -> None:
    """A socket in the socket directory: the user's own (lstat: a link or another user's is refused).
    Missing: fine (tmux makes it, inside a directory `check_socket_dir` passed)."""
    info = _lstat(path, "tmux socket")
    if info is None:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise TmuxUnsafeError(str(path), "it is not a socket" + (" (a symbolic link)" if stat.S_ISLNK(info.st_mode)
                                                                else ""))
    if info.st_uid != os.getuid():
        raise TmuxUnsafeError(str(path), f"the socket is owned by {_owner(info.st_uid)}, not by you "
                                         f"(uid {os.getuid()})")


def check_server(server: TmuxServer, env: Mapping[str, str] | None = None) -> None:
    """A server named by `-L NAME` or the default socket lives in `socket_dir()`: its directory and socket
    as `check_socket_dir`/`check_socket` want them. `-S PATH` is the user's explicit choice (tmux checks
    nothing there either)."""
    if server.socket_path is None:
        folder = socket_dir(env)
        check_socket_dir(folder)
        check_socket(folder / (server.socket_name or "default"))


def user_servers(env: Mapping[str, str] | None = None,
                 refused: Callable[[TmuxUnsafeError], None] | None = None) -> list[TmuxServer]:
    """The user's tmux servers by their sockets: every socket in `socket_dir()` that passes tmux's rule (a
    directory or socket that does not is left out and passed to `refused`), plus `$TMUX`'s (the server the
    user is in, trusted as tmux trusts it)."""
    found: dict[str, TmuxServer] = {}
    folder = socket_dir(env)
    entries: list[os.DirEntry[str]] = []
    try:
        check_socket_dir(folder)
        with contextlib.suppress(OSError):
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except TmuxError as exc:
        if refused is not None and isinstance(exc, TmuxUnsafeError):
            refused(exc)
    for entry in entries:
        try:
            if not stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):  # a link is not followed
                continue
            check_socket(Path(entry.path))
        except TmuxUnsafeError as exc:
            if refused is not None:
                refused(exc)
            continue
        except (OSError, TmuxError):
            continue
        found[entry.path] = TmuxServer(socket_path=entry.path)
    inside = TmuxServer.from_env(env)
    if inside is not None and inside.socket_path is not None:
        found.setdefault(os.path.abspath(inside.socket_path), inside)
    return list(found.values())


PIPE_SIZE = 1 << 20  # bytes: Linux's default limit for an unprivileged pipe


def _widen(proc: asyncio.subprocess.Process) -> None:
    """Give the pipe tmux writes our output to room for a second or more of it. tmux stops reading a
    pane while a control client's own buffer holds 512 bytes or more (server-client.c), and that buffer
    waits on the pipe: a full 64 KiB pipe while we judge a burst would stall every pane of the client."""
    transport = getattr(proc, "_transport", None)
    pipe = transport.get_pipe_transport(1) if transport is not None else None
    handle = pipe.get_extra_info("pipe") if pipe is not None else None
    if handle is None or not hasattr(fcntl, "F_SETPIPE_SZ"):
        return
    with contextlib.suppress(OSError, ValueError):
        fcntl.fcntl(handle.fileno(), fcntl.F_SETPIPE_SZ, PIPE_SIZE)


class ControlClient:
    """One control-mode connection attached to session `session` (an id such as `$0`)."""

    def __init__(self, server: TmuxServer, session: str, on_event: Callable[[ControlClient, Event], None],
                 *, pause_after: int = PAUSE_AFTER, on_closed: Callable[[ControlClient], None] | None = None) -> None:
        self.server = server
        self.session = session
        self.on_event = on_event
        self.on_closed = on_closed
        self.pause_after = pause_after
        self.closed = asyncio.Event()
        self.attached = asyncio.Event()
        self.commands = 0
        self.name = ""  # tmux's name for this client (`client-1234`), for refresh-client -t
        self._proc: asyncio.subprocess.Process | None = None
        self._parser = ControlParser()
        self._pending: deque[ReplyHandler | None] = deque()
        self._reader: asyncio.Task[None] | None = None

    async def start(self, timeout: float = COMMAND_TIMEOUT) -> None:
        """Attach; TmuxError if tmux refuses or the session is gone before we are attached."""
        flags = f"ignore-size,read-only,pause-after={self.pause_after}"
        self._proc = await asyncio.create_subprocess_exec(
            *self.server.command_argv("-C", "attach-session", "-E", "-f", flags, "-t", self.session),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        _widen(self._proc)
        self._reader = asyncio.get_running_loop().create_task(self._read())
        waits = [asyncio.ensure_future(self.attached.wait()), asyncio.ensure_future(self.closed.wait())]
        _, pending = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        if not self.attached.is_set():
            await self.close()
            raise TmuxError(f"could not attach to tmux session {self.session} on {self.server.label}")
        # refresh-client without -t acts on the server's idea of the current client, which is not always
        # the connection sending it (measured: with three of ours attached, every -A went to the newest)
        lines = await self.run("display-message", "-p", "#{client_name}")
        self.name = lines[0].decode("utf-8", "replace") if lines else ""

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        try:
            while data := await stdout.read(READ_SIZE):
                for event in self._parser.feed(data):
                    self._dispatch(event)
        except Exception:  # the reader must not die silently: the client is gone for us either way
            log.exception("tmux control client reader failed")
        finally:
            self._finish()

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, Reply) and event.ours:
            handler = self._pending.popleft() if self._pending else None
            if handler is not None:
                try:
                    handler(event)
                except Exception:
                    log.exception("tmux reply handler failed")
            return
        if isinstance(event, Notification) and event.name == "session-changed":
            self.attached.set()
        try:
            self.on_event(self, event)
        except Exception:  # one bad event must not stop the stream (a sweep never dies on one pane)
            log.exception("tmux event handler failed")

    def _finish(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        pending, self._pending = list(self._pending), deque()
        gone = Reply(-1, False, (b"the tmux client went away (server or session gone)",), True)
        for handler in pending:
            if handler is not None:
                with contextlib.suppress(Exception):
                    handler(gone)
        if self.on_closed is not None:
            try:
                self.on_closed(self)
            except Exception:
                log.exception("tmux close handler failed")

    def send(self, lines: Sequence[bytes], on_reply: Sequence[ReplyHandler | None] | None = None) -> bool:
        """Write command lines (from `command()`), each with its reply handler (or None); False if closed."""
        proc = self._proc
        if self.closed.is_set() or proc is None or proc.stdin is None or proc.stdin.is_closing():
            return False
        handlers = list(on_reply or [])
        handlers += [None] * (len(lines) - len(handlers))
        self._pending.extend(handlers)
        self.commands += len(lines)
        proc.stdin.write(b"".join(lines))
        return True

    async def run(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> list[bytes]:
        """One command; its output lines. TmuxError if it failed, timed out, or the client went away."""
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()

        def done(reply: Reply) -> None:
            if not future.done():
                future.set_result(reply)

        if not self.send([command(*args)], [done]):
            raise TmuxError(f"the tmux client for session {self.session} is closed")
        try:
            reply = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise TmuxError(f"tmux {args[0]} did not answer within {timeout:g} s") from None
        if not reply.ok:
            raise TmuxError(b" ".join(reply.lines).decode("utf-8", "replace") or f"tmux {args[0]} failed")
        return list(reply.lines)

    async def close(self, timeout: float = 2.0) -> None:
        """Detach (end of input ends a control client) and reap the process."""
        proc = self._proc
        if proc is None:
            self.closed.set()
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self._reader, timeout)
        self._finish()
