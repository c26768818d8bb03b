"""Going to a pane: what `panewatch attach ID` and `panewatch top`'s Enter do, decided once (`route`).

    switch  the user is inside the tmux server that holds the pane (a tmux pane, or the tmux pane a
            `panewatch run` runs in): `tmux switch-client -t %ID` moves the user's own client there, its window
            selected and the pane active. It needs no terminal: it returns at once.
    attach  a tmux pane the user is not inside: tmux attaches at the pane in this terminal (nested, `$TMUX`
            unset, when inside another tmux server), or `ssh -t` attaches the host's tmux for a remote pane over
            the shared connection: the daemon's `attach_command` (board/tmux.py) says which.
    stream  a pane panewatch holds itself (headless, or a `run` outside the user's tmux): this terminal becomes the
            pane until the detach key (`panewatch attach --stream`, board/attach.py).
    say     a pane nothing here can show (a `run` or headless pane that exited): where it is, in words (its tmux
            target, tty, directory); a pane known only by its hooks is first brought to the front in its own
            terminal where that terminal allows (the daemon's `goto`: kitty, WezTerm, iTerm2, Terminal.app), and
            the words say so, or where it is.

A tmux pane is named by tmux's own id (`%3`), never by a name the user or an agent chose, so no name reaches
a tmux command line. `client`: the tmux client to switch (`-c`, as `#{client_name}` names it); none: tmux's
own choice, the client the command runs from.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from panewatch.board.rpc import RemoteError
from panewatch.runtime.tmux import TmuxServer

Card = dict[str, Any]  # board/model.py's card (not imported: `tmux next` is a key binding, and that pulls the core in)
How = Literal["switch", "attach", "stream", "say"]
Ask = Callable[..., Awaitable[dict[str, Any]]]  # a request to the daemon: `await ask(op, **params)`
HELD = frozenset({"headless", "run"})  # panes panewatch itself holds: their screen streams through the daemon


@dataclass(frozen=True, slots=True)
class Route:
    how: How
    argv: tuple[str, ...] = ()  # switch, attach: the command to run; stream: `panewatch attach --stream ID`
    unset_tmux: bool = False  # attach: a nested tmux (run with $TMUX unset)
    message: str = ""  # said to the user: a nested attach, where a pane is
    target: str = ""  # where it lands, for people ("agents:0.0", "pane 5")


def inside_tmux(env: dict[str, str] | None = None) -> str | None:
    """The socket of the tmux server this process runs in (`$TMUX`), if any."""
    value = (os.environ if env is None else env).get("TMUX", "")
    return value.split(",")[0] or None


def same_server(label: str, socket: str) -> bool:
    """Whether the card's `tmux_server` (a socket path for a local server) is the server at `socket`."""
    try:
        return os.path.samefile(label, socket)
    except OSError:
        return os.path.isabs(label) and os.path.abspath(label) == os.path.abspath(socket)


def stream_argv(pane_id: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "panewatch", "attach", "--stream", pane_id)


def where(card: Card) -> str:
    """Where a pane is, in words: its tmux target and window, its tty, its directory."""
    parts = []
    if card.get("target"):
        parts.append(f"tmux {card['target']}" + (f" [{card['window']}]" if card.get("window") else ""))
    if card.get("tty"):
        parts.append(f"tty {card['tty']}")
    if card.get("cwd"):
        parts.append(f"in {card['cwd']}")
    return ", ".join(parts) or "its place is not known"


async def route(card: Card, ask: Ask, *, inside: str | None = None, client: str | None = None) -> Route:
    """How to go to `card`'s pane from here (`inside`: this process's tmux socket, `inside_tmux()`)."""
    pane_id = str(card.get("id"))
    tmux_pane, label = str(card.get("tmux_pane") or ""), str(card.get("tmux_server") or "")
    target = str(card.get("target") or card.get("name") or f"pane {pane_id}")
    if inside and tmux_pane.startswith("%") and label and card.get("origin") != "remote" \
            and same_server(label, inside):
        where_to = ("-c", client) if client else ()
        argv = TmuxServer(socket_path=inside).argv("switch-client", *where_to, "-t", tmux_pane)
        return Route("switch", tuple(argv), target=target)
    if card.get("origin") in ("tmux", "remote"):
        try:
            how = await ask("attach_command", pane=pane_id, inside=inside)
        except RemoteError as exc:
            return Route("say", message=f"pane {pane_id} ({where(card)}): {exc}", target=target)
        nested = bool(how.get("nested"))
        said = (f"{how.get('target') or target} is on another tmux server than the one you are in: attaching it "
                "nested (its prefix key is the inner one)") if nested else ""
        return Route("attach", tuple(str(a) for a in how["argv"]), unset_tmux=nested, message=said, target=target)
    if card.get("origin") == "hooks" and card.get("state") != "exited":  # an agent in a terminal of its own
        try:
            await ask("goto", pane=pane_id)  # its terminal brings it to the front where it can (runtime/goto.py)
        except RemoteError as exc:
            return Route("say", message=f"pane {pane_id}: {exc}", target=target)
        return Route("say", message=f"pane {pane_id} is in front in its terminal ({card.get('where') or where(card)})",
                     target=target)
    if card.get("origin") in HELD and card.get("state") != "exited":
        return Route("stream", stream_argv(pane_id), target=f"pane {pane_id}")
    if card.get("state") == "exited":
        return Route("say", message=f"pane {pane_id} has exited ({where(card)})", target=target)
    return Route("say", message=f"pane {pane_id} cannot be shown here: it is {where(card)}", target=target)


def run_env(route: Route) -> dict[str, str]:
    """The environment to run `route.argv` in (a nested tmux with $TMUX unset)."""
    env = dict(os.environ)
    if route.unset_tmux:
        env.pop("TMUX", None)
    return env
