"""One LivePane as the board sees it: its card, input through the guard, output for viewers.

The same class serves a headless pane inside the daemon and a `run` pane in its own process
(where `BoardLink` forwards calls over the socket), so both behave alike: the guard runs where
the pane's screen is, next to the bytes it judges.

Input paths, all here, all through the pane's one InputGuard (its policy, its turn):
  * `send(text)`   InputGuard.send, refused while blocked (also when only a hook says blocked);
  * `answer(option, fingerprint)`   InputGuard.answer, bound to the prompt the user saw;
  * `keys(bytes)`  a live terminal view's keystrokes: InputGuard.keys, refused while blocked
                   (answer with the buttons); `attached=True` (the user's own terminal shows the
                   whole pane, as under `run`) bypasses the guard like `run`'s key pump, but never
                   into an exited pane.
Any of them may be refused with kind "pane_busy" while the pane is still changing after its last input.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from panewatch.board.model import Card, bad_request, prompt_json, wire_error
from panewatch.board.rpc import RemoteError
from panewatch.core.classify import explain
from panewatch.core.identity import unverified_note
from panewatch.core.machine import StateChange
from panewatch.core.manifest import Manifest
from panewatch.core.prompt import Prompt, parse_prompt
from panewatch.core.states import STATES
from panewatch.errors import GuardError
from panewatch.golden.wrong import WrongState, write_case
from panewatch.runtime import paths
from panewatch.runtime.guard import InputGuard
from panewatch.runtime.live import LivePane
from panewatch.runtime.tmux_watch import TmuxPane

log = logging.getLogger("panewatch.board")

REFRESH_DELAY = 0.15  # after output: re-read the prompt (while blocked), agent and size at most this often
SETTLE_HORIZON = 0.5  # after output, follow the detector's checks this long (it settles within ~0.25 s)

CardListener = Callable[[Card], None]
OutputListener = Callable[[bytes], None]


class PaneEndpoint:
    def __init__(self, pane: LivePane | TmuxPane, *, name: str = "", cwd: str | None = None, origin: str = "headless",
                 command: str | None = None, on_card: CardListener | None = None) -> None:
        self.pane = pane
        self.guard = InputGuard(pane, pane_id=pane.pane_id)
        self.name = name or pane.pane_id
        self.cwd = cwd or os.getcwd()
        self.origin = origin
        self.command = command if command is not None else " ".join(pane.argv)
        self.on_card = on_card
        self.since = time.time()
        self.prompt: Prompt | None = None
        self.last_answer: dict[str, Any] | None = None  # the outcome of the last answer (the card shows it)
        self._card: Card | None = None
        self._viewers: dict[int, OutputListener] = {}
        self._ids = itertools.count(1)
        self._refresh: asyncio.TimerHandle | None = None
        self._output_at = 0.0
        previous = pane.on_output

        def tap(data: bytes) -> None:
            if previous is not None:
                previous(data)  # the user's terminal first
            self._on_output(data)

        pane.on_output = tap
        pane.on_foreground = self._publish  # the agent's version learnt: the card says if it is unverified
        self._unsubscribe = pane.subscribe(self._on_change)

    # -- the card ------------------------------------------------------------------------------

    def card(self) -> Card:
        pane, state = self.pane, self.pane.state
        blocked = state.state == "blocked"
        return {
            "id": pane.pane_id, "name": self.name, "agent": pane.agent or "", "cwd": self.cwd,
            "command": self.command, "origin": self.origin, "pid": pane.pid, "state": state.state,
            "source": state.source, "rule": state.rule, "detail": (state.detail or "")[:300],
            "since": round(self.since, 3), "prompt": prompt_json(self.prompt) if blocked else None,
            "exit_code": pane.exit_code, "cols": pane.screen.cols, "rows": pane.screen.rows,
            "interactive": not blocked and not pane.exited,
            # what the pane is (core/panekind.py): only "agent" and "unknown" cards are counted, notified,
            # answered and put in stats; a "view" names the card it shows in `view_of` (the board links it)
            "kind": pane.kind.kind, "what": pane.kind.what, "view_of": None,
            "answer": self.last_answer,
            **self._version(),
        }

    def _version(self) -> dict[str, str | None]:
        """`agent_version` (None: not known) and `unverified`: 'not verified for 2.2.0 · tested 2.1.332'."""
        fg, agent = self.pane.foreground, self.pane.agent
        version = fg.version if fg is not None and fg.agent_id == agent else None
        manifest = next((m for m in self.pane.watcher.current() if m.id == agent), None)
        return {"agent_version": version,
                "unverified": unverified_note(manifest, version) if manifest is not None else None}

    def _publish(self) -> None:
        card = self.card()
        if card == self._card:
            return
        self._card = card
        if self.on_card is not None:
            try:
                self.on_card(card)
            except Exception:
                log.exception("card listener failed")

    def _read_prompt(self) -> None:
        self.prompt = parse_prompt(self.pane.snapshot(), self.pane.verdict) if self.pane.state.state == "blocked" \
            else None

    def _on_change(self, change: StateChange) -> None:
        self.since = change.wall if change.wall is not None else time.time()
        self._read_prompt()
        self._publish()

    def _on_output(self, data: bytes) -> None:
        for viewer in list(self._viewers.values()):
            try:
                viewer(data)
            except Exception:
                log.exception("viewer failed")
        with contextlib.suppress(RuntimeError):  # no running loop: nothing to schedule on
            loop = asyncio.get_running_loop()
            self._output_at = loop.time()
            if self._refresh is None:
                self._refresh = loop.call_later(REFRESH_DELAY, self._on_refresh)

    def _on_refresh(self) -> None:
        self._refresh = None
        # The screen feed follows the output callback: by now it holds the bytes that triggered us.
        self._read_prompt()
        self._publish()
        # A classification still pending (output not settled yet) may change the rule but not the
        # state, which emits nothing: look again just after it, so the card names the deciding rule.
        loop = asyncio.get_running_loop()
        now = loop.time()
        wait = self.pane.detector.next_due() - now
        if now - self._output_at < SETTLE_HORIZON and wait < SETTLE_HORIZON and not self.pane.exited:
            self._refresh = loop.call_later(max(wait, 0.0) + 0.02, self._on_refresh)

    def close(self) -> None:
        if self._refresh is not None:
            self._refresh.cancel()
            self._refresh = None
        self._unsubscribe()
        self._viewers.clear()

    # -- input ---------------------------------------------------------------------------------

    def _refuse_if_exited(self) -> None:
        if self.pane.exited:
            raise RemoteError("exited", f"pane {self.pane.pane_id} has exited")

    async def send(self, text: str, enter: bool = True) -> dict[str, Any]:
        self._refuse_if_exited()
        try:
            result = await self.guard.send(text, enter)
        except GuardError as exc:
            raise wire_error(exc) from None
        return {"submitted": result.submitted, "state": result.state, "elapsed": round(result.elapsed, 3),
                "how": result.how}

    async def answer(self, option: str, fingerprint: str) -> dict[str, Any]:
        self._refuse_if_exited()
        try:
            result = await self.guard.answer(option, fingerprint)
        except GuardError as exc:
            raise wire_error(exc) from None
        finally:
            self._read_prompt()
            self._publish()
        self.last_answer = {"option": result.option.number, "label": result.option.label, "applied": result.applied,
                            "outcome": result.outcome, "at": round(time.time(), 3),
                            "elapsed": round(result.elapsed, 3)}
        self._publish()  # the card shows the outcome
        return {"option": {"number": result.option.number, "label": result.option.label},
                "cleared": result.cleared, "state": result.state, "prompt_after": prompt_json(result.prompt_after),
                "applied": result.applied, "outcome": result.outcome, "elapsed": round(result.elapsed, 3)}

    async def keys(self, data: bytes, *, attached: bool = False) -> None:
        self._refuse_if_exited()
        if attached:
            self.pane.write(data)
            return
        try:
            await self.guard.keys(data)
        except GuardError as exc:
            raise wire_error(exc) from None

    def resize(self, cols: int, rows: int) -> None:
        self.pane.resize(cols, rows)  # validated and clamped by the operation (board/ops.py)
        self._publish()

    # -- "this state is wrong" -----------------------------------------------------------------

    async def report_wrong(self, expected: str | None) -> dict[str, Any]:
        """Save this pane's history as a golden case in the user's corpus (golden/wrong.py); where it is.
        Taken on the loop (one consistent moment), masked and written in a thread (a few hundred KB: the
        masking holds the GIL only in short steps, core/masking.py, so the loop goes on meanwhile)."""
        agent_states = [s for s in STATES if s != "unreachable"]  # that one is our link's, never the agent's
        if expected is not None and expected not in agent_states:
            raise bad_request(f"expected must be one of {', '.join(agent_states)}")
        pane = self.pane
        history = pane.machine.history
        if history is None:
            raise RemoteError("no_history", f"pane {pane.pane_id} keeps no history")
        snapshot = pane.snapshot()
        manifest = pane.watcher.get(pane.agent) if pane.agent else None
        trace = explain(snapshot, manifest, pane.detector.quarantine)[1] if manifest is not None else None
        report = WrongState(history.recent(), self.name, pane.agent, pane.state, pane.verdict, snapshot, trace,
                            expected, time.time(), pane.clock(), _manifest_file(manifest), pane.screen.soft_wraps())
        try:
            folder = await asyncio.to_thread(write_case, paths.user_corpus_dir(), report)
        except OSError as exc:
            raise RemoteError("write_failed", f"cannot save the case: {exc.strerror or exc}") from None
        log.info("pane %s: wrong-state report saved in %s", pane.pane_id, folder)
        return {"path": str(folder), "agent": pane.agent, "state": pane.state.state, "expected": expected,
                "bytes": report.recent.output_bytes, "changes": len(report.recent.changes),
                "manifest": report.manifest_file}

    # -- output for viewers ----------------------------------------------------------------------

    def watch(self, viewer: OutputListener) -> tuple[bytes, Callable[[], None]]:
        """The screen as it is now (a repaint), and a subscription to every byte after it.

        Atomic on the loop: the pane feeds its screen right after calling our output tap, so no
        chunk is missing from, or doubled between, the repaint and the stream.
        """
        key = next(self._ids)
        self._viewers[key] = viewer
        return self.repaint(), lambda: self._viewers.pop(key, None) and None

    def repaint(self) -> bytes:
        return self.pane.screen.vt_dump()

    @property
    def watched(self) -> bool:
        return bool(self._viewers)


def _manifest_file(manifest: Manifest | None) -> str | None:
    """The file `panewatch agents check` takes for `manifest` (a bundled one's inside the package)."""
    if manifest is None:
        return None
    if manifest.origin == "bundled":
        return str(resources.files("panewatch") / "agents" / Path(manifest.source).name)
    return manifest.source
