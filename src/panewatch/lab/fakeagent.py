"""A fake agent that draws like Claude Code 2.1.x, for the live benchmark, the load generator and the demo.

Run as ``python -m panewatch.lab.fakeagent [--seed N] [--tasks N] [--truth FILE] [--fast]`` in a PTY.
Everything it does is a seeded, deterministic sequence of steps (`FakeAgentScript.steps`): write
bytes, sleep, wait for a line. The program is a thin interpreter over those steps, so one process
can also drive many fakes (`interpret_async`). The bytes imitate the real captures: words placed
with ``CSI n G``, no ``\\n`` on the live screen, the alternate screen, the ◐/◑/✳ window title.

The TRUE state goes to a side file (``--truth``), one JSON line per change, written right after the
bytes that show it were flushed: ``{"t": time.time(), "state": ..., "prompt": n, "task": n}``.
Only a scorer may read it; detectors must work from the screen.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import termios
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import IO, Any, Literal

from panewatch.runtime.fd import write_all

# 256-colour indices seen in Claude Code 2.1.332 captures.
_ORANGE, _SHIMMER, _GREY, _RULE, _BLUE, _DASH, _WHITE, _USER_BG = 174, 216, 246, 244, 153, 239, 231, 237
_GLYPHS = "·✢*✶✻✽✻✶*✢"  # the spinner breathes out and back, as the real one does
_VERBS = ("Flambéing", "Unraveling", "Accomplishing", "Cogitating", "Pondering", "Simmering", "Noodling")
_COMMANDS = (
    ("pytest -q tests/test_parser.py", "Run the parser tests", "12 passed in 0.84s"),
    ("npm test -- --watch=false", "Run the unit tests", "Tests: 48 passed, 48 total"),
    ("rm -rf build/", "Remove the build directory", "(No content)"),
    ("git diff --stat", "Show what changed", "3 files changed, 41 insertions(+), 7 deletions(-)"),
    ("make lint", "Run the linters", "All checks passed!"),
    ("python scripts/migrate.py --dry-run", "Dry-run the migration", "2 migrations pending"),
    ("cargo build --release", "Build the release binary", "Finished release [optimized] target(s)"),
)
_INTROS = (
    "I'll look at the failing case first.", "Let me run the tests to see where we stand.",
    "I'll check the current behaviour.", "Now I'll verify the change.", "Let me inspect the build output.",
)
_SENTENCES = (
    "The fix is in place and the tests pass.", "I updated the parser to handle empty input.",
    "The flaky test was racing on a shared temp directory; it now uses its own.",
    "I kept the public API unchanged.", "The build is green again.",
    "I also removed a stale import that the linter flagged.",
)
QUESTION = "Would you like me to add a regression test?"
PROMPT_PROBABILITY = 0.8  # ~25 prompts over 30 tasks, as in the published run
TITLE_IDLE, TITLE_WORKING = "✳ Claude Code", ("◐ Claude Code", "◑ Claude Code")

State = Literal["working", "blocked", "idle", "exited"]


# --- the seeded plan ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ToolCall:
    think: float  # seconds of spinner before the call
    stall: float  # seconds the tool runs printing nothing at all
    prompt: bool  # a permission prompt guards it
    command: str
    description: str
    result: str
    intro: str


@dataclass(frozen=True, slots=True)
class TaskPlan:
    index: int  # 1-based
    verb: str
    tools: tuple[ToolCall, ...]
    final_think: float
    reply: tuple[str, ...]  # sentences of the final answer
    asks_question: bool  # the reply ends with QUESTION


def _plan_task(rng: random.Random, index: int) -> TaskPlan:
    n = rng.randint(1, 3)
    guarded = rng.randrange(n) if rng.random() < PROMPT_PROBABILITY else -1
    tools = []
    for i in range(n):
        command, description, result = rng.choice(_COMMANDS)
        tools.append(ToolCall(think=round(rng.uniform(0.5, 2.0), 1), stall=round(rng.uniform(0.5, 6.0), 2),
                              prompt=i == guarded, command=command, description=description,
                              result=result, intro=rng.choice(_INTROS)))
    reply = tuple(rng.sample(_SENTENCES, rng.randint(1, 3)))
    return TaskPlan(index, rng.choice(_VERBS), tuple(tools), round(rng.uniform(1.0, 2.5), 1),
                    reply, rng.random() < 0.3)


def plan_tasks(seed: int) -> Generator[TaskPlan, None, None]:
    """The endless, seeded sequence of tasks; the first N are the same whatever N is."""
    rng = random.Random(f"panewatch.fakeagent:{seed}")
    index = 0
    while True:
        index += 1
        yield _plan_task(rng, index)


# --- steps -------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Truth:
    state: State
    prompt: int  # prompts drawn so far (while blocked: the number of this one)
    task: int  # tasks started so far


@dataclass(frozen=True, slots=True)
class Write:
    data: bytes
    truth: Truth | None = None  # record this once the bytes are flushed


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float  # script time; interpreters multiply by their time scale


@dataclass(frozen=True, slots=True)
class ReadLine:
    purpose: Literal["task", "answer"]  # the interpreter sends back the line, or None at EOF


Step = Write | Sleep | ReadLine
Steps = Generator[Step, str | None, None]


# --- drawing (pure bytes builders) ------------------------------------------------------------

def _fg(c: int) -> str:
    return f"\x1b[38;5;{c}m"


def words_at(text: str, col: int) -> str:
    """Text from the cursor at column `col` (1-based), each later word placed by CSI n G like Ink."""
    out, pos = [], col
    for i, word in enumerate(text.split(" ")):
        if i:
            out.append(f"\x1b[{pos}G")
        out.append(word)
        pos += len(word) + 1
    return "".join(out)


def title(text: str) -> bytes:
    return f"\x1b]0;{text}\x07".encode()


def spinner_frame(frame: int, verb: str, elapsed: float) -> bytes:
    """One 10 Hz spinner frame redrawn over its own row with CR (~60 bytes)."""
    glyph = _GLYPHS[frame % len(_GLYPHS)]
    return (f"\r{_fg(_ORANGE)}{glyph}\x1b[39m {verb}… ({int(elapsed)}s · esc to interrupt)\x1b[K").encode()


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


class Layout:
    """Claude Code's full-screen layout: banner, transcript, spinner row, input box, footer."""

    def __init__(self, cols: int = 120, rows: int = 32, seed: int = 0) -> None:
        self.cols, self.rows, self.seed = max(cols, 40), max(rows, 18), seed
        self.spin_row = self.rows - 5
        self.top, self.bottom = 6, self.rows - 7  # transcript rows
        self.transcript: list[str] = []  # one already-rendered row each (no cursor moves but CSI G)

    # transcript entries
    def add_user(self, text: str) -> None:
        text = text[: self.cols - 4]
        pad = " " * (self.cols - 2 - len(text))
        self.transcript += ["", f"\x1b[48;5;{_USER_BG}m{_fg(_GREY)}❯ {_fg(_WHITE)}{text}\x1b[39m{pad}\x1b[49m", ""]

    def add_prose(self, text: str, bullet: bool = True) -> None:
        for i, line in enumerate(_wrap(text, self.cols - 4)):
            lead = f"{_fg(_WHITE)}●\x1b[39m\x1b[3G" if bullet and i == 0 else "\x1b[3G"
            self.transcript.append(lead + words_at(line, 3))

    def add_tool(self, command: str) -> None:
        self.transcript.append(f"{_fg(_GREY)}●\x1b[39m\x1b[3G\x1b[1mBash\x1b[22m({command[: self.cols - 10]})")

    def add_result(self, text: str) -> None:
        self.transcript += [f"{_fg(_GREY)}  ⎿  {text[: self.cols - 6]}\x1b[39m", ""]

    def add_status(self, text: str) -> None:
        self.transcript += ["", f"{_fg(_GREY)}✻\x1b[3G{text}\x1b[39m"]

    # whole regions
    def banner(self) -> bytes:
        return ("\x1b[H\r\x1b[1B"
                f"{_fg(_ORANGE)} ▐\x1b[48;5;16m▛███▛█\x1b[12G\x1b[39m\x1b[49m\x1b[1mClaude Code\x1b[24G"
                f"\x1b[22m{_fg(_GREY)}v2.1.332\r\x1b[1B"
                f"{_fg(_ORANGE)}▝▜\x1b[48;5;16m█████\x1b[49m█▀\x1b[12G{_fg(_GREY)}panewatch fake agent · seed"
                f" {self.seed}\r\x1b[1B{_fg(_ORANGE)} ▝▝   ▝▝ \x1b[12G{_fg(_GREY)}~/demo/project\x1b[39m").encode()

    def draw_transcript(self) -> bytes:
        height = self.bottom - self.top + 1
        shown = self.transcript[-height:]
        shown += [""] * (height - len(shown))
        return "".join(f"\x1b[{self.top + i};1H\x1b[2K{line}" for i, line in enumerate(shown)).encode()

    def chrome(self, working: bool) -> bytes:
        """Spinner row (cleared), input box between two rules, footer."""
        rule = f"{_fg(_RULE)}{'─' * self.cols}"
        hint = "esc to interrupt" if working else "? for shortcuts"
        return (f"\x1b[{self.spin_row};1H\x1b[2K\x1b[{self.spin_row + 1};1H\x1b[2K"
                f"\x1b[{self.rows - 3};1H{rule}\r\x1b[1B\x1b[39m❯\xa0\x1b[7m \x1b[27m\x1b[K"
                f"\r\x1b[1B{rule}\r\x1b[2C\x1b[1B{_fg(_GREY)}⏸ manual mode on · {hint}\x1b[39m\x1b[K").encode()

    def park(self) -> bytes:
        """Cursor to the spinner row, where CR-redrawn frames land."""
        return f"\x1b[{self.spin_row};1H".encode()

    PROMPT_HEIGHT = 12

    def prompt(self, command: str, description: str) -> bytes:
        """Claude Code's Bash permission dialog over the bottom rows; the cursor ends on its last row."""
        first = self.rows - self.PROMPT_HEIGHT + 1
        dashes = f"\r\x1b[1B{_fg(_DASH)}{'╌' * self.cols}"
        always = words_at(f"Yes, and don't ask again for {command.split(' ')[0]} commands in ~/demo/project", 7)
        no = words_at("No, and tell Claude what to do differently", 7)
        return (f"\x1b[{first};1H\x1b[J{_fg(_BLUE)}{'─' * self.cols}"
                f"\r\x1b[1C\x1b[1B\x1b[1mBash command"
                f"\r\x1b[1C\x1b[1B\x1b[22m{_fg(_GREY)}{words_at(description, 2)}"
                f"{dashes}\r\x1b[1C\x1b[1B\x1b[39m{words_at(command[: self.cols - 4], 2)}{dashes}"
                f"\r\x1b[1C\x1b[1B\x1b[39m{words_at('Do you want to proceed?', 2)}"
                f"\r\x1b[1B \x1b[38;5;{_BLUE}m❯\x1b[39m {_fg(_GREY)}1. {_fg(_BLUE)}Yes\x1b[39m\x1b[K"
                f"\r\x1b[3C\x1b[1B{_fg(_GREY)}2. \x1b[39m"
                f"{always}\r\x1b[1B   {_fg(_GREY)}3. \x1b[39m{no}"
                f" {_fg(_GREY)}(esc)\x1b[39m\r\x1b[1B\x1b[K"
                f"\r\x1b[1C\x1b[1B{_fg(_GREY)}Esc to cancel · Tab\x1b[22Gto amend\x1b[39m\x1b[K").encode()

    def erase_prompt(self) -> bytes:
        """What Ink does after the answer: up to the dialog's first row, erase to the end of screen."""
        return f"\r\x1b[{self.PROMPT_HEIGHT - 1}A\x1b[J".encode()


