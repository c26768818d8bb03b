"""`panewatch top` (issue 25): the key flows driven by Textual's pilot against a real daemon and real headless
agents (tests/board_agent.py), the view in a real terminal (80x24 in 256 colours, a 40-column popup without
colour, over ssh), the daemon's card subscription, and the rows' order and fitting (tui/rows.py).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from boardutil import ServeProcess, card, cli, new_agent, wait_for, wait_state
from panewatch.board import client
from panewatch.testing.drive import PtyAgent
from panewatch.tui import rows as R
from panewatch.tui.app import TopApp
from panewatch.tui.dialogs import ConfirmAnswer, ReportWrong

TOP = [sys.executable, "-m", "panewatch", "top", "--no-start"]


def run(scenario: Callable[[], Coroutine[Any, Any, None]], timeout: float = 90.0) -> None:
    async def main() -> None:
        await asyncio.wait_for(scenario(), timeout)

    asyncio.run(main())


async def until(pilot: Any, condition: Callable[[], object], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout} s")
        await pilot.pause(0.05)


def blocked(tmp_path: Path, name: str) -> tuple[str, Path]:
    log = tmp_path / f"{name}.log"
    pane = new_agent(log, name)
    cli("send", "--no-enter", pane, "b", check=True)  # the scripted agent shows its permission dialog
    wait_state(pane, "blocked")
    return pane, log


def answers(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("answered")] if log.exists() else []


def names(app: TopApp) -> list[str]:
    return [str(c.get("name")) for c in app.pane_list.rows]


def selected_name(app: TopApp) -> str:
    return str((app.selected_card or {}).get("name"))


# -- the key flows, in Textual's pilot, against a real daemon ----------------------------------------------

def test_filter_next_blocked_and_a_pane_vanishing_while_selected(serve: ServeProcess, tmp_path: Path) -> None:
    beta, _ = blocked(tmp_path, "beta")
    gamma, _ = blocked(tmp_path, "gamma")
    new_agent(tmp_path / "alpha.log", "alpha")

    async def scenario() -> None:
        app = TopApp(autostart=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: len(app.pane_list.rows) == 3, "three rows")
            assert names(app) == ["beta", "gamma", "alpha"]  # blocked first, the longest wait first
            assert app.pane_list.render_line(0).text.startswith("▶⚠ blocked")  # marked, readable without colour
            header = str(app.query_one("#header").render())
            assert "⚠ 2 blocked" in header and "○ 1 idle" in header

            await pilot.press("slash", "g", "a", "m")
            await until(pilot, lambda: names(app) == ["gamma"], "the filter leaves gamma")
            await pilot.press("enter")  # the filter stays, the list has the keys again
            assert app.filter_text == "gam" and app.focused is app.pane_list
            await pilot.press("slash", "escape")
            await until(pilot, lambda: names(app) == ["beta", "gamma", "alpha"], "Esc clears the filter")

            await pilot.press("G")
            assert selected_name(app) == "alpha"
            await pilot.press("b")
            assert selected_name(app) == "beta"
            await pilot.press("b")
            assert selected_name(app) == "gamma"
            await pilot.press("b")
            assert selected_name(app) == "beta"  # round again

            await pilot.press("b")  # gamma selected, then it goes away
            assert selected_name(app) == "gamma"
            await asyncio.to_thread(cli, "kill", gamma, check=True)
            await until(pilot, lambda: gamma not in app.cards, "gamma's card removed")
            await pilot.pause(0.1)
            assert app.pane_list.selected in app.cards and selected_name(app) in ("beta", "alpha")
            assert f"pane {gamma} is gone" in app.message
            assert all("gamma" not in app.pane_list.render_line(y).text for y in range(3))
            await pilot.press("b")
            assert selected_name(app) == "beta" and beta in app.cards

    run(scenario)


def test_answer_cancelled_then_confirmed_through_the_guard(serve: ServeProcess, tmp_path: Path) -> None:
    pane, log = blocked(tmp_path, "solo")

    async def scenario() -> None:
        app = TopApp(autostart=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: selected_name(app) == "solo", "the blocked pane selected")
            await pilot.press("2")
            assert isinstance(app.screen, ConfirmAnswer)
            assert app.screen.option["number"] == 2 and app.screen.fingerprint == card(pane)["prompt"]["fingerprint"]
            await pilot.press("escape")
            assert not isinstance(app.screen, ConfirmAnswer)
            await pilot.pause(0.3)
            assert answers(log) == [] and app.cards[pane]["state"] == "blocked"
            assert app.message == f"not answered: pane {pane}"

            await pilot.press("1")
            assert isinstance(app.screen, ConfirmAnswer)
            await pilot.press("enter")
            await until(pilot, lambda: app.message.startswith(f"answered pane {pane}: 1. Yes"), "the outcome said",
                        25)
            assert "applied" in app.message
            await until(pilot, lambda: app.cards[pane]["state"] != "blocked", "the pane left blocked")
            assert answers(log) == ["answered 1 rm -rf build/"]
        # a preview timer firing while the app takes its screen down (CI once saw it raise) does nothing
        app._draw_preview()
        await app._switch_preview()

    run(scenario)


def test_a_refused_answer_is_shown_as_refused(serve: ServeProcess, tmp_path: Path) -> None:
    """The prompt changes while the confirmation is open (the agent swaps its command): the answer bound to the
    fingerprint the user saw is refused by the guard, and the view says so; nothing is typed."""
    pane, log = blocked(tmp_path, "swapper")

    async def scenario() -> None:
        app = TopApp(autostart=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: selected_name(app) == "swapper", "the blocked pane selected")
            await pilot.press("1")
            dialog = app.screen
            assert isinstance(dialog, ConfirmAnswer)
            seen = dialog.fingerprint
            os.kill(int(app.cards[pane]["pid"]), signal.SIGUSR1)  # another command, the same question
            await until(pilot, lambda: (app.cards[pane].get("prompt") or {}).get("fingerprint") not in (None, seen),
                        "the new prompt's card")
            assert app.screen is dialog  # the confirmation still shows what the user saw
            await pilot.press("enter")
            await until(pilot, lambda: app.message.startswith("refused"), "the refusal said", 25)
            assert "prompt changed" in app.message and "nothing was typed" in app.message
            assert answers(log) == [] and app.cards[pane]["state"] == "blocked"

    run(scenario)


def test_a_pane_vanishing_under_its_confirmation_and_report_wrong(serve: ServeProcess, tmp_path: Path) -> None:
    doomed, doomed_log = blocked(tmp_path, "doomed")
    other = new_agent(tmp_path / "other.log", "other")

    async def scenario() -> None:
        app = TopApp(autostart=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: selected_name(app) == "doomed", "the blocked pane selected")
            await pilot.press("1")
            assert isinstance(app.screen, ConfirmAnswer)
            await asyncio.to_thread(cli, "kill", doomed, check=True)
            await until(pilot, lambda: not isinstance(app.screen, ConfirmAnswer), "the confirmation closed")
            assert app.message == f"pane {doomed} went away: nothing was typed"
            assert answers(doomed_log) == [] and selected_name(app) == "other"

            await pilot.press("r")
            assert isinstance(app.screen, ReportWrong)
            await pilot.press("w")
            await until(pilot, lambda: app.message.startswith("saved as a case: "), "the case saved", 20)
            assert Path(app.message.removeprefix("saved as a case: ")).is_dir()
            assert app.cards[other]["state"] == "idle"

    run(scenario)


# -- the daemon's subscription ---------------------------------------------------------------------------

def test_the_subscription_tells_every_change_and_removal(serve: ServeProcess, tmp_path: Path) -> None:
    seen: list[tuple[list[dict[str, Any]], list[str]]] = []

    async def scenario() -> None:
        peer = await client.connect()
        peer.on_notify = lambda op, msg: seen.append((msg["cards"], msg["gone"])) if op == "cards" else None
        peer.start()
        first = await peer.request("subscribe")
        assert first["cards"] == [] and "hosts" in first and "notes" in first
        pane = await asyncio.to_thread(new_agent, tmp_path / "sub.log", "sub")
        await asyncio.to_thread(cli, "send", "--no-enter", pane, "b", check=True)
        deadline = time.monotonic() + 15
        while not any(c["id"] == pane and c["state"] == "blocked" for cards, _ in seen for c in cards):
            assert time.monotonic() < deadline, seen
            await asyncio.sleep(0.05)
        await asyncio.to_thread(cli, "kill", pane, check=True)
        while not any(pane in gone for _, gone in seen):
            assert time.monotonic() < deadline, seen
            await asyncio.sleep(0.05)
        await peer.close()

    run(scenario)


def test_a_subscriber_that_does_not_read_costs_one_card_per_pane() -> None:
    """The daemon holds back while a subscriber's send buffer is full: changed ids wait (a set), never a queue."""
    from panewatch.board import subscribe
    from panewatch.board.panes import Hub
    from panewatch.board.rpc import Peer

    class Pane:
        def __init__(self, pane_id: str) -> None:
            self.id, self.card = pane_id, {"id": pane_id, "state": "working", "body": "x" * 4000}

    async def scenario() -> None:
        import socket

        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        hub = Hub()
        feed = subscribe.CardFeed(hub, Peer(reader, writer))
        feed.start()
        for i in range(200):
            hub.panes[str(i)] = Pane(str(i))  # type: ignore[assignment]
        for _ in range(50):  # 200 panes change 50 times over, nobody reads the other end
            for i in range(200):
                hub.changed(str(i))
            await asyncio.sleep(subscribe.FLUSH * 1.5)
        backlog = writer.transport.get_write_buffer_size()
        assert backlog <= subscribe.MAX_BACKLOG + 200 * 4200, backlog  # one pass of every card at most over
        assert len(feed._changed) <= 200
        feed.stop()
        writer.close()
        theirs.close()

    run(scenario)


