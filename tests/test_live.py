"""LivePane on real PTYs: a scripted fake agent that draws like Claude Code, bash, hot manifest reloads."""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from fake_claude import FAKE, write_fake
from panewatch.core.cast import parse_cast
from panewatch.core.combine import Report
from panewatch.core.machine import StateChange
from panewatch.core.screen import Screen
from panewatch.runtime.driver import DueTimers
from panewatch.runtime.live import LivePane, ManifestWatcher

TIMEOUT = 15.0

ASK = r'''
import os, sys, tty
tty.setraw(0)
sys.stdout.write("\x1b[6n\x1b[c"); sys.stdout.flush()
got = b""
while got.count(b"\x1b") < 2 or not got.endswith(b"c"):
    got += os.read(0, 64)
sys.stdout.write("\r\nreply:" + got.decode().replace("\x1b", "ESC") + "\r\n"); sys.stdout.flush()
os.read(0, 1)
'''


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), 90))


async def until(pred: Callable[[], bool], what: str = "condition", timeout: float = TIMEOUT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise AssertionError(f"{what} not reached in time")
        await asyncio.sleep(0.01)


class Watch:
    """Collects a pane's state changes."""

    def __init__(self, pane: LivePane) -> None:
        self.pane = pane
        self.changes: list[StateChange] = []
        pane.subscribe(self.changes.append)

    def states(self) -> list[str]:
        return [c.new.state for c in self.changes]

    async def reach(self, state: str) -> StateChange:
        await until(lambda: self.pane.state.state == state,
                    f"state {state} (now {self.pane.state}, seen {self.states()})")
        return self.changes[-1]


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    script = write_fake(tmp_path)
    return script


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "TERM": "xterm-256color", "PS1": "$ ", **extra}


def test_working_blocked_idle_from_the_screen(fake: Path) -> None:
    events, record = io.StringIO(), io.StringIO()

    async def main() -> None:
        pane = LivePane([sys.executable, str(fake)], pane_id="p1", cols=80, rows=32, env=env(),
                        events=events, record=record)
        watch = Watch(pane)
        pane.start()
        working = await watch.reach("working")
        assert working.new.source == "screen" and working.agent == "claude"
        pane.write(b"x")
        blocked = await watch.reach("blocked")
        assert blocked.new.source == "screen"
        assert blocked.new.rule in ("permission-question", "cancel-amend-footer")
        assert pane.classify_now().state == "blocked"
        assert "Do you want to proceed?" in pane.snapshot().text()
        pane.write(b"1")
        idle = await watch.reach("idle")
        assert idle.new.source == "screen" and idle.new.rule == "shortcuts-footer"
        pane.resize(90, 30)
        pane.write(b"x")
        assert await pane.wait() == 0
        assert pane.state.state == "exited" and pane.state.detail == "exit code 0"
        await pane.close()

    run(main)
    lines = [json.loads(line) for line in events.getvalue().splitlines()]
    assert [e["state"] for e in lines] == ["idle", "working", "blocked", "idle", "exited"]
    assert all(set(e) >= {"t", "pane", "state", "rule", "source"} and e["pane"] == "p1" for e in lines)
    assert [e["source"] for e in lines[1:4]] == ["screen"] * 3
    assert lines[-1]["source"] == "process"
    assert all(a["t"] <= b["t"] for a, b in itertools.pairwise(lines))
    cast = parse_cast(record.getvalue().splitlines())
    kinds = {e.kind for e in cast.events}
    assert kinds == {"o", "i", "r"}
    assert "Do you want to proceed?" in cast.output_bytes().decode()
    assert [e.data for e in cast.events if e.kind == "i"] == ["x", "1", "x"]
    assert [e.data for e in cast.events if e.kind == "r"] == ["90x30"]


