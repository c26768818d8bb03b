"""The pinned real CLIs against the mock model servers, in a real pty on the emulated screen.

Needs the CLIs from scripts/install-agents (found through $PANEWATCH_AGENTS_BIN or the install
cache); fails without them unless PANEWATCH_SKIP=agents. Every wait polls the screen with a
deadline, never a fixed sleep.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from panewatch.testing.drive import PtyAgent
from panewatch.testing.homes import MOCK_KIND, find_agents_bin, prepare
from panewatch.testing.mock import MockServer

BIN = find_agents_bin()
pytestmark = pytest.mark.needs("agents")  # tests/components.py: fails without them unless PANEWATCH_SKIP=agents

STARTUP = 60.0  # first start of a CLI on a cold cache can be slow
STEP = 45.0


@dataclass(frozen=True)
class Spec:
    ready: str  # shown when the CLI accepts a prompt
    dialog: str  # the bash scenario's permission question
    answer: str  # the key that allows once
    busy: str  # shown only while a turn runs


SPECS = {
    "claude": Spec("? for shortcuts", "Do you want to proceed?", "1", "esc to interrupt"),
    "codex": Spec("Ask Codex to do anything", "Would you like to run the following command?", "y",
                  "esc to interrupt"),
    "gemini": Spec("Type your message", "Allow execution of [Shell]?", "\r", "esc to cancel"),
}
DONE = "scripted scenario '{}' is complete"


def _start(agent: str, tmp_path: Path, mock: MockServer) -> PtyAgent:
    assert BIN is not None
    launch = prepare(agent, tmp_path / agent, mock.url, bin_dir=BIN)
    pane = PtyAgent(launch.argv, env=launch.env, cwd=launch.cwd, cols=120, rows=32, clock=time.monotonic)
    pane.start()
    if pane.wait_for(SPECS[agent].ready, STARTUP) is None:
        text = pane.text()
        pane.close()
        pytest.fail(f"{agent} never became ready; screen:\n{text}")
    return pane


def idle(text: str, spec: Spec, final: str) -> bool:
    """The turn's final text is shown and the CLI is back at its prompt (a frame can be half drawn)."""
    return final in text and spec.ready in text and spec.busy not in text


def _fail(pane: PtyAgent, what: str) -> None:
    pytest.fail(f"{what}; screen:\n{pane.text()}")


@pytest.mark.parametrize("agent", sorted(SPECS))
def test_bash_dialog_appears_and_answer_finishes_the_turn(agent: str, tmp_path: Path) -> None:
    spec = SPECS[agent]
    with MockServer(MOCK_KIND[agent], clock=time.monotonic) as mock:
        pane = _start(agent, tmp_path, mock)
        try:
            pane.type("SCN=bash DELAY=1 please create the marker file")
            blocked = pane.wait_for(spec.dialog, STEP)
            if blocked is None:
                _fail(pane, f"{agent}: permission dialog never shown")
            seen = time.monotonic()
            sent = [e for e in mock.events if e["event"] == "reply_sent"]
            assert sent and sent[0]["stop_reason"] == "tool_use"
            if pane.answer(spec.answer, spec.dialog, timeout=15) is None:
                _fail(pane, f"{agent}: dialog still shown after answering {spec.answer!r}")
            answered = time.monotonic()
            done = pane.wait_for(lambda s: idle(s.text(), spec, DONE.format("bash")), STEP)
            if done is None:
                _fail(pane, f"{agent}: turn did not finish after the answer")
            steps = [(e["step"], e["stop_reason"]) for e in mock.events if e["event"] == "reply_sent"]
            assert steps == [(0, "tool_use"), (1, "end_turn")]
            print(f"\n{agent}: reply_sent -> dialog on screen {seen - sent[0]['t']:.2f}s; "
                  f"answer -> dialog gone {answered - seen:.2f}s")
        finally:
            pane.close()


@pytest.mark.parametrize("agent", sorted(SPECS))
def test_trap_reply_ends_idle(agent: str, tmp_path: Path) -> None:
    spec = SPECS[agent]
    with MockServer(MOCK_KIND[agent], clock=time.monotonic) as mock:
        pane = _start(agent, tmp_path, mock)
        try:
            pane.type("SCN=trap DELAY=1 explain the dialog")
            done = pane.wait_for(lambda s: idle(s.text(), spec, "regression test"), STEP)
            if done is None:
                _fail(pane, f"{agent}: trap reply never finished")
            steps = [(e["stop_reason"], e["tools"]) for e in mock.events if e["event"] == "reply_sent"]
            assert steps == [("end_turn", [])]  # no tool call: nothing can have asked permission
        finally:
            pane.close()
