"""Card ids that outlive the daemon: the same pane keeps its short id (what `panewatch send 5` names) across
daemon restarts, and its waits stay one row in `stats`.

A pane's *key* says what makes it the same pane: a tmux pane is its server (socket, pid, start time: a server
restarted on the socket is another one) and its `%ID` (stable for the server's life); a `run` is its process
(pid and start time: it re-registers with a restarted daemon); a remote pane is `HOST:%ID`. Keys map to ids in
`pane-ids.json` in the state directory (0600, written atomically on change); an id is never given to two keys
at once. Entries not seen for KEEP seconds are forgotten (a pane of a server long gone), their ids free again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from panewatch.runtime import paths

log = logging.getLogger("panewatch.board")

KEEP = 7 * 86400.0  # seconds an unseen key keeps its id
FILE = "pane-ids.json"


class PaneIds:
    def __init__(self, path: Path | None = None, clock: Callable[[], float] = time.time) -> None:
        self.path = path or paths.state_dir() / FILE
        self._clock = clock
        self._ids: dict[str, tuple[str, float]] = {}  # key -> (id, last seen)
        self._saved = 0.0
        self._load()

    def _load(self) -> None:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:  # a broken file costs the ids, never the daemon
            log.warning("%s: unreadable (%s); pane ids start afresh", self.path, exc)
            return
        now = self._clock()
        if isinstance(doc, dict):
            for key, value in doc.items():
                if (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
                        and isinstance(value[1], int | float) and now - value[1] < KEEP):
                    self._ids[str(key)] = (value[0], float(value[1]))

    def id_for(self, key: str, taken: Callable[[str], bool]) -> str:
        """The id `key` had (unless another pane holds it now), else the next free number."""
        now = self._clock()
        known = self._ids.get(key)
        if known is not None and not taken(known[0]):
            pane_id = known[0]
        else:
            used = {v[0] for k, v in self._ids.items() if k != key}
            number = 1
            while str(number) in used or taken(str(number)):
                number += 1
            pane_id = str(number)
        changed = known is None or known[0] != pane_id
        self._ids[key] = (pane_id, now)
        if changed or now - self._saved > 3600:  # a new id at once; last-seen times now and then (and at close)
            self.save()
        return pane_id

    def save(self) -> None:
        self._saved = self._clock()
        doc = {key: [pane_id, round(seen, 3)] for key, (pane_id, seen) in self._ids.items()}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
            os.replace(tmp, self.path)
        except OSError as exc:  # ids then last for this daemon's life only
            log.warning("%s: cannot save pane ids (%s)", self.path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()


def card_key(*parts: object) -> str:
    """A pane's key, short and opaque (it names a server's socket path and pids: not for the board to show)."""
    return hashlib.sha256("\0".join(str(p) for p in parts).encode("utf-8", "surrogateescape")).hexdigest()[:20]