FULL = Path("/dev/full")  # every write fails with ENOSPC: a full disk, deterministically


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
def test_a_full_disk_stops_the_recording_and_changes_nothing_else(fake: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    record = FULL.open("w", encoding="utf-8")
    events = FULL.open("w", encoding="utf-8")
    changes: list[str] = []

    async def main() -> None:
        pane = LivePane([sys.executable, str(fake)], pane_id="p1", cols=80, rows=32, env=env(),
                        events=events, record=record)
        watch = Watch(pane)
        pane.start()
        await watch.reach("working")  # the detector saw the output the recording could not take
        pane.write(b"x")  # ... and the keystroke reached the agent: it opens its dialog
        await watch.reach("blocked")
        pane.write(b"1")
        await watch.reach("idle")
        pane.resize(90, 30)
        pane.write(b"x")
        assert await pane.wait() == 0
        await pane.close()
        changes.extend(watch.states())

    caplog.set_level(logging.WARNING)
    try:
        run(main)
    finally:
        for fh in (record, events):
            with contextlib.suppress(OSError):
                fh.close()
    assert changes == ["idle", "working", "blocked", "idle", "exited"]
    messages = [r.getMessage() for r in caplog.records if r.name == "panewatch.runtime.live"]
    assert len(messages) == 2, messages  # one per failing file, however many writes failed after it
    assert any(m.startswith("panewatch: the recording") for m in messages)
    assert any(m.startswith("panewatch: the events log") for m in messages)
    assert all("/dev/full" in m and "No space left on device" in m for m in messages)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # no traceback from a callback


def test_headless_pane_answers_terminal_queries(tmp_path: Path) -> None:
    script = tmp_path / "ask.py"
    script.write_text(ASK, encoding="utf-8")

    async def main() -> None:
        pane = LivePane([sys.executable, str(script)], cols=80, rows=24, env=env())
        pane.start()
        await until(lambda: "reply:" in pane.snapshot().text(), "DSR/DA1 replies")
        text = pane.snapshot().text()
        assert "ESC[1;1R" in text  # the cursor position report
        assert "ESC[?" in text  # the primary device attributes
        pane.write(b"x")
        assert await pane.wait() == 0
        await pane.close()

    run(main)


def test_report_speaks_until_the_screen_changes(fake: Path) -> None:
    async def main() -> None:
        pane = LivePane([sys.executable, str(fake)], cols=80, rows=32, env=env())
        watch = Watch(pane)
        pane.start()
        await watch.reach("working")
        now = asyncio.get_running_loop().time
        pane.report(Report("blocked", now(), "hook", "permission_prompt"))  # a dialog the rules do not know
        assert (pane.state.state, pane.state.source) == ("blocked", "hook")
        pane.write(b"x")  # the screen moves and shows a dialog it knows: the screen speaks
        await until(lambda: pane.state.source == "screen", "screen takes over")
        assert pane.state.state == "blocked"
        pane.report(Report("working", now(), "hook", "PostToolUse"))
        assert (pane.state.state, pane.state.source) == ("blocked", "screen")  # never overridden
        pane.write(b"1")  # answered: no hook fires, the stale report must not hold the pane
        change = await watch.reach("idle")
        assert change.new.source == "screen"
        assert [c.new.state for c in watch.changes] == ["idle", "working", "blocked", "idle"]
        await pane.close()

    run(main)


def test_agent_started_from_a_shell_and_its_exit(fake: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    claude = bindir / "claude"
    claude.write_text(f"#!{sys.executable}\n" + FAKE, encoding="utf-8")
    claude.chmod(0o755)

    async def main() -> None:
        pane = LivePane(["bash", "--norc", "--noprofile", "-i"], cols=80, rows=32,
                        env=env(PATH=f"{bindir}:{os.environ['PATH']}"))
        watch = Watch(pane)
        pane.start()
        await until(lambda: pane.foreground is not None and pane.foreground.is_shell, "bash in front")
        assert pane.state.state == "idle"
        pane.write(b"claude --inline\r")
        await until(lambda: pane.foreground is not None and pane.foreground.agent_id == "claude", "claude in front")
        assert pane.agent == "claude"
        await watch.reach("working")
        pane.write(b"x")
        await watch.reach("blocked")
        pane.write(b"q")  # the agent dies with its dialog still drawn
        change = await watch.reach("exited")
        assert change.new.source == "process"
        assert pane.foreground is not None and pane.foreground.is_shell
        assert "Do you want to proceed?" in pane.snapshot().text()  # stale text is still there...
        assert pane.classify_now().state == "exited"  # the pane, checked now, is not blocked...
        assert (pane.verdict.state, pane.verdict.rule) == ("idle", None)  # ...nor is a shell's screen judged
        assert pane.kind.kind == "other"
        assert not pane.exited  # bash runs on
        pane.write(b"cat\r")  # another program in front after the agent: still no stale blocked
        await until(lambda: pane.foreground is not None and pane.foreground.name == "cat", "cat in front")
        assert pane.classify_now().state == "exited"
        assert pane.verdict.rule is None
        pane.write(b"\x03")
        await until(lambda: pane.foreground is not None and pane.foreground.is_shell, "bash back")
        pane.write(b"exit 5\r")
        assert await pane.wait() == 5
        await pane.close()

    run(main)


MANIFEST = '''
[agent]
id = "toy"
name = "Toy agent"
processes = ["toy-agent"]

[[rules]]
id = "{rule}"
state = "blocked"
region = "screen"
any = ['{pattern}']
note = "test rule"
'''


def test_manifest_edits_apply_to_running_panes(tmp_path: Path) -> None:
    agents = tmp_path / "config" / "agents"
    agents.mkdir(parents=True)
    path = agents / "toy.toml"
    stamp = [1_000_000_000_000_000_000]

    def write(text: str) -> None:
        path.write_text(text, encoding="utf-8")
        stamp[0] += 1_000_000_000  # a distinct mtime even on coarse filesystems
        os.utime(path, ns=(stamp[0], stamp[0]))

    write(MANIFEST.format(rule="waiting", pattern="WAITING"))
    errors: list[str] = []
    watcher = ManifestWatcher(agents, interval=0.02, on_error=errors.append)

    async def main() -> None:
        pane = LivePane(["bash", "-c", "printf 'hello WAITING\\n'; read -r x"], agent="toy", cols=80, rows=24,
                        env=env(), manifests=watcher)
        watch = Watch(pane)
        pane.start()
        change = await watch.reach("blocked")
        assert change.new.rule == "waiting"
        write(MANIFEST.format(rule="never", pattern="NOT ON SCREEN"))
        await watch.reach("idle")
        write("[agent]\nid = 'toy'\n[[rules]\n")  # broken TOML
        await until(lambda: len(errors) == 1, "error reported")
        assert "toy.toml" in errors[0] and "keeping the last good 'toy'" in errors[0]
        assert watcher.get("toy") is not None and watcher.get("toy").rules[0].id == "never"  # type: ignore[union-attr]
        assert pane.classify_now().state == "idle"
        write(MANIFEST.format(rule="hello", pattern="^hello"))
        change = await watch.reach("blocked")
        assert change.new.rule == "hello"
        assert len(errors) == 1
        await pane.close()

    run(main)


def test_close_ends_the_command_and_records_it() -> None:
    events = io.StringIO()

    async def main() -> None:
        pane = LivePane(["bash", "-c", "echo up; sleep 300"], cols=80, rows=24, env=env(), events=events)
        pane.start()
        await until(lambda: "up" in pane.snapshot().text(), "output")
        await pane.close()
        # SIGHUP, as when a terminal window closes; SIGTERM follows if the hangup took more than its
        # grace period (a loaded machine), so either is a clean end.
        codes.append(await pane.wait())
        assert codes[0] in (129, 143)
        assert pane.state.state == "exited"

    codes: list[int] = []
    run(main)
    last = json.loads(events.getvalue().splitlines()[-1])
    assert (last["state"], last["source"], last["detail"]) == ("exited", "process", f"exit code {codes[0]}")


def test_an_exited_pane_releases_its_pty_and_keeps_its_last_screen() -> None:
    async def main() -> None:
        pane = LivePane(["bash", "-c", "printf '\\033[1;32mall done\\033[0m\\r\\nbye'"], cols=40, rows=6,
                        env=env())
        pane.start()
        assert await pane.wait() == 0
        assert pane.session is not None and pane.session.closed  # at exit, not when its card goes
        assert pane.screen.closed
        assert pane.snapshot().rows[:2] == ("all done", "bye")
        assert pane.classify_now().state == "exited"
        viewer = Screen(40, 6)  # a late viewer's repaint, colours included
        viewer.feed(pane.screen.vt_dump())
        assert viewer.snapshot().rows == pane.snapshot().rows and b"\x1b[38;5;2m" in pane.screen.vt_dump()
        await pane.close()

    run(main)


BLINKER = r'''
import os, sys, tty
tty.setraw(0)
w = lambda s: (sys.stdout.write(s), sys.stdout.flush())
w("\x1b]0;\u2733 Claude Code\x07\x1b[2J\x1b[H\u25cf Bash(touch x)\r\n")
on = True
while True:
    key = os.read(0, 1)
    if key == b"b":  # the tool's bullet blinks while a dialog waits: an animation, not a change
        on = not on
        w("\x1b[1;1H" + ("\u25cf" if on else " "))
    elif key == b"c":  # a real change: new text
        w("\x1b[3;1HDone.")
    elif key == b"q":
        break
'''


def test_hook_report_survives_animations_but_not_a_real_screen_change(tmp_path: Path) -> None:
    script = tmp_path / "blinker.py"
    script.write_text(BLINKER, encoding="utf-8")

    async def main() -> None:
        pane = LivePane([sys.executable, str(script)], cols=80, rows=24, env=env(), agent="claude")
        pane.start()
        await until(lambda: "Bash(touch x)" in pane.snapshot().text(), "first screen")
        loop = asyncio.get_running_loop()
        pane.report(Report("blocked", loop.time(), "hook", "PermissionRequest"))
        assert pane.state.state == "blocked" and pane.state.source == "hook"
        pane.write(b"b")  # bullet off: the screen differs from the one the report arrived on
        await until(lambda: pane.snapshot().rows[0].startswith("  Bash"), "bullet blinked off")
        assert pane.classify_now().state == "blocked", "a blinking bullet superseded the hook report"
        pane.write(b"c")
        await until(lambda: "Done." in pane.snapshot().text(), "real change drawn")
        await until(lambda: pane.classify_now().state != "blocked", "report superseded by the change")
        assert pane.state.source == "screen"
        pane.write(b"q")
        await pane.wait()
        await pane.close()

    run(main)


def test_panes_on_one_loop_share_one_foreground_sweep() -> None:
    """One timer polls every pane's foreground (not one per pane); a pane that ends leaves it, the last
    one stops it; a shell's foreground job is still seen by the shared sweep."""
    from panewatch.runtime.live import ForegroundSweep

    async def main() -> None:
        loop = asyncio.get_running_loop()
        watcher = ManifestWatcher()
        shell = LivePane(["bash", "--norc", "--noprofile", "-c", "stty -echo; read -r x; exec sleep 30"], pane_id="a",
                         manifests=watcher, env=env())
        other = LivePane(["sleep", "30"], pane_id="b", manifests=watcher, env=env())
        shell.start()
        other.start()
        sweep = ForegroundSweep.of(loop)
        assert len(sweep) == 2
        deadline = loop.time() + 20
        while shell.foreground is None or other.foreground is None:
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
        assert shell.foreground.name == "bash"
        await asyncio.sleep(0.2)  # stty has run
        sweeps = sweep.sweeps
        shell.write(b"go\n")  # not echoed; bash execs sleep: no output follows, only the sweep can see it
        while shell.foreground is None or shell.foreground.name != "sleep":
            assert loop.time() < deadline, shell.foreground
            await asyncio.sleep(0.02)
        assert sweep.sweeps > sweeps
        await other.close()
        assert len(sweep) == 1
        await shell.close()
        assert len(sweep) == 0 and sweep._handle is None

    asyncio.run(asyncio.wait_for(main(), 60))


def test_detection_timers_of_all_panes_share_one_heap() -> None:
    """Each pane's due time lives in the loop's DueTimers; a pane armed earlier supersedes its later
    entry (skipped when it comes), and detection still publishes the screen's state."""
    from panewatch.runtime.driver import DueTimers

    async def main() -> None:
        loop = asyncio.get_running_loop()
        watcher = ManifestWatcher()
        seen: list[str] = []
        panes = [LivePane(["bash", "--norc", "--noprofile", "-c", "printf 'hello\\n'; sleep 30"], pane_id=str(i),
                          manifests=watcher, env=env()) for i in range(3)]
        for pane in panes:
            pane.subscribe(lambda change: seen.append(change.pane))
            pane.start()
        timers = DueTimers.of(loop)
        assert all(pane._timers is timers for pane in panes)
        deadline = loop.time() + 20
        while any(pane.detector.stats.checks == 0 for pane in panes):
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
        calls: list[int] = []
        probe = panes[0]
        real = probe._on_due
        probe._on_due = lambda token: (calls.append(token), real(token))  # type: ignore[method-assign]
        late, early = timers.arm(loop.time() + 0.2, probe), timers.arm(loop.time() + 0.05, probe)
        probe._due = early
        while len(calls) < 2:
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
        assert calls[:2] == [early, late] and probe._due != late  # the late one came and was skipped
        for pane in panes:
            await pane.close()

    asyncio.run(asyncio.wait_for(main(), 60))


class _Due:
    """A stand-in for a PaneDriver in DueTimers: records each offer; due only from `come_at` on (as a
    report's settling time is), re-arming the way PaneDriver._arm does when nothing was due."""

    def __init__(self, timers: object, pane_id: str, come_at: float = 0.0) -> None:
        self.timers, self.pane_id, self.come_at = timers, pane_id, come_at
        self.offers: list[float] = []
        self.turns: list[int] = []  # which of the timers' turns offered it

    def _on_due(self, token: int) -> None:
        assert isinstance(self.timers, DueTimers)
        now = asyncio.get_running_loop().time()
        self.offers.append(now)
        self.turns.append(getattr(self.timers, "turns", 0))
        if now < self.come_at:
            self.timers.arm(self.come_at, self, self.come_at < now + self.timers.grain)  # type: ignore[arg-type]


def _counted(timers: DueTimers) -> DueTimers:
    """`timers` counting its turns in `timers.turns` (its asyncio timer calls `_fire`)."""
    fire = timers._fire

    def counted() -> None:
        timers.turns += 1  # type: ignore[attr-defined]
        fire()

    timers.turns = 0  # type: ignore[attr-defined]
    timers._fire = counted  # type: ignore[method-assign]
    return timers


def test_due_times_in_one_grain_run_in_one_turn_and_an_exact_one_waits_for_its_time() -> None:
    from panewatch.core.detector import TIMER_SLACK

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert DueTimers(loop).grain == TIMER_SLACK > 0  # offered as early as the detector counts a check as come
        grain = 0.05  # wider than the live one: a loaded box runs a turn late by milliseconds
        timers = _counted(DueTimers(loop, grain=grain))
        cell = (int(loop.time() / grain) + 4) * grain  # a grid cell 0.15-0.2 s ahead
        group = [_Due(timers, f"g{i}") for i in range(3)]
        for i, due in enumerate(group):
            timers.arm(cell + grain * (0.1 + 0.3 * i), due)  # type: ignore[arg-type]
        settle = _Due(timers, "settle", come_at=cell + grain * 0.9)
        timers.arm(settle.come_at, settle)  # type: ignore[arg-type]
        deadline = loop.time() + 10
        while not (all(d.offers for d in group) and settle.offers and loop.time() >= settle.come_at):
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
        turns = {d.turns[0] for d in group}
        assert len(turns) == 1, turns  # one turn for the three
        assert min(d.offers[0] for d in group) >= cell - 0.001  # never before their grain began
        assert settle.turns[0] in turns  # offered early with them, not come, armed for its exact time:
        assert len(settle.offers) == 2 and settle.offers[1] >= settle.come_at  # run when it came, no spin
        plain = _counted(DueTimers(loop, grain=0.0))  # no grain: each time by itself
        alone = [_Due(plain, f"a{i}") for i in range(2)]
        start = loop.time()
        for i, due in enumerate(alone):
            plain.arm(start + 0.05 + 0.02 * i, due)  # type: ignore[arg-type]
        while not all(d.offers for d in alone):
            assert loop.time() < deadline
            await asyncio.sleep(0.005)
        assert alone[0].turns[0] != alone[1].turns[0] and alone[1].offers[0] >= start + 0.07

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_reports_settling_time_is_kept_exactly_by_a_live_pane_without_spinning() -> None:
    """A report's settling time counts exactly (combine), though checks are offered a grain early: the
    screen takes over from the report once the time has come, in a turn or two, not a loop spinning."""
    from panewatch.core.combine import REPORT_SETTLE

    async def main() -> None:
        pane = LivePane(["cat"], pane_id="settle", cols=60, rows=10, env=env(), agent="claude")
        watch = Watch(pane)
        pane.start()
        await until(lambda: pane.detector.stats.checks > 0, "first check")
        loop = asyncio.get_running_loop()
        offers: list[float] = []
        real = pane._on_due
        pane._on_due = lambda token: (offers.append(loop.time()), real(token))[1]  # type: ignore[method-assign]
        reported = loop.time()
        pane.report(Report("blocked", reported, "hook", "permission_prompt"))
        pane.write(b"plain text, no dialog\n")  # the screen changes after the report: it speaks once settled
        await until(lambda: "plain text" in pane.snapshot().text(), "echo drawn")
        assert pane.state.state == "blocked"
        change = await watch.reach("idle")
        assert change.new.source == "screen" and change.t >= reported + REPORT_SETTLE["blocked"]
        near = [t for t in offers if t >= reported + REPORT_SETTLE["blocked"] - 0.05]
        assert 1 <= len(near) <= 3, near  # offered early once, then at its time
        await pane.close()

    run(main)


def test_output_has_the_foreground_looked_at_once_before_its_check_not_per_read() -> None:
    """Reads only mark the foreground for a look; the check they lead to looks once (then the screen is
    judged with who holds the pane now). 20 reads in one loop turn: no tcgetpgrp among them."""
    from panewatch.runtime.live import ForegroundSweep

    async def main() -> None:
        pane = LivePane(["sleep", "30"], pane_id="looks", env=env())
        pane.start()
        await until(lambda: pane.foreground is not None and pane.foreground.name == "sleep", "sleep in front")
        session = pane.session
        assert session is not None
        looks: list[int | None] = []
        real = session.foreground_pgid

        def counted() -> int | None:
            looks.append(real())
            return looks[-1]

        session.foreground_pgid = counted  # type: ignore[method-assign]
        sweep = ForegroundSweep.of(asyncio.get_running_loop())
        sweeps, checks = sweep.sweeps, pane.detector.stats.checks
        for i in range(20):
            pane._on_output(f"line {i}\r\n".encode())
        assert looks == []  # the reads themselves looked at nothing
        await until(lambda: pane.detector.stats.checks > checks, "the check after the output")
        assert 1 <= len(looks) <= 1 + (sweep.sweeps - sweeps)  # once before the check (plus any sweep's)
        assert pane.snapshot().rows[19] == "line 19"
        await pane.close()

    run(main)


def test_the_foreground_sweep_polls_each_pane_once_a_round_in_slices() -> None:
    """A round is cut into SWEEP_SLICES ticks of at most ceil(n / slices) panes each (no tick holds the loop
    for all of them), every pane is polled once a round, a pane removed mid-round is not polled, and a
    pane that fails does not stop the others."""
    from panewatch.runtime.live import SWEEP_SLICES, ForegroundSweep

    class Fake:
        def __init__(self, i: int) -> None:
            self.pane_id, self.polls = str(i), 0

        def _poll_foreground(self) -> None:
            self.polls += 1
            if self.pane_id == "3":
                raise RuntimeError("this pane's poll fails")

    async def main() -> None:
        sweep = ForegroundSweep(asyncio.get_running_loop())  # its own: not the loop's shared one
        panes = [Fake(i) for i in range(25)]
        for pane in panes:
            sweep.add(pane)  # type: ignore[arg-type]
        assert sweep._handle is not None
        sweep._handle.cancel()  # ticks driven by hand below, no clock involved
        per_tick = []
        for _ in range(SWEEP_SLICES):
            before = sum(p.polls for p in panes)
            sweep._sweep()
            assert sweep._handle is not None
            sweep._handle.cancel()
            per_tick.append(sum(p.polls for p in panes) - before)
        assert [p.polls for p in panes] == [1] * 25
        assert max(per_tick) == -(-25 // SWEEP_SLICES)
        sweep._sweep()  # the next round starts; a pane removed during it is skipped
        sweep._handle.cancel()
        sweep.remove(panes[-1])  # type: ignore[arg-type]
        for _ in range(SWEEP_SLICES - 1):
            sweep._sweep()
            sweep._handle.cancel()
        assert [p.polls for p in panes] == [2] * 24 + [1]
        for pane in panes[:-1]:
            sweep.remove(pane)  # type: ignore[arg-type]
        assert len(sweep) == 0 and sweep._handle is None

    logging.getLogger("panewatch.runtime.live").disabled = True
    try:
        run(main)
    finally:
        logging.getLogger("panewatch.runtime.live").disabled = False
