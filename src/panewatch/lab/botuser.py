"""A seeded bot user for the fake agent: answers prompts and types tasks, like a person at a keyboard.

`BotUser` is pure: it is told the agent's true state and the time, and says what to type and when.
`FakeAgentProcess` runs ``python -m panewatch.lab.fakeagent`` in a real PTY, `TruthReader` tails its
truth file, and `run_session` puts the three together for N tasks (benchmark, demo, tests).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from panewatch.runtime.fd import set_winsize, write_all

ANSWER_DELAY = (3.0, 8.0)  # seconds from a prompt appearing to the answer
TASK_DELAY = (3.0, 10.0)  # seconds from a turn ending to the next task
TASK_TEXTS = (
    "fix the flaky test", "add type hints to the parser", "update the changelog", "speed up the build",
    "refactor the config loader", "handle empty input in the CLI", "bump the dependencies",
    "write docs for the new flag", "clean up the logging", "find why CI is red",
)


@dataclass(frozen=True, slots=True)
class Keys:
    at: float  # when to type, on the clock the caller passes to `observe`
    data: bytes
    reason: str  # "answer" or "task"


class BotUser:
    """Decides what to type and when, from the states it is told about. No I/O, no clock reads."""

    def __init__(self, tasks: int, *, seed: int = 7, time_scale: float = 1.0,
                 rng: random.Random | None = None) -> None:
        self.tasks = tasks
        self.time_scale = time_scale
        self._rng = rng if rng is not None else random.Random(f"panewatch.botuser:{seed}")
        self.pending: Keys | None = None
        self.tasks_typed = 0
        self.answers_typed = 0
        self.state: str | None = None
        self.done = False  # every task typed and the last turn over

    def observe(self, state: str, now: float) -> None:
        """The agent is now in `state` (working, blocked, idle, exited), since `now`."""
        if state == self.state:
            return
        self.state = state
        self.pending = None
        if state == "blocked":
            delay = self._rng.uniform(*ANSWER_DELAY)
            self.pending = Keys(now + delay * self.time_scale, b"1\r", "answer")
        elif state == "idle":
            if self.tasks_typed >= self.tasks:
                self.done = True
                return
            delay = self._rng.uniform(*TASK_DELAY)
            n = self.tasks_typed + 1
            text = f"Task {n}: {self._rng.choice(TASK_TEXTS)}\r"
            self.pending = Keys(now + delay * self.time_scale, text.encode(), "task")
        elif state == "exited":
            self.done = True

    def due(self, now: float) -> Keys | None:
        """The keys to type now, if their time has come (handed out once)."""
        keys = self.pending
        if keys is None or keys.at > now:
            return None
        self.pending = None
        if keys.reason == "answer":
            self.answers_typed += 1
        else:
            self.tasks_typed += 1
        return keys


# --- the real-PTY side -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TruthLine:
    t: float
    state: str
    prompt: int = 0
    task: int = 0


class TruthReader:
    """Tails the fake agent's truth file; only complete lines are returned."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def read_new(self) -> list[TruthLine]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return []
        self._offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        out = []
        for raw in lines:
            d = json.loads(raw)
            out.append(TruthLine(float(d["t"]), str(d["state"]), int(d.get("prompt", 0)), int(d.get("task", 0))))
        return out


