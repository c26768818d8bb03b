"""OSC 7501 ("program status"): the scanner across chunks, the probe answered before DA1, the statuses
as combine()'s row 3 through a PaneMachine (Claude Code's and Codex's real sequences)."""

from __future__ import annotations

import base64
import itertools

from hypothesis import given
from hypothesis import strategies as st

from panewatch.core.classify import Verdict
from panewatch.core.combine import Report, combine
from panewatch.core.machine import PaneMachine
from panewatch.core.manifest import load_all
from panewatch.core.screen import Screen
from panewatch.core.termstatus import INTRO, REPLY, ProgramStatus, Scanner, parse, report_state

MSG = base64.b64encode(b"approve Bash: touch /tmp/x").decode()
# What Claude Code 2.1.332 wrote in a headless pane (answered probe), bash scenario.
CLAUDE = [b"\x1b]7501;state=idle:app=claude-code\x1b\\", b"\x1b]7501;state=working:app=claude-code\x1b\\",
          f"\x1b]7501;state=blocked:app=claude-code:kind=permission:msg={MSG}\x1b\\".encode(),
          b"\x1b]7501;state=working:app=claude-code\x1b\\", b"\x1b]7501;state=done:app=claude-code\x1b\\",
          b"\x1b]7501;state=clear\x1b\\"]
STREAM = b"hello \x1b]7501;?\x1b\\\x1b[c" + b"text".join(CLAUDE) + b"\x1b]7501;state=idle:app=codex\x07 tail"


def test_parse_reads_the_fields_and_decodes_the_message() -> None:
    status = parse(CLAUDE[2][len(b"\x1b]7501;"):-2])
    assert status == ProgramStatus("blocked", "claude-code", kind="permission", msg="approve Bash: touch /tmp/x")
    assert status.detail() == "OSC 7501 blocked permission approve Bash: touch /tmp/x"
    assert parse(b"progress=50") is None and parse(b"") is None
    assert parse(b"state=working:progress=40:title=!!!").progress == 40  # type: ignore[union-attr]


@given(st.lists(st.integers(0, len(STREAM)), max_size=8))
def test_any_split_finds_the_same_sequences(cuts: list[int]) -> None:
    scanner = Scanner()
    found, bounds = [], sorted({0, len(STREAM), *cuts})
    for lo, hi in itertools.pairwise(bounds):
        found += [(f.probe, f.status) for f in scanner.feed(STREAM[lo:hi])]
    whole = [(f.probe, f.status) for f in Scanner().feed(STREAM)]
    assert found == whole
    assert whole[0] == (True, None) and [s.state for _, s in whole[1:] if s] == [
        "idle", "working", "blocked", "working", "done", "clear", "idle"]


def test_an_unterminated_or_huge_sequence_is_dropped_and_harmless() -> None:
    scanner = Scanner()
    assert scanner.feed(b"\x1b]7501;state=working" + b"x" * 20000) == []
    assert [f.status.state for f in scanner.feed(CLAUDE[0]) if f.status] == ["idle"]


def test_a_headless_screen_answers_the_probe_before_the_engines_da1_reply() -> None:
    screen = Screen(40, 5)
    replies: list[bytes] = []
    screen.on_reply(replies.append)
    screen.feed(b"\x1b]7501;?\x1b\\\x1b[c")  # Claude's probe, then DA1, in one write
    assert REPLY not in replies and len(replies) == 1  # not asked to answer: only DA1's answer, as a plain terminal
    replies.clear()
    screen.answer_program_status = True
    screen.feed(b"\x1b]7501;?\x1b\\\x1b[c")
    assert replies[0] == REPLY and len(replies) == 2 and replies[1].startswith(b"\x1b[?")
    screen.feed(CLAUDE[1] + b"visible")
    assert [s.state for s in screen.take_program_status()] == ["working"] and screen.take_program_status() == []
    assert "visible" in screen.snapshot().text()  # the sequence itself draws nothing


def test_which_statuses_are_taken() -> None:
    assert report_state(ProgramStatus("blocked", "claude-code", kind="permission")) == "blocked"
    assert report_state(ProgramStatus("working", "claude-code")) == "working"
    assert report_state(ProgramStatus("working", "codex")) is None  # see STATUS_STATES: a withdrawal
    assert report_state(ProgramStatus("blocked", "codex")) == "blocked"
    assert report_state(ProgramStatus("clear")) is None and report_state(ProgramStatus("idle", "other")) is None


WORKING = Verdict("working", "spinner-line", agent="claude")
IDLE = Verdict("idle", "shortcuts-footer", agent="claude")


def test_row_3_the_status_outlasts_screen_changes_and_beats_a_hook() -> None:
    status = Report("working", 6.54, "terminal", "OSC 7501 working")
    hook_blocked = Report("blocked", 4.40, "hook", "PermissionRequest Bash")
    # The grant: no hook fires, the status says working at once; a hook's blocked would need the screen.
    assert combine(IDLE, 9.0, hook_blocked, True, 9.0, status=status).source == "terminal"
    assert combine(IDLE, 9.0, None, True, 9.0, status=status).state == "working"  # screen moved: still
    assert combine(Verdict("blocked", "permission-question"), 9.0, None, True, 9.0,
                   status=Report("idle", 8.0, "terminal")).source == "screen"  # row 2 before row 3
    frozen = combine(IDLE, 10.0, None, True, 10.0 + 601, status=Report("working", 10.0, "terminal"))
    assert frozen.source == "screen"  # a hung agent: a frozen screen for 10 minutes ends 'working'
    assert combine(WORKING, 1.0, None, True, 99.0, status=Report("done", 2.0, "terminal")).state == "idle"


def test_a_pane_machine_follows_claudes_statuses_and_their_withdrawal() -> None:
    m = PaneMachine(lambda: load_all().list(), 80, 24, pane_id="t", agent="claude")
    seen = []
    for k, seq in enumerate(CLAUDE):
        m.output(1.0 + k, seq)
        seen.append((m.state.state, m.state.source))
    assert seen[:5] == [("idle", "terminal"), ("working", "terminal"), ("blocked", "terminal"),
                        ("working", "terminal"), ("idle", "terminal")]
    assert m.status_in_force is None and seen[5][1] == "screen"  # clear: the screen speaks again
    assert [s.state for _, s in m.program_status] == ["idle", "working", "blocked", "working", "done", "clear"]


def test_a_chunk_without_the_intro_still_holds_an_intros_start() -> None:
    """The fast path for chunks with no OSC 7501 in them: an intro cut after any of its bytes, in a
    chunk of plain output, is still completed by the next chunk; an ESC that cannot begin one is not held."""
    sequence = b"\x1b]7501;state=blocked:app=claude-code\x07"
    for cut in range(1, len(INTRO)):
        scanner = Scanner()
        assert scanner.feed(b"\x1b[1mplain output" + sequence[:cut]) == []
        found = scanner.feed(sequence[cut:] + b"more")
        assert len(found) == 1 and found[0].status is not None and found[0].end == len(sequence) - cut
    scanner = Scanner()
    assert scanner.feed(b"text\x1b[") == [] and scanner._held == b""