# -- in a real terminal --------------------------------------------------------------------------------------

_SGR = re.compile(rb"\x1b\[([0-9;:]*)m")


def colours(output: bytes) -> set[str]:
    """The colour kinds an output sets: "16" (30-37, 90-97 …), "256" (38;5), "truecolor" (38;2)."""
    found: set[str] = set()
    for params in _SGR.findall(output):
        codes = [int(p) for p in re.split(rb"[;:]", params) if p]
        i = 0
        while i < len(codes):
            code = codes[i]
            if code in (38, 48) and i + 1 < len(codes):
                found.add("256" if codes[i + 1] == 5 else "truecolor")
                i += 3 if codes[i + 1] == 5 else 5
                continue
            if 30 <= code <= 37 or 40 <= code <= 47 or 90 <= code <= 97 or 100 <= code <= 107:
                found.add("16")
            i += 1
    return found


def terminal_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLORTERM", "NO_COLOR", "COLUMNS", "LINES")}
    return {**env, "TERM": "xterm-256color", **extra}


def test_in_80x24_with_256_colours_and_panewatch_alone_opens_it(serve: ServeProcess, tmp_path: Path) -> None:
    blocked(tmp_path, "colourful")
    with PtyAgent([sys.executable, "-m", "panewatch"], env=terminal_env(), cols=80, rows=24) as term:
        assert term.wait_for("panewatch · ⚠ 1 blocked", 30), term.text()
        assert term.wait_for("Do you want to proceed?", 10), term.text()  # the selected pane's prompt
        output = b"".join(chunk for _, chunk in term.output)
        assert colours(output) == {"256"}  # no truecolor sent to a 256-colour terminal
        term.write(b"q")
        wait_for(lambda: not term.alive, "q quits")
    script = cli()  # not a terminal: the help, as before
    assert script.returncode == 2 and "usage: panewatch" in script.stdout


