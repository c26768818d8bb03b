"""board/goto.py `route` for a pane known only by its hooks (issue 25 item 2 with issue 26's cards): `top`'s Enter
and `attach` ask the daemon to bring the agent's own terminal window to the front, or say where the agent is."""

from __future__ import annotations

import asyncio
from typing import Any

from panewatch.board.goto import route
from panewatch.board.rpc import RemoteError

CARD = {"id": "7", "origin": "hooks", "state": "blocked", "where": "kitty window 3 · /dev/pts/6 · ~/src/app",
        "tty": "/dev/pts/6", "cwd": "/home/me/src/app"}


def test_a_hook_only_pane_is_brought_to_the_front_by_its_terminal() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def ask(op: str, **params: Any) -> dict[str, Any]:
        asked.append((op, params))
        return {}

    done = asyncio.run(route(CARD, ask))
    assert asked == [("goto", {"pane": "7"})] and done.how == "say" and not done.argv
    assert "in front in its terminal (kitty window 3" in done.message


def test_where_its_terminal_cannot_it_says_where_the_agent_is() -> None:
    async def ask(op: str, **params: Any) -> dict[str, Any]:
        raise RemoteError("cannot_go_there", "GNOME Terminal cannot be asked to show a window: the agent is in "
                                             "/dev/pts/6, /home/me/src/app")

    done = asyncio.run(route(CARD, ask))
    assert done.how == "say" and "/dev/pts/6" in done.message and "cannot be asked" in done.message
