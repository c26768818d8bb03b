"""The daemon's minutes-lost-waiting: every pane's state changes, from the hub's cards, to the waits
database (runtime/waitstore.py), and the figures for `stats` (the board's header and chart).

Why cards: they are the one stream in which the daemon sees every pane's state changes, its own
headless panes' and the `run` panes' registered through board/link.py alike. A card changes with
each StateChange of its pane (board/endpoint.py) and carries the change's time (`since`, its
`wall`), so a card whose state differs from the last one seen is that StateChange, however the
card travelled. A card removed from the board ends the pane's open wait, unanswered.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from panewatch.board.model import Card, stands_for_agent
from panewatch.core.waits import summarize
from panewatch.runtime.waitstore import Recording, WaitRecorder, local_day

DAY = 86400.0
FRESH = 2.0  # seconds a summary is served again to the same question (every board tab asks after changes)


class BoardWaits:
    def __init__(self, recorder: WaitRecorder | None = None) -> None:
        self.recorder = recorder or WaitRecorder()
        self.recorder.start()  # the lock and the file, at once: `stats` says if recording cannot work
        self._keys: dict[str, str] = {}  # board id → the key of this pane's life
        self._states: dict[str, str] = {}
        self._cached: tuple[tuple[int, int, Recording], float, dict[str, Any]] | None = None

    def on_card(self, pane_id: str, card: Card | None) -> None:
        """A Hub listener: called on every card change, and with None when a card leaves. A card that stands for
        no agent (a view, a shell: core/panekind.py) waits for nobody: its open wait, if any, ends."""
        if card is None or not stands_for_agent(card):
            key = self._keys.pop(pane_id, None)
            self._states.pop(pane_id, None)
            if key is not None:
                self.recorder.gone(key, time.time())
            return
        state = str(card.get("state"))
        old = self._states.get(pane_id)
        if state == old:
            return
        self._states[pane_id] = state
        # the pane's own key (board/ids.py: the same pane across daemon restarts), else this life's
        key = self._keys.setdefault(pane_id, str(card.get("key") or uuid.uuid4().hex[:16]))
        since = card.get("since")
        t = float(since) if isinstance(since, int | float) and not isinstance(since, bool) else time.time()
        self.recorder.change(key, t, state, old=old, pane_id=pane_id, name=str(card.get("name") or pane_id),
                             agent=str(card.get("agent") or "") or None)

    async def summary(self, since: float) -> dict[str, Any]:
        """The figures since `since` until now, and whether the waits are being recorded (`recording`;
        `recording_off`: since when and why, else None). The same question (to the minute) with no
        wait written since is answered from the last summary for FRESH seconds: many tabs, one query.
        The file is read in a thread: another process holding its lock never stops the loop."""
        now = time.time()
        status = self.recorder.recording()
        key = (int(since // 60), self.recorder.written, status)
        if self._cached is not None and self._cached[0] == key and now - self._cached[1] < FRESH:
            return self._cached[2]
        waits = await asyncio.to_thread(self.recorder.waits, since, now)
        result = {**summarize(waits, local_day, since=since, until=now, ongoing=self.recorder.tracker.ongoing(now)),
                  "recording": status.on, "recording_off": None if status.on else status.as_json()}
        self._cached = (key, now, result)
        return result

    def close(self) -> None:
        self.recorder.close()
