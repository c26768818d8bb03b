"""The fake agent and the bot user: seeded scripts, drawing bytes, and a real PTY session on a real screen."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from panewatch.core.screen import Screen
from panewatch.lab.botuser import BotUser, FakeAgentProcess, TruthLine, TruthReader, run_session
from panewatch.lab.fakeagent import (
    EXIT_BYTES,
    FakeAgentScript,
    ReadLine,
    Sleep,
    Step,
    Truth,
    Write,
    interpret,
    interpret_async,
    spinner_frame,
)

PROMPT_ROW = " Do you want to proceed?"
YES_ROW = "❯ 1. Yes"
SPINNER = re.compile(r"\r\x1b\[38;5;174m.{1,3}\x1b\[39m [^\r(]+… \(\d+s · esc to interrupt\)\x1b\[K".encode(), re.S)


def drive(script: FakeAgentScript, lines: list[str]) -> list[Step]:
    """All steps, answering each ReadLine with the next line, then EOF."""
    feed = iter(lines)
    steps = script.steps()
    out: list[Step] = []
    try:
        step = next(steps)
        while True:
            out.append(step)
            step = steps.send(next(feed, None) if isinstance(step, ReadLine) else None)
    except StopIteration:
        return out


def answers(n_tasks: int) -> list[str]:
    # every ReadLine gets a line: tasks and answers alike; extra "1"s are harmless tasks
    return [f"Task {i}: fix the flaky test\n" if i % 2 else "1\n" for i in range(1, 4 * n_tasks)]


# --- the script, no I/O -------------------------------------------------------------------------

def test_same_seed_same_steps_and_a_plausible_plan() -> None:
    lines = answers(30)
    a, b = drive(FakeAgentScript(7, 30), lines), drive(FakeAgentScript(7, 30), lines)
    assert a == b
    assert a != drive(FakeAgentScript(8, 30), lines)
    plan = FakeAgentScript(7).plan(30)
    prompts = sum(any(t.prompt for t in p.tools) for p in plan)
    assert 20 <= prompts <= 30  # seed 7 gives 25, like the published run
    assert all(0.5 <= t.stall <= 6.0 and sum(x.prompt for x in p.tools) <= 1 for p in plan for t in p.tools)
    assert any(p.asks_question for p in plan) and not all(p.asks_question for p in plan)
    assert FakeAgentScript(7, 5).plan(5) == plan[:5]  # a prefix does not depend on the length asked


def test_truth_follows_the_bytes_and_prompts_use_csi_g() -> None:
    steps = drive(FakeAgentScript(7, 4), answers(4))
    truths = [s.truth for s in steps if isinstance(s, Write) and s.truth is not None]
    assert truths[0] == Truth("idle", 0, 0) and truths[-1].state == "exited"
    states = [t.state for t in truths]
    assert states.count("idle") == 5 and states.count("blocked") == truths[-1].prompt
    for i, step in enumerate(steps):
        if isinstance(step, Write) and step.truth is not None and step.truth.state == "blocked":
            assert b"\x1b[39mDo\x1b[5Gyou\x1b[9Gwant\x1b[14Gto\x1b[17Gproceed?" in step.data
            assert b" \x1b[38;5;153m\xe2\x9d\xaf\x1b[39m \x1b[38;5;246m1. \x1b[38;5;153mYes" in step.data
            assert b"Esc to cancel" in step.data and b"\xe2\x9c\xb3 Claude Code" in step.data
            assert steps[i + 1] == ReadLine("answer")
            after = steps[i + 2]
            assert isinstance(after, Write) and after.truth is not None and after.truth.state == "working"
            assert after.data.startswith(b"\r\x1b[11A\x1b[J")  # Ink's erase: cursor up, erase below
    stalls = [s.seconds for s in steps if isinstance(s, Sleep) and s.seconds != 0.1]
    assert stalls and all(0.5 <= s <= 6.0 for s in stalls)


def test_eof_at_a_prompt_restores_the_main_screen() -> None:
    steps = drive(FakeAgentScript(7, 3), ["Task 1: go\n"])  # EOF while the first prompt waits
    assert isinstance(steps[-1], Write) and steps[-1].data == EXIT_BYTES
    assert steps[-1].truth is not None and steps[-1].truth.state == "exited"


def test_spinner_frame_is_a_small_cr_redraw() -> None:
    frame = spinner_frame(3, "Flambéing", 3.2)
    assert frame.startswith(b"\r") and b"esc to interrupt" in frame and b"(3s" in frame
    assert 50 <= len(frame) <= 80
    screen = Screen(120, 32)
    screen.feed(b"\x1b[27;1H" + spinner_frame(0, "Flambéing", 0) + spinner_frame(1, "Flambéing", 1))
    assert screen.snapshot().rows[26] == "✢ Flambéing… (1s · esc to interrupt)"


def test_async_interpreter_runs_the_same_steps() -> None:
    written: list[bytes] = []
    recorded: list[Truth] = []
    lines = iter(["Task 1: go\n", "1\n"])

    async def readline() -> str | None:
        return next(lines, None)

    asyncio.run(interpret_async(FakeAgentScript(7, 1).steps(), write=written.append, readline=readline,
                                record=recorded.append, time_scale=0.0))
    sync_written: list[bytes] = []
    lines2 = iter(["Task 1: go\n", "1\n"])
    interpret(FakeAgentScript(7, 1).steps(), write=sync_written.append, readline=lambda: next(lines2, None),
              record=lambda t: None, sleep=lambda s: None)
    assert written == sync_written
    assert [t.state for t in recorded][-2:] == ["idle", "exited"]


# --- the bot, on a fake clock ------------------------------------------------------------------

def test_bot_answers_and_types_tasks_on_time() -> None:
    bot = BotUser(2, seed=1)
    bot.observe("idle", 100.0)
    assert bot.pending is not None and 103.0 <= bot.pending.at <= 110.0
    assert bot.due(bot.pending.at - 0.01) is None
    keys = bot.due(bot.pending.at)
    assert keys is not None and re.fullmatch(rb"Task 1: [a-z ]+\r", keys.data)
    assert bot.due(1e9) is None  # handed out once
    bot.observe("working", 111.0)
    bot.observe("blocked", 120.0)
    bot.observe("blocked", 121.0)  # the same state again changes nothing
    assert bot.pending is not None and 123.0 <= bot.pending.at <= 128.0 and bot.pending.data == b"1\r"
    assert bot.due(130.0) is not None and bot.answers_typed == 1
    bot.observe("working", 131.0)
    bot.observe("idle", 140.0)
    assert bot.due(151.0) is not None and bot.tasks_typed == 2
    bot.observe("working", 152.0)
    bot.observe("idle", 160.0)
    assert bot.done and bot.pending is None
    # seeded: the same seed makes the same choices
    a, b = BotUser(3, seed=5, time_scale=0.5), BotUser(3, seed=5, time_scale=0.5)
    for bot in (a, b):
        bot.observe("idle", 0.0)
    assert a.pending == b.pending and a.pending is not None and a.pending.at <= 5.0


# --- a real PTY, a real screen -----------------------------------------------------------------

def _pump_until(agent: FakeAgentProcess, screen: Screen, seen: bytearray, cond: Callable[[], bool],
                timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        data = agent.read(0.01)
        seen += data
        screen.feed(data)
        if cond():
            return True
        if time.monotonic() > deadline or agent.closed:
            return False


@pytest.mark.timeout(30)
def test_live_session_in_a_pty_shows_what_the_truth_says(tmp_path: Path) -> None:
    tasks, scale = 3, 0.04
    truth_path = tmp_path / "truth.jsonl"
    screen = Screen(120, 32)
    seen = bytearray()
    bot = BotUser(tasks, seed=7, time_scale=scale)
    reader = TruthReader(truth_path)
    truth: list[TruthLine] = []

    def rows() -> str:
        return "\n".join(screen.snapshot().rows)

    with FakeAgentProcess(seed=7, tasks=tasks, time_scale=scale, truth_path=truth_path) as agent:
        deadline = time.monotonic() + 20
        eof_sent = False
        while not agent.closed and time.monotonic() < deadline:
            data = agent.read(0.01)
            seen += data
            screen.feed(data)
            for line in reader.read_new():
                truth.append(line)
                if line.state == "blocked":  # the agent waits for us: the prompt must be on screen
                    assert _pump_until(agent, screen, seen, lambda: PROMPT_ROW in rows() and YES_ROW in rows())
                    assert screen.snapshot().title == "✳ Claude Code"
                elif line.state == "idle":
                    assert _pump_until(agent, screen, seen, lambda: "? for shortcuts" in rows())
                    assert "esc to interrupt" not in rows() and screen.snapshot().title == "✳ Claude Code"
                elif line.state == "working" and len(truth) > 1 and truth[-2].state == "blocked":
                    # just answered: the agent erased the dialog (a new one needs a new task from us)
                    assert _pump_until(agent, screen, seen, lambda: "proceed?" not in rows())
                    assert YES_ROW not in rows()
                bot.observe(line.state, line.t)
            keys = bot.due(time.time())
            if keys is not None:
                agent.write(keys.data)
            if bot.done and not eof_sent:
                agent.send_eof()
                eof_sent = True
        assert eof_sent, f"session did not finish; truth so far: {truth}"
        assert agent.wait(timeout=5) == 0
        _pump_until(agent, screen, seen, lambda: agent.closed, timeout=1.0)

    assert not screen.snapshot().alt_screen  # main screen restored on EOF
    # the truth: idle, then per task working [blocked working] idle, then exited on EOF
    plan = FakeAgentScript(7).plan(tasks)
    expected = ["idle"]
    for p in plan:
        expected += ["working"] + (["blocked", "working"] if any(t.prompt for t in p.tools) else []) + ["idle"]
    assert [t.state for t in truth] == [*expected, "exited"]
    assert truth[-1].prompt == sum(any(t.prompt for t in p.tools) for p in plan) >= 1
    assert bot.answers_typed == truth[-1].prompt and bot.tasks_typed == tasks
    # spinner frames: CR redraws that all say "esc to interrupt"; the working title alternates
    frames = SPINNER.findall(bytes(seen))
    assert len(frames) > 20 and bytes(seen).count(b"(0s \xc2\xb7 esc") >= tasks
    assert b"\x1b]0;\xe2\x97\x90 Claude Code\x07" in seen and b"\x1b]0;\xe2\x97\x91 Claude Code\x07" in seen


@pytest.mark.timeout(30)
def test_run_session_drives_a_whole_session() -> None:
    truth: list[TruthLine] = []
    screen = Screen(120, 32)
    result = run_session(seed=3, tasks=2, time_scale=0.03, on_output=screen.feed, on_truth=truth.append,
                         timeout=20)
    assert result.returncode == 0 and result.tasks_typed == 2
    assert result.truth == truth and truth[0].state == "idle" and truth[-1].state == "exited"
    assert result.answers_typed == sum(t.state == "blocked" for t in truth)
    assert result.output_bytes > 5000 and not screen.snapshot().alt_screen


@pytest.mark.timeout(30)
def test_sigterm_at_a_prompt_restores_the_screen(tmp_path: Path) -> None:
    screen, seen = Screen(120, 32), bytearray()
    reader = TruthReader(tmp_path / "truth.jsonl")
    truth: list[TruthLine] = []

    def seen_state(state: str) -> Callable[[], bool]:
        def check() -> bool:
            truth.extend(reader.read_new())
            return any(t.state == state for t in truth)
        return check

    with FakeAgentProcess(seed=7, time_scale=0.05, truth_path=tmp_path / "truth.jsonl") as agent:
        assert _pump_until(agent, screen, seen, seen_state("idle"))
        agent.write(b"Task 1: go\r")  # seed 7 prompts in its first task
        assert _pump_until(agent, screen, seen, seen_state("blocked"))
        agent.proc.terminate()
        assert agent.wait(timeout=5) == 143
        _pump_until(agent, screen, seen, lambda: agent.closed, timeout=1.0)
    assert not screen.snapshot().alt_screen
    assert [*truth, *reader.read_new()][-1].state == "exited"