def test_in_a_40_column_popup_without_colour(serve: ServeProcess, tmp_path: Path) -> None:
    pane, _ = blocked(tmp_path, "a-long-name-for-a-narrow-popup")
    with PtyAgent(TOP, env=terminal_env(NO_COLOR="1"), cols=40, rows=16) as term:
        assert term.wait_for("⚠ 1 blocked", 30), term.text()
        row = term.wait_for(lambda s: any(r.startswith("▶⚠ ") for r in s.rows), 10)
        assert row is not None
        assert all(len(r) <= 40 for r in row.rows)
        term.write(b"1")
        assert term.wait_for("Enter: answer", 10), term.text()
        term.write(b"\x1b")
        assert term.wait_for(lambda s: "Enter: answer" not in s.text(), 10)
        output = b"".join(chunk for _, chunk in term.output)
        assert colours(output) == set(), colours(output)  # NO_COLOR: none at all
        term.write(b"q")
        wait_for(lambda: not term.alive, "q quits")
    assert card(pane)["state"] == "blocked"  # nothing was typed


@pytest.mark.needs("ssh")
def test_over_ssh_in_80x24(serve: ServeProcess, sshd: Any, tmp_path: Path) -> None:
    blocked(tmp_path, "far")
    remote = ["env", f"PANEWATCH_RUNTIME_DIR={os.environ['PANEWATCH_RUNTIME_DIR']}", "TERM=xterm-256color", *TOP]
    argv = ["ssh", "-F", str(sshd.ssh_config), "-o", "BatchMode=yes", "-t", sshd.alias, *remote]
    with PtyAgent(argv, env=terminal_env(), cols=80, rows=24) as term:
        assert term.wait_for("panewatch · ⚠ 1 blocked", 40), term.text()
        term.write(b"G")
        term.write(b"b")
        assert term.wait_for("Do you want to proceed?", 10), term.text()
        term.write(b"q")
        wait_for(lambda: not term.alive, "q quits, ssh ends")


