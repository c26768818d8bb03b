"""The board's operations: ONE table for the daemon's unix socket (daemon.py) and the board's
websocket (wsession.py), each parameter validated once, here.

    op        params                                       result                                 web
    info      —                                            {url, pid, port, panes, version}; url has no secret
    login     {launcher?, pane?}                           {url, expires_in, file?}: a one-time sign-in link
                                                           (with pane: the board opens at that pane)
                                                           (security.py); launcher: also a private page
                                                           forwarding to it, for a browser
    list      —                                            {cards, hosts, notes}: hosts = each [[remote]]
                                                           host's link {link, error, away, since}; notes =
                                                           what is not watched, and why
    status    —                                            {notes, hosts, notify}: what is not watched,  ✓
                                                           hosts' links, notification backends (the
                                                           board's banner)
    new       {argv, name?, cwd?, env?, cols?, rows?, agent?}  {card}
    prompt    {pane}                                       {card} (its prompt, if blocked)
    send      {pane, text, enter?}                         {submitted, state, elapsed, how}: typed, and  ✓
                                                           (with enter) the agent's turn started; refused
                                                           while blocked (pane_blocked + prompt), into a
                                                           non-agent (not_an_agent); not_submitted
    answer    {pane, option, fingerprint}                  {option, cleared, state, prompt_after,  ✓
                                                           applied, outcome, elapsed}
    resize    {pane, cols, rows}                           — headless panes; a `run` pane up to   ✓
                                                           its terminal's size (board/link.py)
    dismiss   {pane}                                       — remove an exited pane's card          ✓
    report_wrong {pane, expected?}                         {path, agent, state, expected, bytes,   ✓
                                                           changes, manifest}: the pane's history saved
                                                           as a golden case (golden/wrong.py)
    stats     {since?}                                     minutes lost waiting (core/waits.py          ✓
                                                           summarize) since `since` (unix time; default
                                                           the last 7 days), with the waits still open;
                                                           `recording` (bool), `recording_off` (None, or
                                                           {since, why, pending, dropped})
    close     {pane}                                       — kill a headless pane, remove its card
    goto      {pane}                                       — a tmux pane: select it in the user's tmux  ✓
    attach_command {pane, inside?}                         {argv, nested, target}: what `panewatch attach`
                                                           execs for a tmux pane (inside: the caller's
                                                           $TMUX socket); not_tmux for other panes
    reload    —                                            {path, warnings, after_restart}: config.toml
                                                           read again (notifications at once)
    shutdown  —                                            —
    ping      —                                            —

The socket may call every op, the browser those marked web. What belongs to one connection — a
`run` pane registering, an attach and its keys, a subscription to every card change (`subscribe`:
board/subscribe.py, `panewatch top`), the browser's terminal view and its keys — is
handled by that connection and passed to `call` as `local` operations, so one name never means two
things and an unknown name is refused the same way on both sides.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from panewatch.board.limits import ConnectionGate
from panewatch.board.model import Card, bad_request
from panewatch.board.panes import Hub, PaneHandle
from panewatch.board.rpc import RemoteError
from panewatch.board.waits import DAY, BoardWaits
from panewatch.core.screen import clamp_size

Message = dict[str, Any]
Result = Message | None
LocalOp = Callable[[Message], Awaitable[Result]]

# The sizes a caller may give a pane (a browser's view, `panewatch new --size`): smaller is unusable.
LEAST_SIZE, MOST_SIZE = (10, 4), (500, 200)
DEFAULT_SIZE = (120, 32)


@dataclass(frozen=True, slots=True)
class NewPane:
    """A `new` request, validated: what the daemon needs to start a headless pane."""

    argv: list[str]
    name: str | None
    cwd: str | None
    env: dict[str, str] | None
    cols: int
    rows: int
    agent: str | None


class Board(Protocol):
    """What the operations, the web app and the browser sessions need of the daemon: its panes, its
    counters, and what only it can do. They take this, not the daemon (which imports them)."""

    hub: Hub
    waits: BoardWaits
    pid: int
    notify_cooldown: float
    clients: int  # open board tabs
    websockets: set[web.WebSocketResponse]  # their connections (closed at once when the daemon stops)
    stats: Counter[str]
    gate: ConnectionGate  # the web side's connection caps (limits.py)

    def info(self) -> Message: ...
    def hosts(self) -> Message: ...
    def notes(self) -> list[str]: ...
    def login(self, *, launcher: bool = False, pane: str | None = None) -> Message: ...
    async def new_pane(self, spec: NewPane) -> Card: ...
    async def dismiss(self, pane_id: str, *, kill: bool = False) -> None: ...
    def stop(self) -> None: ...
    def reload(self) -> Message: ...


# -- parameters: each validated here and nowhere else ------------------------------------------

def pane(board: Board, msg: Message) -> PaneHandle:
    ref = msg.get("pane")
    if not isinstance(ref, str) or not ref:
        raise bad_request("no pane given")
    return board.hub.get(ref)


def text(msg: Message, key: str) -> str:
    """The string parameter `key` ("" when absent or null)."""
    value = msg.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise bad_request(f"{key} must be a string")
    return value


def _size(msg: Message, required: bool) -> tuple[int, int]:
    cols, rows = msg.get("cols"), msg.get("rows")
    if cols is None and rows is None and not required:
        return DEFAULT_SIZE
    if not isinstance(cols, int) or not isinstance(rows, int) or isinstance(cols, bool) or isinstance(rows, bool):
        raise bad_request("a size needs integer cols and rows")
    return clamp_size(cols, rows, LEAST_SIZE, MOST_SIZE)


def _new_pane(msg: Message) -> NewPane:
    argv = msg.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise bad_request("a command is required (panewatch new -- CMD ...)")
    env = msg.get("env")
    if env is not None and not isinstance(env, dict):
        raise bad_request("env must be an object")
    cols, rows = _size(msg, required=False)
    return NewPane(list(argv), text(msg, "name") or None, text(msg, "cwd") or None,
                   None if env is None else {str(k): str(v) for k, v in env.items()}, cols, rows,
                   text(msg, "agent") or None)


# -- the operations ----------------------------------------------------------------------------

async def _info(board: Board, msg: Message) -> Result:
    return board.info()


async def _login(board: Board, msg: Message) -> Result:
    launcher = msg.get("launcher", False)
    if not isinstance(launcher, bool):
        raise bad_request("launcher must be true or false")
    pane = msg.get("pane")
    if pane is not None and not (isinstance(pane, str) and 0 < len(pane) <= 128 and pane.isprintable()):
        raise bad_request("pane must be a pane id")
    return board.login(launcher=launcher, pane=pane)


async def _status(board: Board, msg: Message) -> Result:
    return {"notes": board.notes(), "hosts": board.hosts(), "notify": board.info().get("notify", [])}


async def _list(board: Board, msg: Message) -> Result:
    return {"cards": board.hub.cards(), "hosts": board.hosts(), "notes": board.notes()}


async def _new(board: Board, msg: Message) -> Result:
    return {"card": await board.new_pane(_new_pane(msg))}


async def _prompt(board: Board, msg: Message) -> Result:
    return {"card": pane(board, msg).card}


async def _send(board: Board, msg: Message) -> Result:
    enter = msg.get("enter", True)
    if not isinstance(enter, bool):
        raise bad_request("enter must be true or false")
    return await pane(board, msg).send(text(msg, "text"), enter)


async def _answer(board: Board, msg: Message) -> Result:
    option, fingerprint = msg.get("option"), msg.get("fingerprint")
    if not isinstance(option, str | int) or isinstance(option, bool) or str(option) == "" \
            or not isinstance(fingerprint, str) or not fingerprint:
        raise bad_request("an answer needs an option and the fingerprint of the prompt it answers")
    return await pane(board, msg).answer(str(option), fingerprint)


async def _report_wrong(board: Board, msg: Message) -> Result:
    return await pane(board, msg).report_wrong(text(msg, "expected") or None)


async def _stats(board: Board, msg: Message) -> Result:
    since = msg.get("since")
    if since is None:
        since = time.time() - 7 * DAY
    if not isinstance(since, int | float) or isinstance(since, bool):
        raise bad_request("since must be a unix time")
    return await board.waits.summary(float(since))


async def _resize(board: Board, msg: Message) -> Result:
    handle = pane(board, msg)
    await handle.resize(*_size(msg, required=True))
    return None


async def _dismiss(board: Board, msg: Message) -> Result:
    await board.dismiss(pane(board, msg).id)
    return None


async def _close(board: Board, msg: Message) -> Result:
    await board.dismiss(pane(board, msg).id, kill=True)
    return None


async def _goto(board: Board, msg: Message) -> Result:
    handle = pane(board, msg)
    goto = getattr(handle, "goto", None)
    if goto is None:
        raise RemoteError("not_tmux", f"pane {handle.id} is not a tmux pane: there is no tmux window to go to")
    await goto()
    return None


async def _attach_command(board: Board, msg: Message) -> Result:
    handle = pane(board, msg)
    attach_command = getattr(handle, "attach_command", None)
    if attach_command is None:
        raise RemoteError("not_tmux", f"pane {handle.id} is not a tmux pane")
    inside = msg.get("inside")
    if inside is not None and not isinstance(inside, str):
        raise bad_request("inside must be a socket path")
    result: Message = attach_command(inside or None)
    return result


async def _reload(board: Board, msg: Message) -> Result:
    return board.reload()


async def _shutdown(board: Board, msg: Message) -> Result:
    asyncio.get_running_loop().call_soon(board.stop)  # after this reply is on its way
    return None


async def _ping(board: Board, msg: Message) -> Result:
    return None


@dataclass(frozen=True, slots=True)
class Op:
    run: Callable[[Board, Message], Awaitable[Result]]
    web: bool = False  # the browser may call it (the socket may call every op)


OPS: dict[str, Op] = {
    "info": Op(_info),
    "login": Op(_login),
    "list": Op(_list),
    "status": Op(_status, web=True),
    "new": Op(_new),
    "prompt": Op(_prompt),
    "send": Op(_send, web=True),
    "answer": Op(_answer, web=True),
    "resize": Op(_resize, web=True),
    "dismiss": Op(_dismiss, web=True),
    "report_wrong": Op(_report_wrong, web=True),
    "stats": Op(_stats, web=True),
    "close": Op(_close),
    "goto": Op(_goto, web=True),
    "attach_command": Op(_attach_command),
    "reload": Op(_reload),
    "shutdown": Op(_shutdown),
    "ping": Op(_ping),
}


async def call(board: Board, op: str, msg: Message, *, web: bool,
               local: Mapping[str, LocalOp] | None = None) -> Result:
    """Run operation `op` for the socket (`web` False) or the browser; `local`: the connection's own."""
    handler = (local or {}).get(op)
    if handler is not None:
        return await handler(msg)
    spec = OPS.get(op)
    if spec is None or (web and not spec.web):
        raise RemoteError("unknown_op", f"no such operation: {op!r}")
    return await spec.run(board, msg)