def _become_tty_leader() -> None:
    """In the child: own session with the PTY as controlling terminal, like a shell would give."""
    os.setsid()
    with contextlib.suppress(OSError):
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class FakeAgentProcess:
    """``python -m panewatch.lab.fakeagent`` in a fresh PTY of cols x rows; we hold the master side."""

    def __init__(self, *, seed: int = 7, tasks: int | None = None, cols: int = 120, rows: int = 32,
                 time_scale: float = 1.0, truth_path: Path | None = None,
                 extra_args: Sequence[str] = ()) -> None:
        self.truth_path = truth_path
        master, slave = os.openpty()
        set_winsize(slave, cols, rows)
        argv = [sys.executable, "-m", "panewatch.lab.fakeagent", "--seed", str(seed),
                "--time-scale", repr(time_scale), *extra_args]
        if tasks is not None:
            argv += ["--tasks", str(tasks)]
        if truth_path is not None:
            argv += ["--truth", str(truth_path)]
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)}
        try:
            self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                         preexec_fn=_become_tty_leader, close_fds=True)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self.master_fd = master
        os.set_blocking(master, False)
        self.closed = False  # the master saw EOF/EIO: every process on the slave side is gone

    @property
    def pid(self) -> int:
        return self.proc.pid

    def read(self, timeout: float) -> bytes:
        """What the agent printed, waiting up to `timeout` for the first byte; b'' if nothing."""
        if self.closed:
            return b""
        ready, _, _ = select.select([self.master_fd], [], [], max(0.0, timeout))
        if not ready:
            return b""
        chunks = []
        while True:
            try:
                data = os.read(self.master_fd, 65536)
            except BlockingIOError:
                break
            except OSError:  # EIO on Linux once the slave side is closed
                self.closed = True
                break
            if not data:
                self.closed = True
                break
            chunks.append(data)
        return b"".join(chunks)

    def write(self, data: bytes) -> None:
        write_all(self.master_fd, data)

    def send_eof(self) -> None:
        """Ctrl-D at the start of a line: the agent's readline() returns '' and it exits cleanly."""
        self.write(b"\x04")

    def wait(self, timeout: float | None = None) -> int:
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.master_fd >= 0:
            os.close(self.master_fd)
            self.master_fd = -1

    def __enter__(self) -> FakeAgentProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class SessionResult:
    returncode: int
    truth: list[TruthLine] = field(default_factory=list)
    output_bytes: int = 0
    tasks_typed: int = 0
    answers_typed: int = 0
    seconds: float = 0.0


def run_session(*, seed: int = 7, tasks: int = 30, cols: int = 120, rows: int = 32, time_scale: float = 1.0,
                truth_path: Path | None = None, on_output: Callable[[bytes], None] | None = None,
                on_truth: Callable[[TruthLine], None] | None = None,
                on_keys: Callable[[Keys], None] | None = None, timeout: float | None = None,
                clock: Callable[[], float] = time.time) -> SessionResult:
    """Run a fake agent in a real PTY with a bot typing into it for `tasks` tasks, then EOF.

    `clock` must be the clock of the truth file's timestamps (wall time). Raises TimeoutError if
    the session outlives `timeout` seconds (the agent is killed).
    """
    with contextlib.ExitStack() as stack:
        if truth_path is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="panewatch-bot-"))
            truth_path = Path(tmp) / "truth.jsonl"
        bot = BotUser(tasks, seed=seed, time_scale=time_scale)
        agent = stack.enter_context(FakeAgentProcess(seed=seed, tasks=tasks, cols=cols, rows=rows,
                                                     time_scale=time_scale, truth_path=truth_path))
        reader = TruthReader(truth_path)
        result = SessionResult(returncode=-1)
        start = clock()
        eof_sent = False
        def pump(wait: float) -> bool:
            data = agent.read(wait)
            if data:
                result.output_bytes += len(data)
                if on_output is not None:
                    on_output(data)
            return bool(data)

        while not agent.closed:
            now = clock()
            if timeout is not None and now - start > timeout:
                raise TimeoutError(f"fake agent session still running after {timeout} s")
            pump(0.02 if bot.pending is None else min(0.02, max(0.0, bot.pending.at - now)))
            for line in reader.read_new():
                result.truth.append(line)
                bot.observe(line.state, line.t)
                if on_truth is not None:
                    on_truth(line)
            keys = bot.due(clock())
            if keys is not None:
                if on_keys is not None:
                    on_keys(keys)
                agent.write(keys.data)
            if bot.done and not eof_sent:
                agent.send_eof()
                eof_sent = True
            if eof_sent and agent.proc.poll() is not None:
                while pump(0.05):  # the last bytes (main screen restored) may still be in flight
                    pass
                break
        result.returncode = agent.wait(timeout=5)
        for line in reader.read_new():
            result.truth.append(line)
            if on_truth is not None:
                on_truth(line)
        result.tasks_typed, result.answers_typed = bot.tasks_typed, bot.answers_typed
        result.seconds = clock() - start
        return result
