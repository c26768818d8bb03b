"""The input guard against a fake pane built on a real Screen playing real captures: the agent's
output is fed up to the moment the capture's driver typed a key, and resumes when the guard types."""

from __future__ import annotations

import asyncio
import time

import pytest

from panewatch.core.cast import CastEvent, read_cast
from panewatch.core.classify import classify
from panewatch.core.combine import PaneState
from panewatch.core.manifest import Manifest, load_all
from panewatch.core.prompt import parse_prompt
from panewatch.core.screen import Screen, Snapshot
from panewatch.errors import (
    AgentExitedError,
    GuardError,
    NotBlockedError,
    PaneBlockedError,
    PanewatchError,
    PromptChangedError,
    UnknownOptionError,
)
from panewatch.golden.cases import bundled_root
from panewatch.runtime.guard import PASTE_END, PASTE_START, HasState, InputGuard

AGENTS = {"claude-code": "claude", "codex": "codex", "gemini-cli": "gemini"}


class CastPane:
    """A GuardedPane replaying a capture. With `stop_at_prompt`, output plays until the capture's
    driver types a key on a blocked screen and pauses there; a write then resumes it up to the
    driver's next key (when `respond` is set), as the agent would redraw after a key. Without,
    the whole capture plays (the agent's last, idle screen)."""

    def __init__(self, case: str, *, stop_at_prompt: bool = True) -> None:
        manifest = load_all().get(AGENTS[case.split("/")[0]])
        assert manifest is not None
        self.manifest: Manifest = manifest
        cast = read_cast(bundled_root() / case / "session.cast")
        self.screen = Screen(cast.header.width, cast.header.height)
        self.events: list[CastEvent] = [e for e in cast.events if e.kind in ("o", "i")]
        self.pos = 0
        self.written: list[bytes] = []
        self.respond = True
        self.paste = False
        self.last_output = self.last_input = float("-inf")  # replayed output comes "long ago"
        while self.pos < len(self.events):
            event = self.events[self.pos]
            if event.kind == "i" and stop_at_prompt and self._on_prompt():
                return
            self._step()
        assert not stop_at_prompt, f"{case}: the driver never answered a prompt"

    def _on_prompt(self) -> bool:
        verdict = classify(self.screen.snapshot(), self.manifest)
        return verdict.state == "blocked" and bool(parse_prompt(self.screen.snapshot(), verdict).options)

    def _step(self) -> None:
        event = self.events[self.pos]
        if event.kind == "o":
            self.screen.feed(event.data.encode("utf-8", "surrogateescape"))
        self.pos += 1

    def next_input(self) -> str:
        return self.events[self.pos].data

    def classify_now(self) -> HasState:
        return classify(self.screen.snapshot(), self.manifest)

    def snapshot(self) -> Snapshot:
        return self.screen.snapshot()

    def clock(self) -> float:
        return time.monotonic()

    def write(self, data: bytes) -> None:
        self.written.append(data)
        self.last_input = self.clock()
        if self.respond and self.pos < len(self.events):
            self.pos += 1  # the driver's key we replace
            while self.pos < len(self.events) and self.events[self.pos].kind == "o":
                self._step()

    def bracketed_paste(self) -> bool:
        return self.paste


def blocked_pane(case: str) -> CastPane:
    """The pane stopped on its permission prompt, just before the driver answered it."""
    pane = CastPane(case)
    assert pane.classify_now().state == "blocked"
    return pane


def idle_pane() -> CastPane:
    pane = CastPane("claude-code/2.1.332/full_bash", stop_at_prompt=False)
    pane.respond = False
    assert pane.classify_now().state == "idle"
    return pane


def test_send_into_a_blocked_pane_is_refused_with_the_prompt() -> None:
    pane = blocked_pane("claude-code/2.1.332/full_bash")
    with pytest.raises(PaneBlockedError) as info:
        asyncio.run(InputGuard(pane, pane_id="p1").send("also delete the logs"))
    message = str(info.value)
    assert "pane p1 is blocked" in message
    assert "Do you want to proceed?" in message
    assert "1. Yes" in message and "4. No" in message and info.value.prompt.fingerprint in message
    assert info.value.prompt.question == "Do you want to proceed?"
    assert pane.written == []
    assert isinstance(info.value, GuardError) and isinstance(info.value, PanewatchError)


def test_send_into_an_idle_pane_types_the_text_without_its_control_characters() -> None:
    pane = idle_pane()
    asyncio.run(InputGuard(pane).send("hello\x1b[31m there\x07", enter=False))
    assert pane.written == [b"hello[31m there"]  # the Enter and the turn it starts: tests/test_guard_race.py


