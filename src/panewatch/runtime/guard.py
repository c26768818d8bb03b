"""The ONE place that writes to panes on someone's behalf: refuses what would land in a dialog.

    send(text)                   re-classifies NOW; refuses with PaneBlockedError (showing the
                                 prompt) when the pane is blocked, AgentExitedError when the agent
                                 is gone and a shell would run the text as a command,
                                 NotAnAgentError when the pane's foreground is not an agent at all (a
                                 shell, a pager, a view of another pane: core/panekind.py),
                                 PaneNotResyncedError when the pane is unreachable (a remote pane
                                 whose link is down, or back but its screen not yet redrawn). Then
                                 types the text, waits the agent's paste window (its manifest's
                                 `submit_gap`: Codex takes an Enter within 120 ms of fast input as a
                                 pasted newline), checks again, presses Enter as a key of its own,
                                 and waits for the turn to start (working, or a dialog at once);
                                 NotSubmittedError if it did not within SUBMIT_TIMEOUT.
    keys(data)                   raw keys from a terminal view (the board's): refused the same way;
                                 typed as they are (escapes, arrows, Ctrl-C included).
    answer(option, fingerprint)  only an agent's pane (NotAnAgentError), only when blocked AND the
                                 prompt on screen has the fingerprint the user saw (PromptChangedError
                                 otherwise); types that option's key, then polls until the prompt
                                 left and the agent moved on (working, the next dialog, idle:
                                 `applied`) or `timeout` passes (`applied` False, `outcome` says what
                                 is on screen).

One write at a time, and never into what the previous one caused before it is on screen: a key that
opens a dialog has not drawn it yet when the next request arrives (two pipelined `send`s answered
the dialog the first one opened). So every write takes the pane's turn: one asyncio lock per pane,
shared by every InputGuard made for that pane (the daemon's socket, the board's websocket, the CLI
through the daemon, a `run` pane through its BoardLink, the demo's bot), and in it waits until

    * REACTION has passed since the pane's last input (by anyone: `run`'s key pump counts too),
    * the pane's output has been quiet for QUIET (between frames; a spinner never is silent) and no
      synchronized update is open (a pane offering `mid_frame() -> bool`: a frame half drawn), and
    * the pane's screen is current: a pane offering `async before_write()` (a tmux pane: one round trip
      through its control connection, runtime/tmux_watch.py) is called once, settled; output that the
      round trip brought in must then settle too. It refuses with a GuardError of its own (a hung link:
      PaneNotResyncedError), and may refuse in `write` too (a tmux mode, synchronize-panes), and
    * then classifies the screen now, after its last output, with no await before the write (the
      pane's reader runs on the same loop), so nothing arrives between the check and the keys.

A pane that does not settle within BUSY_TIMEOUT (from the call, the wait for the lock included)
refuses with PaneBusyError ("busy changing, try again"), nothing typed.

Not through the guard, the only other writers to a pane: `run`'s raw key pump and `attached` keys
(`panewatch attach`: the user's own terminal shows the whole pane, dialogs included, so they type as
under `run`; PaneEndpoint.keys still refuses them into an exited pane), and the screen's replies to
terminal queries (DA1/DSR) in a headless pane.

`GuardedPane.classify_now()` may return the combined `PaneState` (preferred: a prompt reported
by a hook before it is drawn is already "blocked", and "exited" is known) or the screen's
`Verdict` (its row helps find the question). Either must be computed now, not cached.

Bracketed paste: if the pane offers `bracketed_paste() -> bool` and it says the application
enabled mode 2004, multi-line text is sent as one paste (ESC[200~ … ESC[201~) so its newlines do
not submit it line by line; an end marker inside the text is removed so the text cannot end the
paste early. Without it, text is sent as typed. Control characters other than tab and newline
are always removed: `send` types text, raw keys go through `keys`, options through `answer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from panewatch.core.classify import Verdict
from panewatch.core.manifest import DEFAULT_SUBMIT_GAP
from panewatch.core.panekind import NOT_AGENT
from panewatch.core.prompt import Option, Prompt, parse_prompt, read_selection
from panewatch.core.screen import Snapshot
from panewatch.errors import (
    AgentExitedError,
    NotAnAgentError,
    NotBlockedError,
    NotSubmittedError,
    PaneBlockedError,
    PaneBusyError,
    PaneNotResyncedError,
    PromptChangedError,
    SelectionUnseenError,
    UnknownOptionError,
)

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
POLL_INTERVAL = 0.02
# The three numbers below come from the golden corpus (real Claude Code, Codex and Gemini CLI captures;
# tests/test_guard_race.py checks them against it, so a new capture that breaks them fails there).
#
# Seconds after the pane's last input before the next write may go in. The probe of issue 10 found a
# 50 ms gap always safe for its fake agent (0 of 20 answered the dialog, 19 of 20 without a gap), but
# real agents are slower: in the corpus the first output after a key into a quiet pane came within
# 30 ms (median) for Claude and Gemini, 185 ms for Codex, and within 470 ms for every key of every
# agent. Cost: writes queued back to back go in at most two a second per pane; a write after a pause
# waits for nothing.
REACTION = 0.5
# Seconds without output that count as settled, i.e. a gap between frames rather than a pause inside
# one: the pty reads of one frame come under 5 ms apart, while Codex redraws at 30 frames a second
# (33 ms apart; its worst stretch without a 40 ms gap lasts 5 s, so 40 ms would leave a working Codex
# pane untypable), Claude's spinner at ~9 Hz, Gemini's around 20 Hz. With 20 ms no capture goes longer
# than 0.5 s without a gap.
QUIET = 0.02
# Seconds from the call (the wait for the pane's turn included) before PaneBusyError: six times that
# longest stretch, room for a few writes queued a REACTION apart, and below the callers' own timeouts
# (the daemon's RPC to a `run` pane gives up after 10 s, `panewatch send` after 30 s), so a caller
# always learns whether it was typed: nothing waits in a queue to be typed after its caller gave up.
BUSY_TIMEOUT = 3.0
# Seconds after the Enter of a `send` for the agent to show that its turn started (every verified agent shows
# working within a few hundred ms of a submit, before its model answers), and after an answer's key for the
# dialog to leave. Below the callers' own timeouts, as BUSY_TIMEOUT.
SUBMIT_TIMEOUT = 5.0
ANSWER_TIMEOUT = 5.0
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class HasState(Protocol):
    @property
    def state(self) -> str: ...


class GuardedPane(Protocol):
    def classify_now(self) -> HasState: ...  # a PaneState or a Verdict, computed now
    def snapshot(self) -> Snapshot: ...
    def write(self, data: bytes) -> None: ...
    def clock(self) -> float: ...  # seconds, at the rate of its loop's clock (the guard sleeps on that)
    @property
    def last_output(self) -> float: ...  # when its latest output was fed to its screen
    @property
    def last_input(self) -> float: ...  # when bytes were last written to it as input, by anyone


@dataclass
class _Turn:
    """One pane's writing turn: the lock every guard of that pane queues on (bound to one loop)."""

    loop: asyncio.AbstractEventLoop
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


