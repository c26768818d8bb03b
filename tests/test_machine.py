"""PaneMachine: what combine() is told, in virtual time, and the same state sequence as a live pane.

The bytes are a real Claude Code 2.1.332 capture (corpus bash_120x32) cut into stages: working, an
animation only, the permission dialog drawn, the dialog answered.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from panewatch.core.cast import Cast, CastEvent
from panewatch.core.combine import REPORT_SETTLE, Report
from panewatch.core.machine import Foreground, PaneMachine, StateChange
from panewatch.core.manifest import load_all
from panewatch.core.replay import replay
from panewatch.core.screen import Screen, Snapshot
from panewatch.golden.cases import find_cases
from panewatch.runtime.live import LivePane

MANIFESTS = load_all().list()
CASE = next(c for c in find_cases() if c.name == "claude/2.1.332/bash_120x32")
CAST = CASE.cast()
CUTS = (5.0, 5.4, 6.5, 7.5)  # working | spinner and bullet animate | dialog drawn | dialog answered


def _chunks() -> list[bytes]:
    out, lo = [], float("-inf")
    for hi in CUTS:
        out.append("".join(e.data for e in CAST.events if e.kind == "o" and lo < e.t <= hi)
                   .encode("utf-8", "surrogateescape"))
        lo = hi
    return out


CHUNKS = _chunks()
COLS, ROWS = CAST.header.width, CAST.header.height
EARLY = Report("blocked", 0.0, "hook", "PermissionRequest Bash")  # a report before the screen shows a dialog


def machine(**kwargs: object) -> PaneMachine:
    return PaneMachine(lambda: MANIFESTS, COLS, ROWS, pane_id="m", **kwargs)  # type: ignore[arg-type]


def settle(m: PaneMachine, t: float) -> list[StateChange]:
    """Run every check due before `t`."""
    out: list[StateChange] = []
    while (due := m.next_due()) < t:
        out += m.tick(due)
    return out


def staged(m: PaneMachine, report_after_first: Report | None) -> list[tuple[str, str]]:
    """(state, source) after each chunk, one chunk a second; the report arrives after the first."""
    seen = []
    for k, chunk in enumerate(CHUNKS):
        m.output(k + 1.0, chunk)
        settle(m, k + 1.9)
        if k == 0 and report_after_first is not None:
            m.report(1.95, report_after_first)
        seen.append((m.state.state, m.state.source))
    return seen


def test_a_report_holds_until_the_screen_changes_and_animations_do_not_count() -> None:
    assert staged(machine(agent="claude"), Report("blocked", 1.95, "hook")) == [
        ("blocked", "hook"),  # the screen says working; the agent said blocked: it speaks until the screen moves
        ("blocked", "hook"),  # a spinner and a blinking bullet are not a change
        ("blocked", "screen"),  # the dialog drawn: the screen's blocked, never overridden
        ("working", "screen"),  # answered: the report is stale, the screen speaks
    ]
    # Without the report the screen alone speaks.
    assert staged(machine(agent="claude"), None) == [
        ("working", "screen"), ("working", "screen"), ("blocked", "screen"), ("working", "screen")]


def test_a_change_during_the_settling_time_counts_once_it_is_over() -> None:
    m = machine(agent="claude")
    m.output(1.0, CHUNKS[0])
    settle(m, 1.9)
    m.report(1.95, Report("done", 1.95, "hook", "AfterAgent"))
    assert (m.state.state, m.state.source) == ("idle", "hook")
    m.output(2.1, b"\r\nthe agent redraws\r\n")  # right after its report: the report still speaks
    assert (m.state.state, m.state.source) == ("idle", "hook")
    end = 1.95 + REPORT_SETTLE["done"]
    assert m.next_due() <= end  # a check is scheduled for the end of the settling time
    settle(m, end + 0.01)
    assert (m.state.state, m.state.source) == ("working", "screen")  # then the screen speaks again


def test_a_report_that_ends_a_block_waits_for_the_check_of_the_frame_drawn_meanwhile() -> None:
    # Qwen Code fires PreToolUse after the grant: answered 0.3 ms after its dialog was drawn (a fast test
    # user), the report came before the check of the dialog's frame (e2e test_panewatch_run_bash[qwen]).
    m = machine(agent="claude")
    m.output(1.0, CHUNKS[0])
    m.output(2.0, CHUNKS[1])
    settle(m, 2.9)
    seen = m.report(2.5, Report("blocked", 2.5, "hook", "PermissionRequest Bash"))
    seen += m.output(3.0, CHUNKS[2])  # the dialog drawn
    seen += m.report(3.005, Report("working", 3.005, "hook", "PreToolUse Bash"))  # answered at once
    assert m.state.state == "blocked"  # held: the dialog's frame is not judged yet
    seen += settle(m, 3.9)
    seen += m.output(4.0, CHUNKS[3])  # the agent redraws after the grant
    seen += settle(m, 4.9)
    assert [(c.new.state, c.new.source) for c in seen] == [("blocked", "hook"), ("working", "screen")]
    # With the screen judged, a report that ends a block is combined at once.
    assert [c.new.state for c in m.report(5.0, Report("blocked", 5.0, "hook"))] == ["blocked"]
    assert not m.detector.screen_unjudged()
    assert [(c.t, c.new.state) for c in m.report(5.1, Report("done", 5.1, "hook", "Stop"))] == [(5.1, "idle")]


def test_a_report_stamped_on_another_clock_arrives_now() -> None:
    m = machine(agent="claude", start=1000.0)
    m.output(1001.0, CHUNKS[0])
    settle(m, 1001.9)
    # Stamped with unix time (far ahead of this clock): taken as arriving at 1002, so still fresh.
    [change] = m.report(1002.0, Report("idle", 1.7e9, "hook"))
    assert (change.t, change.new.state, change.new.source) == (1002.0, "idle", "hook")
    assert m.report_in_force is not None and m.report_in_force.t == 1002.0
    # Stamped long before the screen last changed: also re-stamped, not dropped as stale.
    m.report(1003.0, Report("blocked", 5.0, "hook"))
    assert m.state.state == "blocked" and m.report_in_force.t == 1003.0


def _fg(pgid: int, name: str, agent: str | None = None, shell: bool = False) -> Foreground:
    return Foreground(pgid, name, (name,), shell, agent)


def test_the_shell_back_in_front_ends_the_agent_and_a_leftover_dialog() -> None:
    m = machine()
    m.foreground(0.5, _fg(10, "bash", shell=True))
    assert m.state.state == "idle" and m.agent is None  # a shell before any agent: nothing to end
    m.foreground(0.8, _fg(11, "claude", agent="claude"))
    assert m.agent == "claude" and m.detector.agent_id == "claude"  # the process names the rules
    for k, chunk in enumerate(CHUNKS[:3]):
        m.output(1.0 + k, chunk)
    settle(m, 3.9)
    assert m.state.state == "blocked"
    [change] = m.foreground(4.0, _fg(10, "bash", shell=True))
    assert (change.new.state, change.new.source) == ("exited", "process")  # the dialog on screen is a leftover
    m.foreground(4.5, _fg(12, "claude", agent="claude"))  # started again
    assert m.state.state == "blocked"


def test_a_program_after_a_known_agent_process_is_not_that_agent() -> None:
    m = machine()
    m.foreground(0.5, _fg(11, "claude", agent="claude"))
    m.output(1.0, CHUNKS[0])
    settle(m, 1.9)
    assert m.state.state == "working"
    [change] = m.foreground(2.0, _fg(12, "vim"))
    assert change.new.state == "exited"


def test_a_foreground_we_cannot_read_keeps_screen_identification() -> None:
    m = machine()
    m.foreground(0.5, Foreground(11, "", (), False, None))  # the group could not be described
    m.output(1.0, CHUNKS[0])
    settle(m, 1.9)
    assert m.kind.kind == "unknown"
    assert m.state.state == "working" and m.agent == "claude"  # identified by its screen
    assert m.foreground(2.0, _fg(10, "bash", shell=True))[0].new.state == "exited"  # an agent was seen


def test_a_program_known_not_to_be_an_agent_is_never_judged_by_agent_rules() -> None:
    """A shell that printed a dialog (`panewatch ls`, `cat` of a transcript), a pager showing one, a script's
    `sleep` under what `cat` printed, `watch panewatch ls`: no agent rule judges its screen, so it is never
    blocked."""
    script = Foreground(14, "sh", ("sh", "-c", "cat dialog.txt; sleep 600"), False, None,
                        members=(("sleep", ("sleep", "600")),))
    watching = Foreground(15, "watch", ("watch", "panewatch", "ls"), False, None,
                          members=(("sh", ("sh", "-c", "panewatch ls")), ("panewatch", ("panewatch", "ls"))))
    for fg in (_fg(10, "bash", shell=True), _fg(12, "less"), Foreground(13, "python3", ("python3", "-m", "panewatch",
               "ls"), False, None), script, watching):
        m = machine()
        m.foreground(0.5, fg)
        for k, chunk in enumerate(CHUNKS[:3]):  # Claude's working screen, then its Bash dialog
            m.output(1.0 + k, chunk)
        changes = settle(m, 3.9)
        assert m.state.state == "idle" and m.state.source == "process", fg
        assert "blocked" not in {c.new.state for c in changes} and m.agent is None, fg
        assert m.kind.kind == "other" and m.verdict.rule is None
        assert m.report(4.0, Report("blocked", 4.0, "hook")) == []  # a report from an agent not in front


def test_a_program_named_nowhere_is_judged_by_its_screen() -> None:
    """A program no manifest and no list names (a replay script, a renamed agent binary, an agent under
    `sudo`'s own pty) may be an agent: its screen identifies one, as a replay's does. Never judging it
    would lose a "needs you" for good, not make it late."""
    for fg in (Foreground(20, "python3", ("python3", "castplay.py", "dialog.cast"), False, None), _fg(21, "my-agent"),
               Foreground(22, "sudo", ("sudo", "my-agent"), False, None),
               Foreground(23, "npx", ("npx", "some-agent"), False, None, members=(("some-agent", ("some-agent",)),))):
        m = machine()
        m.foreground(0.5, fg)
        for k, chunk in enumerate(CHUNKS[:3]):  # Claude's working screen, then its Bash dialog
            m.output(1.0 + k, chunk)
        settle(m, 3.9)
        assert m.kind.kind == "unknown", fg
        assert (m.state.state, m.agent) == ("blocked", "claude"), fg


def test_a_dialog_shown_under_a_known_program_is_not_the_next_unnamed_programs() -> None:
    """By hand and in bench day: a shell `cat` a dialog, then ran a program no list names (`python3 -c`,
    `make`): the pane turned unknown with the dialog still drawn and was "needs you". What the screen showed at
    the last look under the shell is inherited; what is drawn after it is the new program's (a remote agent
    exec'd from a shell while the link hung drew its dialog after that look: believed, tests/test_remote_watch.py)."""
    m = machine()
    m.foreground(0.5, _fg(10, "bash", shell=True))
    for k, chunk in enumerate(CHUNKS[:3]):  # the dialog's words, printed under the shell
        m.output(1.0 + k, chunk)
    m.looked(3.5)  # the runtime looked again: still the shell
    m.foreground(4.0, _fg(11, "python3"))
    assert m.kind.kind == "unknown" and m.detector.verdict.state == "blocked"  # the screen alone says blocked
    changes = settle(m, 6.0)
    assert m.state.state == "idle" and "blocked" not in {c.new.state for c in changes}
    assert m.agent is None  # nor is it taken for the agent whose words it shows
    m.output(6.5, b"\x1b[H\x1b[2J")  # it clears the screen: the inherited dialog is gone
    settle(m, 7.5)
    for k, chunk in enumerate(CHUNKS[:3]):  # and now it draws a dialog of its own: believed
        m.output(8.0 + k, chunk)
    settle(m, 11.0)
    assert m.state.state == "blocked"

    drawn_after = machine()  # the dialog came after the last look under the shell: the new program's
    drawn_after.foreground(0.5, _fg(10, "bash", shell=True))
    drawn_after.looked(0.6)
    for k, chunk in enumerate(CHUNKS[:3]):
        drawn_after.output(1.0 + k, chunk)
    drawn_after.foreground(4.0, _fg(11, "python3"))
    settle(drawn_after, 6.0)
    assert drawn_after.state.state == "blocked"


def test_a_view_of_another_pane_is_not_judged() -> None:
    client = Foreground(20, "tmux: client", ("tmux", "-L", "day", "attach", "-t", "agents"), False, None)
    for fg, shows in ((client, None), (Foreground(21, "python3", ("python3", "/usr/bin/panewatch", "run", "--",
                                                                  "claude"), False, None), None),
                      (Foreground(22, "panewatch", ("/usr/bin/panewatch", "attach", "5"), False, None), "5")):
        m = machine()
        m.foreground(0.5, fg)
        for k, chunk in enumerate(CHUNKS[:3]):
            m.output(1.0 + k, chunk)
        settle(m, 3.9)
        assert (m.kind.kind, m.kind.shows) == ("view", shows) and m.state.state == "idle", fg


def test_the_agent_in_front_again_is_judged_at_once() -> None:
    m = machine()
    m.foreground(0.5, _fg(10, "bash", shell=True))
    for k, chunk in enumerate(CHUNKS[:3]):
        m.output(1.0 + k, chunk)
    settle(m, 3.9)
    assert m.state.state == "idle"
    [change] = m.foreground(4.0, _fg(11, "claude", agent="claude"))  # the same screen, now the agent's
    assert change.new.state == "blocked"


def test_exit_judges_the_last_frame_then_stays_exited() -> None:
    m = machine(agent="claude")
    m.output(1.0, CHUNKS[0])  # not yet judged: exit judges it first
    changes = m.exited(1.01, 0)
    assert [(c.new.state, c.new.source) for c in changes] == [("working", "screen"), ("exited", "process")]
    assert m.state.detail == "exit code 0" and m.next_due() == float("inf")
    assert m.report(1.5, Report("blocked", 1.5, "hook")) == [] and m.tick(2.0) == [] and m.exited(3.0, 1) == []
    assert m.state.state == "exited" and m.exit_code == 0


def test_classify_now_hands_its_changes_to_the_next_event() -> None:
    m = machine(agent="claude")
    m.output(1.0, CHUNKS[0])
    assert m.classify_now(1.01).state == "working"  # the guard's question, answered at once
    [change] = m.tick(1.02)  # ... and the change it caused is not lost
    assert (change.old and change.old.state, change.new.state) == ("idle", "working")


def test_a_manifest_reload_rejudges_the_screen_already_shown() -> None:
    current = [m for m in MANIFESTS if m.id != "claude"]
    m = PaneMachine(lambda: current, COLS, ROWS, agent="claude")
    m.output(1.0, CHUNKS[0])
    settle(m, 1.9)
    assert m.state.state == "idle" and m.verdict.rule is None  # no claude rules loaded
    current = MANIFESTS
    [change] = m.manifests_changed(2.0)
    assert change.new.state == "working"


# -- the same bytes and report through a LivePane on a real PTY ------------------------------------

CHILD = r'''
import os, signal, sys, termios
attrs = termios.tcgetattr(0)
attrs[1] &= ~termios.OPOST  # the recorded bytes go out as they are
attrs[3] &= ~(termios.ECHO | termios.ICANON)  # the screen's replies to queries are not echoed onto it
termios.tcsetattr(0, termios.TCSANOW, attrs)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
for k, path in enumerate(sys.argv[1:]):
    if k:
        signal.sigwait({signal.SIGUSR1})  # the next stage when the test says so
    data = open(path, "rb").read()
    while data:
        data = data[os.write(1, data):]
while os.read(0, 4096):  # drain the replies until the pane closes
    pass
'''


async def until(pred: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        assert loop.time() < deadline, f"{what} not reached in time"
        await asyncio.sleep(0.01)


def test_replay_gives_the_same_state_sequence_as_a_live_pane(tmp_path: Path) -> None:
    script = tmp_path / "stages.py"
    script.write_text(CHILD, encoding="utf-8")
    paths = []
    for k, chunk in enumerate(CHUNKS):
        paths.append(tmp_path / f"chunk{k}")
        paths[-1].write_bytes(chunk)
    screens: list[Snapshot] = []
    screen = Screen(COLS, ROWS)
    for chunk in CHUNKS:
        screen.feed(chunk)
        screens.append(screen.snapshot())
    live_stages: list[tuple[str, str]] = []

    async def main() -> list[tuple[str, str]]:
        loop = asyncio.get_running_loop()
        pane = LivePane([sys.executable, str(script), *map(str, paths)], pane_id="live", cols=COLS, rows=ROWS,
                        agent="claude", env={**os.environ, "TERM": "xterm-256color"})
        changes: list[tuple[str, str]] = []
        pane.subscribe(lambda c: changes.append((c.new.state, c.new.source)))
        reported = 0.0
        pane.start()
        try:
            for k, expected in enumerate(screens):
                if k:
                    assert pane.pid is not None
                    # Past the report's settling time, as in the virtual-time staging (a stage each second).
                    settled = reported + REPORT_SETTLE[EARLY.state]
                    await until(lambda s=settled: loop.time() > s, "report settled")
                    os.kill(pane.pid, signal.SIGUSR1)
                # On screen, and judged: nothing is due but the slow safety sweep.
                await until(lambda e=expected: pane.snapshot() == e and pane.detector.next_due() > loop.time() + 1,
                            f"stage {k} on screen and judged (state {pane.state})")
                if k == 0:
                    reported = loop.time()
                    pane.report(Report(EARLY.state, reported, EARLY.source, EARLY.detail))
                live_stages.append((pane.state.state, pane.state.source))
        finally:
            await pane.close()
        return changes[:-1]  # the last is the close's 'exited'

    live = asyncio.run(asyncio.wait_for(main(), 90))
    assert live_stages == staged(machine(agent="claude"), Report(EARLY.state, 1.95, EARLY.source, EARLY.detail))
    cast = Cast(CAST.header, tuple(CastEvent(2.0 * k + 1, "o", c.decode("utf-8", "surrogateescape"))
                                   for k, c in enumerate(CHUNKS)))
    replayed = replay(cast, MANIFESTS, agent="claude", reports=[Report(EARLY.state, 2.0, EARLY.source)])
    assert [(c.state, c.pane.source) for c in replayed.changes] == live == [
        ("idle", "screen"), ("working", "screen"), ("blocked", "hook"), ("working", "screen")]


def test_a_link_down_is_unreachable_over_every_signal_and_up_again_judges_the_screen_now() -> None:
    m = machine(agent="claude")
    m.output(1.0, CHUNKS[0])
    settle(m, 1.9)
    assert m.state.state == "working"
    [down] = m.link(2.0, False, "ssh: Connection closed")
    assert (down.old and down.old.state, down.new.state, down.new.source, down.new.detail) == (
        "working", "unreachable", "link", "ssh: Connection closed")  # never a stale "working"
    for k, chunk in enumerate(CHUNKS[1:3]):  # the resync's redraw (the dialog) arrives while still down
        m.output(2.1 + k, chunk)
    settle(m, 4.0)
    assert m.report(4.0, Report("working", 4.0, "hook")) == [] and m.state.state == "unreachable"
    [up] = m.link(4.5, True)
    assert (up.t, up.old and up.old.state, up.new.state) == (4.5, "unreachable", "blocked")  # judged at once
    assert m.link(4.6, True) == []
    m.link(5.0, False)
    assert m.exited(5.5, None, "the tmux pane was closed")[-1].new.state == "exited"
    assert m.link(6.0, True) == [] and m.state.state == "exited"  # exited for good