ENTER_BYTES = b"\x1b[?1049h\x1b[2J\x1b[H\x1b[?25l"
EXIT_BYTES = b"\x1b[?1049l\x1b[?25h\x1b]0;\x07"


# --- the script --------------------------------------------------------------------------------

class FakeAgentScript:
    """The fake agent's whole life as steps; `steps()` is a generator fed with the lines read."""

    def __init__(self, seed: int = 7, tasks: int | None = None, cols: int = 120, rows: int = 32) -> None:
        self.seed, self.tasks = seed, tasks
        self.layout = Layout(cols, rows, seed)
        self._plans = plan_tasks(seed)
        self._frame = 0  # spinner frames drawn so far (drives the glyph and the ◐/◑ title)
        self._task = self._prompts = 0

    def plan(self, n: int) -> list[TaskPlan]:
        """The first `n` task plans (a fresh generator: does not disturb `steps()`)."""
        gen = plan_tasks(self.seed)
        return [next(gen) for _ in range(n)]

    def truth(self, state: State) -> Truth:
        """The true state now, with the prompt and task counters."""
        return Truth(state, self._prompts, self._task)

    def _spin(self, verb: str, seconds: float, started: float) -> Generator[Step, str | None, float]:
        """10 Hz frames for `seconds` of script time; returns the elapsed time afterwards."""
        elapsed = started
        for _ in range(max(1, round(seconds * 10))):
            data = spinner_frame(self._frame, verb, elapsed)
            if self._frame % 10 == 0:  # the real title flips about once a second while working
                data = title(TITLE_WORKING[(self._frame // 10) % 2]) + data
            self._frame += 1
            yield Write(data)
            yield Sleep(0.1)
            elapsed += 0.1
        return elapsed

    def steps(self) -> Steps:
        scr = self.layout
        yield Write(ENTER_BYTES + title(TITLE_IDLE) + scr.banner() + scr.draw_transcript()
                           + scr.chrome(working=False), self.truth("idle"))
        while True:
            line = yield ReadLine("task")
            if line is None:
                break
            if self.tasks is not None and self._task >= self.tasks:
                continue  # the session's planned tasks are done: stay idle until EOF
            plan = next(self._plans)
            self._task += 1
            answered = yield from self._turn(plan, line.strip())
            if not answered:
                break
        yield Write(EXIT_BYTES, self.truth("exited"))

    def _turn(self, plan: TaskPlan, task_text: str) -> Generator[Step, str | None, bool]:
        """One task from Enter to the idle screen; False if stdin closed at a prompt."""
        scr = self.layout
        scr.add_user(task_text or f"Task {plan.index}")
        yield Write(title(TITLE_WORKING[0]) + scr.draw_transcript() + scr.chrome(working=True) + scr.park()
                    + spinner_frame(self._frame, plan.verb, 0.0), self.truth("working"))
        elapsed = 0.0
        for tool in plan.tools:
            elapsed = yield from self._spin(plan.verb, tool.think, elapsed)
            scr.add_prose(tool.intro)
            scr.add_tool(tool.command)
            yield Write(scr.draw_transcript() + scr.chrome(working=True) + scr.park()
                        + spinner_frame(self._frame, plan.verb, elapsed))
            if tool.prompt:
                self._prompts += 1
                yield Write(title(TITLE_IDLE) + scr.prompt(tool.command, tool.description),
                            self.truth("blocked"))
                answer = yield ReadLine("answer")
                if answer is None:
                    return False
                yield Write(scr.erase_prompt() + title(TITLE_WORKING[1]) + scr.draw_transcript()
                            + scr.chrome(working=True) + scr.park()
                            + spinner_frame(self._frame, plan.verb, elapsed), self.truth("working"))
            yield Sleep(tool.stall)  # the tool runs: not a byte
            elapsed += tool.stall
            scr.add_result(tool.result)
            yield Write(scr.draw_transcript() + scr.park())
        elapsed = yield from self._spin(plan.verb, plan.final_think, elapsed)
        scr.add_prose(" ".join(plan.reply))
        if plan.asks_question:
            scr.transcript.append("")
            scr.add_prose(QUESTION, bullet=False)  # its own row, so the row ends with "?"
        scr.add_status(f"Worked for {int(elapsed)}s")
        yield Write(title(TITLE_IDLE) + scr.draw_transcript() + scr.chrome(working=False),
                    self.truth("idle"))
        return True


# --- interpreters ------------------------------------------------------------------------------

Recorder = Callable[[Truth], None]


def truth_line(truth: Truth, t: float) -> str:
    return json.dumps({"t": t, "state": truth.state, "prompt": truth.prompt, "task": truth.task}) + "\n"


def _write_step(step: Write, write: Callable[[bytes], None], record: Recorder) -> None:
    write(step.data)
    if step.truth is not None:  # recorded once the bytes that show it are out
        record(step.truth)


def interpret(steps: Steps, *, write: Callable[[bytes], None], readline: Callable[[], str | None],
              record: Recorder, time_scale: float = 1.0, sleep: Callable[[float], None] = time.sleep,
              readkey: Callable[[], str | None] | None = None) -> None:
    """Run steps synchronously: the fake agent program's main loop. With `readkey`, a prompt is
    answered by one key press, as in the real Claude Code (digits answer at once)."""
    reply: str | None = None
    try:
        step = next(steps)
        while True:
            reply = None
            if isinstance(step, Write):
                _write_step(step, write, record)
            elif isinstance(step, Sleep):
                sleep(step.seconds * time_scale)
            elif step.purpose == "answer" and readkey is not None:
                reply = readkey()
            else:
                reply = readline()
            step = steps.send(reply)
    except StopIteration:
        return


async def interpret_async(steps: Steps, *, write: Callable[[bytes], None],
                          readline: Callable[[], Awaitable[str | None]], record: Recorder,
                          time_scale: float = 1.0) -> None:
    """The same loop for one of many fakes driven by a single asyncio process."""
    reply: str | None = None
    try:
        step = next(steps)
        while True:
            reply = None
            if isinstance(step, Write):
                _write_step(step, write, record)
            elif isinstance(step, Sleep):
                await asyncio.sleep(step.seconds * time_scale)
            else:
                reply = await readline()
            step = steps.send(reply)
    except StopIteration:
        return


# --- the program -------------------------------------------------------------------------------

FAST_SCALE = 0.05  # --fast: a whole task in about a second


def _stdin_line(stream: IO[bytes]) -> Callable[[], str | None]:
    def readline() -> str | None:
        try:
            raw = stream.readline()
        except OSError:  # EIO: the terminal side went away
            return None
        return raw.decode("utf-8", "replace") if raw else None
    return readline


def _stdin_key(fd: int) -> Callable[[], str | None]:
    """One key, without waiting for Enter (the line discipline's canonical mode is off for the
    read); a trailing Enter typed with it is dropped so it does not become an empty task."""
    def readkey() -> str | None:
        try:
            saved = termios.tcgetattr(fd)
        except (termios.error, OSError):  # not a terminal: fall back to a line
            line = sys.stdin.buffer.readline()
            return line.decode("utf-8", "replace") if line else None
        attrs = termios.tcgetattr(fd)
        attrs[3] &= ~termios.ICANON
        attrs[6][termios.VMIN], attrs[6][termios.VTIME] = 1, 0
        try:
            termios.tcsetattr(fd, termios.TCSANOW, attrs)
            key = os.read(fd, 1)
            time.sleep(0.01)  # let a "1\r" typed as one write arrive whole before dropping the rest
            termios.tcflush(fd, termios.TCIFLUSH)
        except OSError:
            return None
        finally:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(fd, termios.TCSANOW, saved)
        if not key or key == b"\x04":
            return None
        return key.decode("utf-8", "replace")
    return readkey


def _no_echo(fd: int) -> list[Any] | None:
    """Real agents run raw and draw the input themselves; the line discipline must not echo."""
    try:
        saved = termios.tcgetattr(fd)
        attrs = termios.tcgetattr(fd)
        attrs[3] &= ~(termios.ECHO | termios.ECHONL)
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
        return saved
    except (termios.error, OSError):  # not a terminal
        return None


def _raise_exit(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m panewatch.lab.fakeagent",
                                 description="A fake agent that draws like Claude Code.")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tasks", type=int, default=None, help="stay idle after N tasks (default: unlimited)")
    ap.add_argument("--truth", help="side file for the true state, one JSON line per change")
    ap.add_argument("--fast", action="store_true", help=f"time scale {FAST_SCALE}")
    ap.add_argument("--time-scale", type=float, default=None, help="multiply every delay (default 1)")
    ap.add_argument("--plan", action="store_true", help="print the task plans as JSON lines and exit")
    args = ap.parse_args(argv)
    if args.plan:
        script = FakeAgentScript(args.seed, args.tasks)
        for p in script.plan(args.tasks or 30):
            print(json.dumps({"task": p.index, "tools": len(p.tools), "prompt": any(t.prompt for t in p.tools),
                              "stalls": [t.stall for t in p.tools], "question": p.asks_question}))
        return 0
    scale = args.time_scale if args.time_scale is not None else (FAST_SCALE if args.fast else 1.0)
    try:
        cols, rows = os.get_terminal_size(1)
    except OSError:
        cols, rows = 120, 32
    truth_fh = open(args.truth, "w", encoding="utf-8") if args.truth else None  # noqa: SIM115

    def record(truth: Truth) -> None:
        if truth_fh is not None:
            truth_fh.write(truth_line(truth, time.time()))
            truth_fh.flush()

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_exit)
    saved = _no_echo(0)
    script = FakeAgentScript(args.seed, args.tasks, cols, rows)
    code = 0
    try:
        interpret(script.steps(), write=lambda b: write_all(1, b), readline=_stdin_line(sys.stdin.buffer),
                  record=record, time_scale=scale, readkey=_stdin_key(0))
    except (KeyboardInterrupt, SystemExit) as exc:
        code = 130 if isinstance(exc, KeyboardInterrupt) else int(exc.code or 0)
        with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
            write_all(1, EXIT_BYTES)
        record(script.truth("exited"))
    except OSError:  # the terminal went away under a write (EIO, EPIPE): nobody to restore for
        code = 1
    finally:
        if saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(0, termios.TCSANOW, saved)
        if truth_fh is not None:
            truth_fh.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
