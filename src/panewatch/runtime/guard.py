"""The ONE place that writes to panes on someone's behalf: refuses what would land in a dialog.

    send(text)                   re-classifies NOW; refuses with PaneBlockedError (showing the
                                 prompt) when the pane is blocked, AgentExitedError when the agent
                                 is gone and a shell would run the text as a command.
    answer(option, fingerprint)  only when blocked AND the prompt on screen has the fingerprint the
                                 user saw (PromptChangedError otherwise); types that option's key,
                                 then polls until the prompt clears or `timeout` passes.

`GuardedPane.classify_now()` may return the combined `PaneState` (preferred: a prompt reported
by a hook before it is drawn is already "blocked", and "exited" is known) or the screen's
`Verdict` (its row helps find the question). Either must be computed now, not cached.

Bracketed paste: if the pane offers `bracketed_paste() -> bool` and it says the application
enabled mode 2004, multi-line text is sent as one paste (ESC[200~ … ESC[201~) so its newlines do
not submit it line by line; an end marker inside the text is removed so the text cannot end the
paste early. Without it, text is sent as typed. Control characters other than tab and newline
are always removed: `send` types text, keys go through `answer`.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Protocol

from panewatch.core.classify import Verdict
from panewatch.core.prompt import Option, Prompt, parse_prompt
from panewatch.core.screen import Snapshot
from panewatch.errors import (
    AgentExitedError,
    NotBlockedError,
    PaneBlockedError,
    PromptChangedError,
    UnknownOptionError,
)

PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
POLL_INTERVAL = 0.02
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class HasState(Protocol):
    @property
    def state(self) -> str: ...


class GuardedPane(Protocol):
    def classify_now(self) -> HasState: ...  # a PaneState or a Verdict, computed now
    def snapshot(self) -> Snapshot: ...
    def write(self, data: bytes) -> None: ...


@dataclass(frozen=True)
class AnswerResult:
    option: Option  # what was typed
    cleared: bool  # the answered prompt left the screen within the timeout
    state: str  # the pane's state when the wait ended
    elapsed: float  # seconds from typing the key to `cleared` (or to the timeout)
    prompt_after: Prompt | None = None  # the prompt on screen at the end, if the pane is blocked


class InputGuard:
    def __init__(self, pane: GuardedPane, *, pane_id: str = "") -> None:
        self.pane = pane
        self.pane_id = pane_id

    def prompt(self) -> Prompt:
        """The prompt on screen now (what a UI shows the user before asking for an answer)."""
        return self._prompt(self.pane.classify_now())

    def _prompt(self, checked: HasState) -> Prompt:
        # The screen verdict's row helps find the question; a pane returning its combined state may
        # still expose the verdict it was computed from.
        verdict = checked if isinstance(checked, Verdict) else getattr(self.pane, "verdict", None)
        return parse_prompt(self.pane.snapshot(), verdict if isinstance(verdict, Verdict) else None)

    def send(self, text: str, enter: bool = True) -> None:
        """Type `text` (and Enter) into the pane, unless it waits on a prompt or its agent is gone."""
        checked = self.pane.classify_now()
        if checked.state == "blocked":
            raise PaneBlockedError(self._prompt(checked), self.pane_id)
        if checked.state == "exited":
            raise AgentExitedError(self.pane_id)
        data = _CONTROL.sub("", text).encode("utf-8")
        if b"\n" in data and self._bracketed_paste():
            data = PASTE_START + data.replace(PASTE_END, b"") + PASTE_END
        if data:
            self.pane.write(data)
        if enter:
            self.pane.write(b"\r")

    async def answer(self, option: int | str, fingerprint: str, timeout: float = 3.0) -> AnswerResult:
        """Choose `option` (number, kind, key or label; see Prompt.option) on the prompt the user saw."""
        checked = self.pane.classify_now()
        if checked.state != "blocked":
            raise NotBlockedError(checked.state)
        prompt = self._prompt(checked)
        if prompt.fingerprint != fingerprint:
            raise PromptChangedError(fingerprint, prompt)
        chosen = prompt.option(option)
        if chosen is None:
            raise UnknownOptionError(option, prompt)
        loop = asyncio.get_running_loop()
        start = loop.time()
        self.pane.write(chosen.key.encode("utf-8"))
        while True:
            await asyncio.sleep(POLL_INTERVAL)  # lets the pane's read loop feed the agent's redraw
            checked = self.pane.classify_now()
            after = self._prompt(checked) if checked.state == "blocked" else None
            # Cleared: not blocked any more, or blocked on a different (the next) prompt.
            cleared = after is None or after.fingerprint != fingerprint
            elapsed = loop.time() - start
            if cleared or elapsed >= timeout:
                return AnswerResult(chosen, cleared, checked.state, elapsed, after)

    def _bracketed_paste(self) -> bool:
        probe = getattr(self.pane, "bracketed_paste", None)
        try:
            return bool(probe()) if callable(probe) else False
        except Exception:  # an optional capability; typing plainly is the safe fallback
            return False