_turns: weakref.WeakKeyDictionary[GuardedPane, _Turn] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class AnswerResult:
    option: Option  # what was typed
    cleared: bool  # the answered prompt left the screen within the timeout
    state: str  # the pane's state when the wait ended
    elapsed: float  # seconds from typing the key to `cleared` (or to the timeout)
    prompt_after: Prompt | None = None  # the prompt on screen at the end, if the pane is blocked
    applied: bool = False  # the prompt left AND the agent moved on (working, the next dialog, idle)
    outcome: str = ""  # "applied: the agent is working" / "not applied: the prompt is still on screen: …"


@dataclass(frozen=True)
class SendResult:
    submitted: bool | None  # the turn started (None: no Enter was asked for, or it cannot be told)
    state: str  # the pane's state when the wait ended
    elapsed: float  # seconds from the Enter to the sign that the turn started
    how: str = ""  # "the agent is working", "the input row cleared", "already working: cannot tell"


class InputGuard:
    """Guarded input to one pane. Any number of guards may be made for a pane: they share its turn."""

    def __init__(self, pane: GuardedPane, *, pane_id: str = "") -> None:
        self.pane = pane
        self.pane_id = pane_id

    def prompt(self) -> Prompt:
        """The prompt on screen now (what a UI shows the user before asking for an answer)."""
        return self._prompt(self.pane.classify_now())

    def _prompt(self, checked: HasState, *, selection: bool = True) -> Prompt:
        # The screen verdict's row helps find the question; a pane returning its combined state may
        # still expose the verdict it was computed from.
        verdict = checked if isinstance(checked, Verdict) else getattr(self.pane, "verdict", None)
        prompt = parse_prompt(self.pane.snapshot(), verdict if isinstance(verdict, Verdict) else None)
        row_styles = getattr(self.pane, "row_styles", None)  # the selection of a row drawn in colours
        if selection and not prompt.selection_seen and prompt.choice_row is not None and row_styles is not None:
            prompt = read_selection(prompt, row_styles(prompt.choice_row))  # same moment as the snapshot
        return prompt

    async def send(self, text: str, enter: bool = True) -> SendResult:
        """Type `text` into the pane and submit it with Enter, unless it waits on a prompt, holds no agent, or
        its agent is gone; then wait for the agent's turn to start (NotSubmittedError if it does not)."""
        data = _CONTROL.sub("", text).encode("utf-8")
        async with self._turn():
            before = self._refuse_unless_free()
            if data:
                self._type(data)
            if not enter:
                return SendResult(None, before.state, 0.0)
            if not data:  # Enter alone (text typed before, a pasted newline to submit): nothing to tell it by
                self.pane.write(b"\r")
                return SendResult(None, before.state, 0.0, "Enter pressed")
            if data:
                # The Enter as a key of its own: after the agent's paste window, once the echo has settled.
                await self._settle(self.pane.clock() + self._submit_gap(), self.pane.clock() + BUSY_TIMEOUT)
                before = self._refuse_unless_free()  # what is on screen now (no await from here to the Enter)
            start = self.pane.clock()
            self.pane.write(b"\r")
        if before.state in ("working", "blocked"):
            return SendResult(None, before.state, 0.0, f"already {before.state}: whether it took the text cannot be "
                                                       "told from here")
        # The turn started: working (or a dialog at once). Not "the text left the input row": a composer that
        # takes the Enter as a pasted newline moves its cursor (and may scroll the text up) just the same.
        while True:
            await asyncio.sleep(POLL_INTERVAL)  # lets the pane's read loop feed the agent's redraw
            checked = self.pane.classify_now()
            elapsed = self.pane.clock() - start
            if checked.state in ("working", "blocked"):
                return SendResult(True, checked.state, elapsed, f"the agent is {checked.state}")
            if checked.state == "exited":
                raise AgentExitedError(self.pane_id)
            if elapsed >= SUBMIT_TIMEOUT:
                raise NotSubmittedError(self.pane_id, SUBMIT_TIMEOUT, _cursor_row(self.pane.snapshot()))

    def _type(self, data: bytes) -> None:
        """The text as typed, or as one bracketed paste where the agent enabled it (so its newlines are text)."""
        if b"\n" in data and self._bracketed_paste():
            data = PASTE_START + data.replace(PASTE_END, b"") + PASTE_END
        self.pane.write(data)

    def _submit_gap(self) -> float:
        probe = getattr(self.pane, "submit_gap", None)
        try:
            return float(probe()) if callable(probe) else DEFAULT_SUBMIT_GAP
        except Exception:
            return DEFAULT_SUBMIT_GAP

    async def keys(self, data: bytes) -> None:
        """Raw keys from a terminal view, as typed, unless the pane waits on a prompt or its agent is gone."""
        async with self._turn():
            self._refuse_unless_free()
            self.pane.write(data)

    async def answer(self, option: int | str, fingerprint: str, timeout: float = ANSWER_TIMEOUT) -> AnswerResult:
        """Choose `option` (number, kind, key or label; see Prompt.option) on the prompt the user saw."""
        async with self._turn():
            checked = self.pane.classify_now()
            self._refuse_if_unreachable(checked)
            self._refuse_unless_agent()
            if checked.state != "blocked":
                raise NotBlockedError(checked.state)
            prompt = self._prompt(checked)
            if prompt.fingerprint != fingerprint:
                raise PromptChangedError(fingerprint, prompt)
            chosen = prompt.option(option)
            if chosen is None:
                raise UnknownOptionError(option, prompt)
            if prompt.needs_selection(chosen):
                raise SelectionUnseenError(prompt)
            start = self.pane.clock()
            self.pane.write(chosen.key.encode("utf-8"))
        # Out of the turn: the next write waits for what this key causes anyway, and need not wait for
        # us to see it.
        while True:
            await asyncio.sleep(POLL_INTERVAL)  # lets the pane's read loop feed the agent's redraw
            checked = self.pane.classify_now()
            # only its fingerprint matters here: no need to read the selection every poll
            after = self._prompt(checked, selection=False) if checked.state == "blocked" else None
            # Cleared: not blocked any more, or blocked on a different (the next) prompt.
            cleared = after is None or after.fingerprint != fingerprint
            elapsed = self.pane.clock() - start
            if cleared or elapsed >= timeout:
                applied, outcome = _outcome(cleared, checked.state, prompt, after)
                return AnswerResult(chosen, cleared, checked.state, elapsed, after, applied, outcome)

    def _refuse_if_unreachable(self, checked: HasState) -> None:
        if checked.state == "unreachable":  # the screen we would judge is not known to be the pane's now
            raise PaneNotResyncedError(self.pane_id, str(getattr(checked, "detail", "") or "its host is unreachable"))

    def _refuse_unless_free(self) -> HasState:
        checked = self.pane.classify_now()
        self._refuse_if_unreachable(checked)
        if checked.state == "exited":
            raise AgentExitedError(self.pane_id)
        self._refuse_unless_agent()
        if checked.state == "blocked":
            raise PaneBlockedError(self._prompt(checked), self.pane_id)
        return checked

    def _refuse_unless_agent(self) -> None:
        """A pane whose foreground is known not to be an agent (core/panekind.py) takes no text of ours."""
        kind = getattr(self.pane, "kind", None)
        if kind is not None and getattr(kind, "kind", None) in NOT_AGENT:
            raise NotAnAgentError(self.pane_id, str(getattr(kind, "what", "")), getattr(kind, "shows", None))

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """The pane's turn to be written, once what the previous input caused has settled (see the
        module docstring); PaneBusyError if that takes longer than BUSY_TIMEOUT."""
        pane = self.pane
        deadline = pane.clock() + BUSY_TIMEOUT
        async with _turn_of(pane).lock:
            await self._settle(pane.last_input + REACTION, deadline)
            yield

    async def _settle(self, after: float, deadline: float) -> None:
        """Wait until `after` has passed, the pane's output has been quiet for QUIET and no frame is half drawn,
        then take the pane's own step before a check (its `before_write`: a tmux pane's round trip) and let what
        that brought in settle too; PaneBusyError if that cannot be before `deadline`."""
        pane = self.pane
        current = False  # before_write done in this wait
        while True:
            now = pane.clock()
            ready = max(after, pane.last_output + QUIET)
            if now >= ready:
                if not self._mid_frame():
                    if current:
                        return
                    await self._before_write()
                    current = True
                    continue  # what the round trip brought in settles like any output
                ready = now + POLL_INTERVAL  # its frame is half drawn: judged (and typed into) once whole
            if ready > deadline:  # output only ever pushes `ready` later: refuse now, not at the deadline
                raise PaneBusyError(self.pane_id, BUSY_TIMEOUT)
            await asyncio.sleep(ready - now)

    async def _before_write(self) -> None:
        """The pane's own step before its check (optional): a tmux pane makes its screen current with a round
        trip to tmux, and refuses (a GuardError) when it cannot."""
        hook = getattr(self.pane, "before_write", None)
        if callable(hook):
            await hook()

    def _mid_frame(self) -> bool:
        """The pane's program is inside a synchronized update (its frame half drawn, quiet or not: a pause
        inside one is not a gap between frames). Optional; the detector bounds how long it can last."""
        probe = getattr(self.pane, "mid_frame", None)
        try:
            return bool(probe()) if callable(probe) else False
        except Exception:
            return False

    def _bracketed_paste(self) -> bool:
        probe = getattr(self.pane, "bracketed_paste", None)
        try:
            return bool(probe()) if callable(probe) else False
        except Exception:  # an optional capability; typing plainly is the safe fallback
            return False


def _cursor_row(snapshot: Snapshot) -> str:
    """The row the cursor is on (an agent's input box, where it shows its cursor), for a message."""
    row = snapshot.cursor[1]
    return snapshot.rows[row].strip()[-80:] if 0 <= row < len(snapshot.rows) else ""


def _outcome(cleared: bool, state: str, prompt: Prompt, after: Prompt | None) -> tuple[bool, str]:
    """Whether an answer took effect, and what the screen says of it."""
    if not cleared:
        return False, f"not applied: the prompt is still on screen: {prompt.question or '(its question)'}"
    if state == "blocked" and after is not None:
        return True, f"applied: the next dialog is up: {after.question or '(its question)'}"
    if state in ("working", "idle"):
        return True, f"applied: the agent is {state}"
    return False, f"not applied: the dialog left but the pane is {state}"


def _turn_of(pane: GuardedPane) -> _Turn:
    loop = asyncio.get_running_loop()
    turn = _turns.get(pane)
    if turn is None or turn.loop is not loop:  # an asyncio lock serves one loop (tests run several)
        turn = _turns[pane] = _Turn(loop)
    return turn
