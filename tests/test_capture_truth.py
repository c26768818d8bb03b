"""capture_truth: the truth of a capture comes from literals, the scenario and the mock's tool windows."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

from panewatch.core.cast import CastWriter, parse_cast
from panewatch.golden.cases import find_cases
from panewatch.testing.capture import PROFILES, TEXT_SCENARIOS, literals, rederive
from panewatch.testing.capture_truth import Literals, TruthError, busy_shown, derive_timeline, tool_windows

LIT = Literals(ready=("READY",), busy=("BUSY",), dialog=("Proceed?",))
HOME = "\x1b[H\x1b[2J"


def _cast(events: list[tuple[float, str, str]]) -> str:
    buf = io.StringIO()
    writer = CastWriter(buf, 40, 10, 0.0)
    for t, kind, data in events:
        writer.write(t, kind, data)
    return buf.getvalue()


def _screen(*lines: str) -> str:
    return HOME + "\r\n".join(lines)


def _session(dialog_gap: float | None = None, trap: bool = False) -> tuple[str, list[dict[str, object]]]:
    events = [(0.1, "o", _screen("starting")), (0.5, "o", _screen("READY")), (1.0, "m", "submitted"),
              (1.0, "i", "\r"), (1.2, "o", _screen("BUSY"))]
    mock: list[dict[str, object]] = [{"t": 1.1, "event": "request"}]
    if trap:
        events += [(2.0, "o", _screen("Proceed? 1. Yes", "BUSY"))]  # quoted prose, not a dialog
    else:
        mock += [{"t": 2.0, "event": "reply_sent", "stop_reason": "tool_use"}]
        events += [(2.1, "o", _screen("Proceed?", "1. Yes")), (3.0, "i", "1")]
        if dialog_gap is not None:  # a second dialog right after the first
            events += [(3.1, "o", _screen("BUSY")), (3.1 + dialog_gap, "o", _screen("Proceed?", "1. Yes (b)"))]
        events += [(4.0, "o", _screen("BUSY", "ran it"))]
        mock += [{"t": 4.1, "event": "request"}]
    mock += [{"t": 5.0, "event": "reply_sent", "stop_reason": "end_turn"}]
    events += [(5.1, "o", _screen("Done.", "READY")), (7.0, "m", "exit")]
    return _cast(events), mock


def _timeline(text: str, mock: list[dict[str, object]], dialogs: int) -> list[tuple[float, str]]:
    cast = parse_cast(text.splitlines())
    return [(e["t"], e["state"]) for e in derive_timeline(cast, mock, LIT, dialogs)]


def test_timeline_from_literals_and_tool_windows() -> None:
    text, mock = _session()
    assert _timeline(text, mock, 1) == [(0.0, "ignore"), (0.5, "idle"), (1.2, "working"), (2.1, "blocked"),
                                        (4.0, "working"), (5.1, "idle"), (7.0, "ignore")]


def test_quoted_dialog_outside_a_tool_window_is_not_blocked() -> None:
    text, mock = _session(trap=True)
    assert tool_windows(mock) == []
    assert "blocked" not in {state for _, state in _timeline(text, mock, 0)}


def test_back_to_back_dialogs_are_one_stretch_but_a_real_gap_is_working() -> None:
    text, mock = _session(dialog_gap=0.05)
    assert [s for _, s in _timeline(text, mock, 2)].count("blocked") == 1
    text, mock = _session(dialog_gap=0.6)
    assert _timeline(text, mock, 2)[3:6] == [(2.1, "blocked"), (3.1, "working"), (3.7, "blocked")]


def test_a_refused_dialog_that_ends_the_turn_goes_idle_once_the_composer_is_back() -> None:
    text, mock = _session()
    mock = [e for e in mock if e["t"] < 4.0]  # no tool result, no final reply: the turn ended at the dialog
    with pytest.raises(TruthError, match="final"):
        _timeline(text, mock, 1)
    cast = parse_cast(text.splitlines())
    timeline = [(e["t"], e["state"]) for e in derive_timeline(cast, mock, LIT, 1, declined=True)]
    # The agent still shows its busy marker after the dialog (Copilot: '● Cancelling', then 'Working'):
    # working until the composer is back without it.
    assert timeline[-4:] == [(2.1, "blocked"), (4.0, "working"), (5.1, "idle"), (7.0, "ignore")]
    # The composer redrawn within FLICKER of the dialog going (Claude, Codex, Gemini, Qwen): idle as it goes.
    quick = [(0.5, "o", _screen("READY")), (1.0, "m", "submitted"), (1.0, "i", "\r"), (1.2, "o", _screen("BUSY")),
             (2.1, "o", _screen("Proceed?", "1. Yes")), (3.0, "i", "\x1b"), (4.0, "o", _screen("BUSY")),
             (4.01, "o", _screen("READY")), (7.0, "m", "exit")]
    timeline = [(e["t"], e["state"]) for e in derive_timeline(parse_cast(_cast(quick).splitlines()), mock, LIT, 1,
                                                                declined=True)]
    assert timeline[-3:] == [(2.1, "blocked"), (4.0, "idle"), (7.0, "ignore")]


def test_a_question_refused_after_the_final_reply_goes_idle_as_it_goes() -> None:
    """Aider asks once the reply is in; refused ('n'), its prompt is redrawn a few ms later: no working."""
    events = [(0.5, "o", _screen("READY")), (1.0, "m", "submitted"), (1.0, "i", "\r"), (1.2, "o", _screen("BUSY")),
              (2.1, "o", _screen("Done.", "Proceed?")), (3.0, "i", "n\r"), (3.1, "o", _screen("Done.", "answered")),
              (3.12, "o", _screen("Done.", "answered", "READY")), (7.0, "m", "exit")]
    mock: list[dict[str, object]] = [{"t": 1.1, "event": "request"},
                                     {"t": 2.0, "event": "reply_sent", "stop_reason": "end_turn"}]
    cast = parse_cast(_cast(events).splitlines())

    def timeline(declined: bool) -> list[tuple[float, str]]:
        return [(e["t"], e["state"]) for e in derive_timeline(cast, mock, LIT, 1, declined=declined,
                                                              after_reply=True)][-3:]
    assert timeline(True) == [(2.1, "blocked"), (3.1, "idle"), (7.0, "ignore")]
    assert timeline(False) == [(3.1, "working"), (3.12, "idle"), (7.0, "ignore")]  # allowed: the command ran


def test_a_run_that_misses_its_dialog_has_no_truth() -> None:
    text, mock = _session(trap=True)
    with pytest.raises(TruthError, match="dialog"):
        _timeline(text, mock, 1)


def test_a_busy_marker_quoted_in_the_final_reply_is_not_the_agents_own() -> None:
    """The prose scenario's reply quotes 'esc to cancel', Qwen's own busy marker (verify, Qwen 0.24.4)."""
    reply = "quoted: press enter to confirm or esc to cancel\nDone. All complete.\n"
    assert not busy_shown(reply + "> composer\n", ("esc to cancel",), "All complete.")
    assert busy_shown(reply + "⠏ (0s · esc to cancel)\n", ("esc to cancel",), "All complete.")
    assert busy_shown(reply, ("esc to cancel",), "")  # final text not known: anywhere counts
    assert busy_shown("quoted: esc to cancel\n", ("esc to cancel",), "not on screen yet")

    lit = dataclasses.replace(LIT, final="Done.")
    events = [(0.1, "o", _screen("starting")), (0.5, "o", _screen("READY")), (1.0, "m", "submitted"),
              (1.0, "i", "\r"), (1.2, "o", _screen("BUSY")), (5.1, "o", _screen("BUSY", "Done.", "BUSY")),
              (5.5, "o", _screen("quoting BUSY", "Done.", "READY")), (7.0, "m", "exit")]
    mock: list[dict[str, object]] = [{"t": 1.1, "event": "request"}, {"t": 5.0, "event": "reply_sent",
                                                                     "stop_reason": "end_turn"}]
    timeline = derive_timeline(parse_cast(_cast(events).splitlines()), mock, lit, 0)
    assert [(e["t"], e["state"]) for e in timeline] == [(0.0, "ignore"), (0.5, "idle"), (1.2, "working"),
                                                        (5.5, "idle"), (7.0, "ignore")]


CAPTURED = [c for c in find_cases() if "scenario" in c.truth and "mock_events" in c.truth]


def test_captured_corpus_is_there() -> None:
    assert {c.agent for c in CAPTURED} >= {"claude", "codex", "gemini"}


@pytest.mark.parametrize("case", CAPTURED, ids=[c.name for c in CAPTURED])
def test_captured_truth_is_reproducible(case, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Every folder written by `panewatch capture` re-derives to its stored timeline."""
    for name in ("session.cast", "truth.json"):
        (tmp_path / name).write_bytes((case.path / name).read_bytes())
    assert rederive(tmp_path)["timeline"] == case.truth["timeline"]
    assert json.loads((tmp_path / "truth.json").read_text())["timeline"] == case.truth["timeline"]
    assert case.truth["scenario"] in PROFILES[case.agent].dialogs or case.truth["scenario"] in TEXT_SCENARIOS
    assert literals(PROFILES[case.agent], case.truth["scenario"])[1] >= 0