# -- the rows, as data -----------------------------------------------------------------------------------------

def a_card(pane_id: str, state: str, since: float, **more: Any) -> dict[str, Any]:
    return {"id": pane_id, "name": f"n{pane_id}", "agent": "claude", "state": state, "since": since, "kind": "agent",
            **more}


def test_rows_order_filter_next_blocked_and_option_keys() -> None:
    cards = [a_card("1", "idle", 1), a_card("2", "blocked", 5), a_card("3", "blocked", 2), a_card("4", "working", 3),
             a_card("5", "idle", 0, kind="view", view_of="2", target="w:1.0"),
             a_card("6", "idle", 0, kind="other", what="bash", target="w:2.0")]
    assert [c["id"] for c in R.arrange(cards)] == ["3", "2", "4", "1", "5"]
    assert [c["id"] for c in R.arrange(cards, others=True)] == ["3", "2", "4", "1", "5", "6"]
    assert [c["id"] for c in R.arrange(cards, "N4")] == ["4"]
    rows = R.arrange(cards)
    assert R.next_blocked(rows, None) == "3" and R.next_blocked(rows, "3") == "2" and R.next_blocked(rows, "2") == "3"
    assert R.next_blocked(rows, "4") == "3" and R.next_blocked(rows[2:], "4") is None
    assert R.summary(cards) == "⚠ 2 blocked · ● 1 working · ○ 1 idle"
    prompt = {"question": "Run it?", "fingerprint": "f", "options": [
        {"number": 1, "label": "Yes", "kind": "allow_once", "key": "y"},
        {"number": 2, "label": "No", "kind": "reject", "key": "n\r"}]}
    asking = a_card("7", "blocked", 1, prompt=prompt)
    assert R.option_for_key(asking, "2")["label"] == "No"  # type: ignore[index]
    assert R.option_for_key(asking, "n")["label"] == "No"  # type: ignore[index]
    assert R.option_for_key(asking, "3") is None
    assert R.option_for_key(a_card("8", "idle", 1, prompt=prompt), "1") is None


def test_a_row_fits_its_width_and_hostile_text_is_inert() -> None:
    hostile = a_card("9", "blocked", 1, name="\x1b]0;pwned\x07[red]x[/red]\x1b[2J", target="s:0.0", window="w\x07",
                     cwd="/tmp/\x1b[31mred", agent_version="2.2.0", unverified="not verified for 2.2.0",
                     rule="claude.permission")
    for width in (20, 39, 40, 59, 79, 80, 119, 120, 200):
        cells = R.cells(hostile, width, now=66)
        assert sum(c.width for c in cells) == width
        text = "".join(c.text for c in cells)
        assert "\x1b" not in text and "\x07" not in text
    assert "1m05s" in "".join(c.text for c in R.cells(hostile, 80, now=66))
    assert "?[red]x" in "".join(c.text for c in R.cells(hostile, 120, now=66))  # markup stays text
    assert "claude 2.2.0*" in "".join(c.text for c in R.cells(hostile, 120, now=66))  # the unverified mark
    wide = a_card("10", "idle", 0, name="名前がとても長いエージェント")
    assert all(sum(c.width for c in R.cells(wide, w, now=1)) == w for w in (40, 80))


def test_the_daemon_going_away_and_coming_back(tmp_path: Path) -> None:
    from boardutil import start_serve

    first = start_serve()
    second: ServeProcess | None = None
    try:
        pane = new_agent(tmp_path / "stay.log", "stay")

        async def scenario() -> None:
            nonlocal second
            app = TopApp(autostart=False)
            async with app.run_test(size=(100, 30)) as pilot:
                await until(pilot, lambda: names(app) == ["stay"], "the pane listed")
                await asyncio.to_thread(first.stop)
                await until(pilot, lambda: app.message.startswith("the panewatch daemon went away"), "said")
                second = await asyncio.to_thread(start_serve)
                await until(pilot, lambda: app.message == "the daemon is back", f"found again {app.message}", 20)
                assert pane not in app.cards  # a new daemon: its own panes (the headless one ended with the first)

        run(scenario)
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_top_starts_the_daemon_when_none_runs() -> None:
    try:
        with PtyAgent([sys.executable, "-m", "panewatch", "top"], env=terminal_env(), cols=80, rows=24) as term:
            assert term.wait_for("panewatch · no agents", 30), term.text()
            assert term.wait_for("no panes (start one", 10), term.text()
            term.write(b"q")
            wait_for(lambda: not term.alive, "q quits")
        assert cli("ls").returncode == 0  # the daemon it started is there
    finally:
        cli("serve", "--stop")
