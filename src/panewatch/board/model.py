"""What the board knows about a pane (a card), and prompts and guard errors as JSON.

A card is plain JSON so the same dict goes from a `run` process to the daemon, to the browser and
to `panewatch ls --json` unchanged:

    {"id", "name", "agent", "cwd", "command", "origin": "run"|"headless"|"tmux"|"remote"|"hooks", "pid", "state",
     "source", "rule", "detail", "since" (unix time the state began), "prompt": PROMPT|null, "exit_code",
     "cols", "rows", "interactive", "agent_version" (null: not known),
     "unverified": null | "not verified for 2.2.0 · tested 2.1.332" (the verdict is unchanged),
     "kind": "agent"|"view"|"other"|"unknown" (core/panekind.py), "what" (what holds the pane: "bash",
     "tmux client", "panewatch run"), "view_of": the id of the card a view shows (null: not known),
     "shows" (what a view shows, for people), "answer": null | {option, label, applied, outcome, at, elapsed}
     (the last answer's outcome); tmux cards also "target", "tmux_pane", "tmux_server", "window"; hook-only cards
     (origin "hooks", board/hookonly.py) also "tty", "terminal", "where", "session", "stale_reports"}

    PROMPT = {"question", "options": [{"number", "label", "kind", "key"}], "fingerprint", "body"}
"""

from __future__ import annotations

import time
from typing import Any

from panewatch.board.rpc import RemoteError
from panewatch.core.panekind import NOT_AGENT
from panewatch.core.prompt import Prompt
from panewatch.core.states import urgency
from panewatch.errors import PanewatchError

Card = dict[str, Any]


def stands_for_agent(card: Card) -> bool:
    """A card that is an agent's (or a pane we cannot read: its screen may be one): counted, notified, answered
    and put in stats. A view or another program is none of these (core/panekind.py), nor is `demo --board`'s
    fake agent (it notifies in the demo's own view, and its waits are no one's)."""
    return card.get("kind") not in NOT_AGENT and not card.get("demo")

def prompt_json(prompt: Prompt | None) -> dict[str, Any] | None:
    if prompt is None:
        return None
    return {"question": prompt.question, "fingerprint": prompt.fingerprint, "body": prompt.body[:2000],
            "options": [{"number": o.number, "label": o.label, "kind": o.kind, "key": o.key}
                        for o in prompt.options]}


def wire_error(exc: PanewatchError) -> RemoteError:
    """An error as it travels: its class's wire name, its own message, and the prompt now on screen
    (a guard refusal carries the prompt the user must see)."""
    prompt = getattr(exc, "prompt", None)
    return RemoteError(exc.wire_name, str(exc),
                       {"prompt": prompt_json(prompt) if isinstance(prompt, Prompt) else None})


def no_such_pane(pane_id: str) -> RemoteError:
    return RemoteError("no_such_pane", f"no pane {pane_id!r} (see `panewatch ls`)")


def bad_request(message: str) -> RemoteError:
    return RemoteError("bad_request", message)


def decided_by(card: Card) -> str:
    """'rule claude.permission-dialog', 'hook: PermissionRequest Bash', 'process: exit code 0'."""
    source = card.get("source") or "screen"
    if source == "screen":
        return f"rule {card['rule']}" if card.get("rule") else "screen (no rule matched)"
    detail = card.get("detail") or ""
    return f"{source}: {detail}" if detail else str(source)


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def in_state(card: Card, now: float | None = None) -> float:
    return max(0.0, (time.time() if now is None else now) - float(card.get("since") or 0.0))


def sort_key(card: Card) -> tuple[int, float, str]:
    """Blocked first (longest waiting first), then unreachable, working, idle, exited (core/states.py URGENCY)."""
    return urgency(str(card.get("state"))), float(card.get("since") or 0.0), str(card.get("id"))
