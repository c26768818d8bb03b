"""The daemon's notifications: ONE path for every pane on the board — headless, `run`, local tmux, remote,
hook-only. Card changes in (the Hub's stream, the one in which the daemon sees every pane's state changes,
however the card travelled), runtime/notify.py's Notifier out (its backends, the cooldown per pane and state).

    a card that stands for no agent (a view, another program: core/panekind.py) never notifies;
    a pane's first state is no change (a dialog found on screen when the daemon starts is not news);
    a pane the user is looking at does not notify (a focused tmux client shows it: board/views.py `seen`);
    the terminal backend rings the terminal that shows the pane: tmux's clients get a message (an escape
    written into a tmux pane never reaches the user's terminal), a `run` outside tmux rings its own terminal
    (its link), a headless or remote pane rings every watched tmux server's clients.

A `run` connected to the daemon leaves its notifications to it (cli/run.py), so one dialog notifies once.
`reload(settings)` takes a new `[notify]` (config.toml changed, or `serve --reload`); the cooldown's memory
stays. `availability()` says, once at start and on the board, which backends can deliver.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import Counter
from collections.abc import Callable

from panewatch.board.model import Card, format_duration, in_state, stands_for_agent
from panewatch.board.panes import Hub, RemotePane
from panewatch.board.views import Views
from panewatch.runtime.notify import Notifier, clean, open_board_at
from panewatch.runtime.settings import Settings

log = logging.getLogger("panewatch.board")


class Notices:
    def __init__(self, hub: Hub, settings: Settings, views: Views, *,
                 clock: Callable[[], float] | None = None, open_board: Callable[[str], None] = open_board_at) -> None:
        self.hub = hub
        self.views = views
        self._clock = clock or asyncio.get_running_loop().time
        self._open_board = open_board
        self.notifier = Notifier(settings, self._clock, open_board=open_board)
        self._states: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent: Counter[str] = Counter()  # by state
        self.seen_skipped = 0  # notifications not sent: the user was looking at the pane

    def start(self) -> None:
        self.hub.listeners.add(self.on_card)

    def reload(self, settings: Settings) -> None:
        """A new [notify]: the cooldown's memory carries over (a reload must not repeat a notification)."""
        old, self.notifier = self.notifier, Notifier(settings, self._clock, open_board=self._open_board)
        self.notifier._last = old._last
        old.close()

    def availability(self) -> list[tuple[str, bool, str]]:
        terminal = "a message to your tmux clients; a `run` outside tmux rings its own terminal"
        return self.notifier.availability(terminal=terminal)

    def on_card(self, pane_id: str, card: Card | None) -> None:
        if card is None:
            self._states.pop(pane_id, None)
            return
        state, old = str(card.get("state")), self._states.get(pane_id)
        self._states[pane_id] = state
        if old is None and _registered_just_now(card):
            old = "idle"  # a `run` that got blocked while registering: it left this notification to us
        if old is None or old == state or not stands_for_agent(card) or not self.notifier.wants(old, state):
            return
        task = asyncio.get_running_loop().create_task(self._fire(pane_id, card, old, state))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fire(self, pane_id: str, card: Card, old: str, state: str) -> None:
        try:
            if state == "blocked" and not (card.get("prompt") or {}).get("question"):
                card = await self._with_prompt(pane_id, card)
            clients = await self.views.clients()
            if state == "blocked" and self.views.seen(card, clients):
                self.seen_skipped += 1
                log.info("pane %s blocked: not notified, its pane is in front of you", pane_id)
                return
            handle = self.hub.panes.get(pane_id)

            def ring(title: str, body: str) -> bool:
                if isinstance(handle, RemotePane) and self.views.tmux_pane_of(card) is None:
                    return handle.ring(title, body)  # its own terminal, through its link
                return self.views.tell(card, clients, clean(f"{title}: {body}", 200))

            host = self.views.host_of(card) if not card.get("target") else None
            name = host.pane.info.target if host is not None else where(card)
            fired = self.notifier.on_change(name, str(card.get("agent") or ""), old, state, message(card),
                                            board_pane=pane_id, ring=ring,
                                            host="" if card.get("origin") == "remote" else LOCAL_HOST)
            if fired:
                self.sent[state] += 1
        except Exception:  # a notification must never break the daemon
            log.exception("notification for pane %s failed", pane_id)

    async def _with_prompt(self, pane_id: str, card: Card) -> Card:
        """A pane blocked by its title or a hook before its dialog is drawn (Codex, hooks): the notification waits
        up to PROMPT_WAIT for the card to carry the question and options, so it says what is asked."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PROMPT_WAIT
        while loop.time() < deadline:
            await asyncio.sleep(0.05)
            handle = self.hub.panes.get(pane_id)
            if handle is None or handle.card.get("state") != "blocked":
                break
            if (handle.card.get("prompt") or {}).get("question"):
                return handle.card
        return card

    def close(self) -> None:
        self.hub.listeners.discard(self.on_card)
        for task in list(self._tasks):
            task.cancel()
        self.notifier.close()


PROMPT_WAIT = 0.5  # seconds a blocked notification waits for the dialog's words (a title or a hook came first)
LOCAL_HOST = socket.gethostname().split(".")[0] or "localhost"  # "host:target" in every title (a remote card's
# target names its host already)
FRESH = 5.0  # seconds: a `run` card that registers in a state begun this recently is news (cli/run.py waits)


def _registered_just_now(card: Card) -> bool:
    """A `run` that registers in a fresh state, or a hook-only pane whose first hook just fired (its first state is
    an event, not a screen found as it was)."""
    since = card.get("since")
    fresh = isinstance(since, int | float) and 0 <= time.time() - since < FRESH
    return card.get("origin") in ("run", "hooks") and fresh


def where(card: Card) -> str:
    """How the notification names the pane: host:target for a remote pane, the tmux target, else the name."""
    target = card.get("target")
    return str(target or card.get("name") or card.get("id"))


def message(card: Card, now: float | None = None) -> str:
    """The body of a notification: the question and its options as the card has them, then the context a person
    decides with away from the desk: how long it has waited, and where (a hook-only pane's terminal, tty and
    directory; else its directory)."""
    prompt = card.get("prompt") or {}
    question = str(prompt.get("question") or "")
    options = " · ".join(f"{o.get('number')}. {o.get('label')}" for o in prompt.get("options") or [])
    place = str(card.get("where") or card.get("cwd") or "")
    context = f"waiting {format_duration(in_state(card, now))}" + (f" · {place}" if place else "")
    return " — ".join(part for part in (question, options, context) if part)