def test_answer_with_the_wrong_fingerprint_is_refused() -> None:
    pane = blocked_pane("claude-code/2.1.332/full_bash")
    guard = InputGuard(pane)
    shown = guard.prompt()
    with pytest.raises(PromptChangedError) as info:
        asyncio.run(guard.answer(1, "0123456789abcdef"))
    assert info.value.prompt.fingerprint == shown.fingerprint
    assert "Do you want to proceed?" in str(info.value)
    assert pane.written == []


def test_answer_with_the_right_fingerprint_writes_exactly_the_key_and_the_prompt_clears() -> None:
    pane = blocked_pane("claude-code/2.1.332/full_bash")
    assert pane.next_input() == "1"  # what the capture's driver typed here
    guard = InputGuard(pane)
    shown = guard.prompt()
    result = asyncio.run(guard.answer(1, shown.fingerprint))
    assert pane.written == [b"1"]
    assert result.cleared and result.state != "blocked" and result.prompt_after is None
    assert (result.option.number, result.option.kind) == (1, "allow_once")


def test_answer_codex_by_kind_types_its_letter() -> None:
    pane = blocked_pane("codex/0.171.0/altscreen")
    assert pane.next_input() == "y"
    guard = InputGuard(pane)
    result = asyncio.run(guard.answer("allow_once", guard.prompt().fingerprint))
    assert pane.written == [b"y"]
    assert result.cleared


def test_answer_gemini_reject_types_escape() -> None:
    pane = blocked_pane("gemini-cli/0.61.0/default")
    pane.respond = False
    guard = InputGuard(pane)
    result = asyncio.run(guard.answer("reject", guard.prompt().fingerprint, timeout=0.1))
    assert pane.written == [b"\x1b"]
    assert not result.cleared and result.state == "blocked"  # the replay does not react to ESC
    assert result.prompt_after is not None and result.prompt_after.question == "Allow execution of [Shell]?"


def test_answer_refuses_when_not_blocked_or_option_unknown() -> None:
    idle = idle_pane()
    with pytest.raises(NotBlockedError, match="idle"):
        asyncio.run(InputGuard(idle).answer(1, "whatever"))
    pane = blocked_pane("claude-code/2.1.332/full_bash")
    guard = InputGuard(pane)
    with pytest.raises(UnknownOptionError, match="no option 7"):
        asyncio.run(guard.answer(7, guard.prompt().fingerprint))
    assert idle.written == pane.written == []


class StatePane:
    """A pane whose combined state says something the screen does not (a hook, the process)."""

    def __init__(self, state: PaneState, text: str = "") -> None:
        self.state = state
        self.screen = Snapshot.from_text(text, height=10)
        self.written: list[bytes] = []
        self.last_output = self.last_input = float("-inf")

    def classify_now(self) -> HasState:
        return self.state

    def snapshot(self) -> Snapshot:
        return self.screen

    def clock(self) -> float:
        return time.monotonic()

    def write(self, data: bytes) -> None:
        self.written.append(data)
        self.last_input = self.clock()


def test_hook_reported_prompt_not_yet_drawn_also_refuses_send() -> None:
    pane = StatePane(PaneState("blocked", "hook", None, "PermissionRequest Bash"), "● Running…")
    with pytest.raises(PaneBlockedError, match="question not on screen"):
        asyncio.run(InputGuard(pane).send("hi"))
    assert pane.written == []


def test_send_after_the_agent_exited_is_refused() -> None:
    pane = StatePane(PaneState("exited", "process", None), "$ ")
    with pytest.raises(AgentExitedError, match="shell"):
        asyncio.run(InputGuard(pane).send("rm -rf build"))
    assert pane.written == []


def test_nothing_is_typed_or_answered_into_an_unreachable_pane() -> None:
    from panewatch.errors import PaneNotResyncedError

    pane = StatePane(PaneState("unreachable", "link", None, "devbox: the link is down"), "Do you want to proceed?")
    guard = InputGuard(pane, pane_id="devbox:%3")
    with pytest.raises(PaneNotResyncedError, match="devbox:%3: devbox: the link is down"):
        asyncio.run(guard.send("hi"))
    with pytest.raises(PaneNotResyncedError):
        asyncio.run(guard.keys(b"1"))
    with pytest.raises(PaneNotResyncedError):
        asyncio.run(guard.answer(1, "whatever"))
    assert pane.written == []


def test_multiline_text_goes_as_one_bracketed_paste_when_enabled() -> None:
    pane = idle_pane()
    guard = InputGuard(pane)
    asyncio.run(guard.send("line one\nline two", enter=False))
    assert pane.written == [b"line one\nline two"]  # the pane did not enable bracketed paste
    pane.written.clear()
    pane.paste = True
    asyncio.run(guard.send("a\nb\x1b[201~c", enter=False))
    assert pane.written == [PASTE_START + b"a\nb[201~c" + PASTE_END]
    pane.written.clear()
    asyncio.run(guard.send(f"x\n{PASTE_END.decode()}y", enter=False))  # even if only the ESC survived as text
    assert pane.written[0].count(PASTE_END) == 1
