"""The real board in headless Chromium (Playwright driving Debian's `chromium`), against a real daemon.

Cards appear and change state live; an answer goes through only after confirmation and with the
fingerprint of the prompt the user saw; the live terminal view types only into a pane that is not
blocked; and the security refusals hold in a real browser (no token, DNS rebinding, a cross-site
websocket). `scripts/test` installs chromium; without it these tests fail unless PANEWATCH_SKIP=browser.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api

from boardutil import ServeProcess, cli, lock_the_database, new_agent, start_serve, wait_for, wait_state
from components import chromium_path
from panewatch.runtime.waitstore import store_path
from tmuxutil import DIALOG, Tmux, agent_cmd
from tmuxutil import tmux as tmux

CHROMIUM = chromium_path()
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--host-resolver-rules=MAP evil.test 127.0.0.1"]  # a DNS-rebinding name for our loopback
MS = 15_000
REPLY_DELAY_MS = 250

pytestmark = pytest.mark.needs("browser")  # tests/components.py: fails without it unless PANEWATCH_SKIP=browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        # launch() gives every run a fresh, throw-away user-data dir.
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any, serve: ServeProcess) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    # Record notifications instead of showing them (headless has no notification centre).
    context.add_init_script("""
        window.__notes = [];
        window.Notification = class { constructor(title, opts) { window.__notes.push({title, body: opts.body}); }
          static get permission() { return "granted"; } static requestPermission() { return "granted"; } };
    """)
    # Every reply to a request reaches the page REPLY_DELAY_MS late, after the card pushes sent behind it:
    # a loaded machine does that at random, and a test that reads what a reply shows as soon as a card
    # changed would fail once in a while; here it fails every time (the delay is far longer than the
    # test's own steps between the two, so it does not depend on their speed).
    context.add_init_script(f"""
        const Real = window.WebSocket;
        window.WebSocket = class extends Real {{
          set onmessage(handler) {{
            super.onmessage = (event) => {{
              const reply = typeof event.data === "string" && event.data.startsWith('{{"op":"result"');
              if (reply) setTimeout(() => handler(event), {REPLY_DELAY_MS}); else handler(event);
            }};
          }}
        }};
    """)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(serve.login())
    page.wait_for_selector("#conn[data-conn=live]", timeout=MS)
    yield page
    context.close()
    assert errors == []


def until_js(page: Any, expression: str, what: str = "") -> None:
    """Poll a JS expression (wait_for_function evaluates strings, which the board's CSP forbids)."""
    wait_for(lambda: page.evaluate(expression), what or expression)


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def card_sel(pane: str) -> str:
    return f'.card[data-id="{pane}"]'


def test_cards_appear_and_change_state_live(page: Any, serve: ServeProcess, tmp_path: Path) -> None:
    assert page.url == serve.base  # the token left the address bar
    cookie = next(c for c in page.context.cookies() if c["name"].startswith("panewatch_board_"))
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert page.is_visible("#empty")

    idle = new_agent(tmp_path / "a.log", name="alpha")
    busy = new_agent(tmp_path / "b.log", name="beta")
    page.wait_for_selector(f"{card_sel(idle)}[data-state=idle]", timeout=MS)
    page.wait_for_selector(f"{card_sel(busy)}[data-state=idle]", timeout=MS)
    assert page.inner_text(f"{card_sel(idle)} .name") == "alpha"
    assert page.inner_text(f"{card_sel(idle)} .agent") == "claude"
    assert page.inner_text(f"{card_sel(idle)} .decided") == "rule shortcuts-footer"
    assert page.title() == "panewatch board"

    cli("send", "--no-enter", busy, "w", check=True)
    page.wait_for_selector(f"{card_sel(busy)}[data-state=working]", timeout=MS)
    cli("send", "--no-enter", busy, "b", check=True)
    blocked = page.wait_for_selector(f"{card_sel(busy)}[data-state=blocked]", timeout=MS)
    assert blocked.inner_text().startswith("BLOCKED")
    assert page.inner_text(f"{card_sel(busy)} .question") == "Do you want to proceed?"
    assert page.inner_text(f"{card_sel(busy)} .prompt-body") == "Bash command rm -rf build/"
    labels = page.eval_on_selector_all(f"{card_sel(busy)} .option", "els => els.map(e => e.textContent)")
    assert labels == ["1. Yes", "2. Yes, and don't ask again", "3. No"]
    until_js(page, "document.title.startsWith('(1)')")
    orders = page.eval_on_selector_all(".card",
                                       "els => Object.fromEntries(els.map(e => [e.dataset.id, +e.style.order]))")
    assert orders[busy] < orders[idle]  # blocked first
    assert page.evaluate("window.__notes.length") == 1  # entering blocked notified once
    assert "Do you want to proceed?" in page.evaluate("window.__notes[0].body")
    # The time in state ticks on the page itself (the daemon only pushes changes). Not "=== '1s'": that
    # text lasts one second, which a loaded machine can skip between two ticks or two polls.
    until_js(page, f"/^[1-9][0-9]*s$/.test(document.querySelector('{card_sel(busy)} .since').textContent)")

    cli("kill", idle, check=True)
    page.wait_for_selector(card_sel(idle), state="detached", timeout=MS)


def test_answer_needs_confirmation_and_the_fingerprint_seen(page: Any, serve: ServeProcess, tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    pane = new_agent(log)
    cli("send", "--no-enter", pane, "b", check=True)
    first = wait_state(pane, "blocked")["prompt"]["fingerprint"]
    sel = card_sel(pane)
    page.wait_for_selector(f"{sel} .prompt[data-fingerprint='{first}']", timeout=MS)

    page.click(f"{sel} .option[data-option='1']")  # choosing is not answering
    page.wait_for_selector(f"{sel} .confirm", timeout=MS)
    assert "Answer “1. Yes”?" in page.inner_text(f"{sel} .confirm")
    page.click(f"{sel} .confirm-no")
    page.wait_for_selector(f"{sel} .confirm", state="detached", timeout=MS)
    assert lines(log) == []

    # The prompt changes while the user is confirming: the confirmation is dropped, nothing is sent.
    page.click(f"{sel} .option[data-option='1']")
    page.wait_for_selector(f"{sel} .confirm", timeout=MS)
    os.kill(wait_state(pane, "blocked")["pid"], signal.SIGUSR1)
    page.wait_for_selector(f"{sel} .prompt:not([data-fingerprint='{first}'])", timeout=MS)
    assert page.query_selector(f"{sel} .confirm") is None
    assert "The prompt changed before you confirmed; nothing was sent" in page.inner_text(f"{sel} .message")
    assert "curl -s" in page.inner_text(f"{sel} .prompt-body")

    # A confirmation that raced the change (it carries the old fingerprint) is refused by the daemon.
    page.evaluate(f"window.panewatchBoard.answer('{pane}', 1, '{first}')")
    page.wait_for_selector(f"{sel} .message-error", timeout=MS)
    assert "Refused: the prompt changed since you saw it. Nothing was typed" in page.inner_text(f"{sel} .message")
    assert lines(log) == []

    page.click(f"{sel} .option[data-option='3']")
    page.click(f"{sel} .confirm-yes")
    page.wait_for_selector(f"{sel}[data-state=idle]", timeout=MS)
    assert lines(log) == ["answered 3 curl -s https://example.invalid/install.sh | sh"]
    # The message comes with the answer's reply, which may land after the card's push to idle.
    page.wait_for_selector(f"{sel} .message-ok", timeout=MS)
    assert "Answered 3. No. Applied: the agent is idle." in page.inner_text(f"{sel} .message")
    until_js(page, "document.title === 'panewatch board'")


def test_live_terminal_view_types_only_when_not_blocked(page: Any, serve: ServeProcess, tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    pane = new_agent(log)
    page.click(f"{card_sel(pane)} .open-view")
    until_js(page, "document.querySelector('#term .xterm-rows')?.textContent.includes('Claude Code v2.1.332')")
    assert "interactive" in page.inner_text("#view-note")
    page.click("#term")
    page.keyboard.type("hello from the view")
    page.keyboard.press("Enter")
    wait_for(lambda: "typed hello from the view" in lines(log), "keys from the view reached the pane")
    until_js(page, "document.querySelector('#term .xterm-rows').textContent.includes('esc to interrupt')")

    cli("send", "--no-enter", pane, "b", check=True)
    page.wait_for_selector("#view-note[data-state=blocked]", timeout=MS)
    until_js(page, "document.querySelector('#term .xterm-rows').textContent.includes('Do you want to proceed?')")
    page.click("#term")
    page.keyboard.type("1")  # typing into a dialog from the view is off: answer with the buttons
    refused = page.evaluate(f"window.panewatchBoard.request({{op: 'keys', pane: '{pane}', data: '1'}})"
                            ".then(() => 'sent', (reply) => reply.error)")
    assert refused == "pane_blocked"
    assert not any(line.startswith("answered") for line in lines(log))
    page.click("#view-close")
    assert page.is_hidden("#view")


def test_security_refusals_in_the_browser(browser: Any, serve: ServeProcess) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        response = page.goto(serve.base)
        assert response.status == 401 and "not signed in" in page.inner_text("body")
        assert page.query_selector("#cards") is None
        response = page.goto(serve.base + "?token=not-the-token")
        assert response.status == 403
        # DNS rebinding: evil.test resolves to 127.0.0.1 (see ARGS) but names itself in Host.
        link = serve.login()
        response = page.goto(link.replace("127.0.0.1", "evil.test"))
        assert response.status == 421
        assert not [c for c in context.cookies() if c["name"].startswith("panewatch_board_")]

        page.goto(link)  # signed in (the refused request did not spend the link): the cookie exists here
        page.wait_for_selector("#conn[data-conn=live]", timeout=MS)

        # Another site in the same browser tries our websocket and our API.
        context.route("http://evil.test/**", lambda route: route.fulfill(
            status=200, content_type="text/html", body="<!doctype html><title>evil</title>"))
        evil = context.new_page()
        evil.goto("http://evil.test/")
        outcome = evil.evaluate("""(port) => new Promise((resolve) => {
            const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
            ws.onopen = () => resolve("open");
            ws.onclose = () => resolve("refused");
        })""", serve.port)
        assert outcome == "refused"
        fetched = evil.evaluate("""(port) => fetch(`http://127.0.0.1:${port}/api/cards`, {credentials: "include"})
            .then((r) => "read " + r.status, () => "blocked")""", serve.port)
        assert fetched == "blocked"  # no CORS header: the page cannot read the answer
        evil.close()
    finally:
        context.close()


def test_board_opens_a_private_launcher_and_no_secret_is_on_a_command_line(browser: Any, serve: ServeProcess,
                                                                           tmp_path: Path) -> None:
    """`panewatch board` hands the browser a private file's path; what it prints works once."""
    argv_log = tmp_path / "browser-argv"
    fake_browser = tmp_path / "browser"
    fake_browser.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" > {argv_log}\n")
    fake_browser.chmod(0o700)
    env = {**os.environ, "BROWSER": str(fake_browser), "DISPLAY": ":99", "PANEWATCH_BOARD": "off"}
    out = subprocess.run([sys.executable, "-m", "panewatch", "board"], capture_output=True, text=True, env=env,
                         stdin=subprocess.DEVNULL, timeout=30, check=True)
    printed = out.stdout.strip()
    argv = argv_log.read_text().splitlines()
    assert len(argv) == 2 and argv[1].startswith("file://"), argv
    assert "token" not in " ".join(argv) and "pwb_" not in " ".join(argv)  # any local user can read argv
    launcher = Path(argv[1].removeprefix("file://"))
    assert stat.S_IMODE(launcher.stat().st_mode) == 0o600 and launcher.parent == serve_runtime()
    assert printed.startswith(serve.base + "?token=pwb_") and printed not in launcher.read_text()

    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(argv[1])  # what the real browser does with its argument
        page.wait_for_url(serve.base, timeout=MS)
        page.wait_for_selector("#conn[data-conn=live]", timeout=MS)
        assert page.url == serve.base  # no token left in the address bar
    finally:
        context.close()
    # Each link works once: in a second browser both are refused, the printed one after its first use.
    first, second = browser.new_context(), browser.new_context()
    try:
        page = first.new_page()
        page.goto(printed)
        page.wait_for_selector("#conn[data-conn=live]", timeout=MS)
        assert second.new_page().goto(printed).status == 403
        spent = second.new_page()
        spent.goto(argv[1])
        spent.wait_for_selector("text=link not valid", timeout=MS)
        assert not [c for c in second.cookies() if c["name"].startswith("panewatch_board_")]
    finally:
        first.close()
        second.close()


def serve_runtime() -> Path:
    return Path(os.environ["PANEWATCH_RUNTIME_DIR"])


def selected(page: Any) -> str | None:
    ids: list[str] = page.eval_on_selector_all(".card[aria-current]", "els => els.map(e => e.dataset.id)")
    assert len(ids) <= 1, ids
    return ids[0] if ids else None


def test_keyboard_moves_between_cards_and_answers_after_a_confirmation(page: Any, serve: ServeProcess,
                                                                       tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    idle, blocked = new_agent(tmp_path / "a.log", "alpha"), new_agent(log, "beta")
    cli("send", "--no-enter", blocked, "b", check=True)
    page.wait_for_selector(f"{card_sel(blocked)}[data-state=blocked] .option[data-option='3']", timeout=MS)
    page.wait_for_selector(f"{card_sel(idle)}[data-state=idle]", timeout=MS)

    page.keyboard.press("j")  # nothing selected yet: the first card, the blocked one
    assert selected(page) == blocked
    page.keyboard.press("j")
    assert selected(page) == idle
    page.keyboard.press("ArrowDown")  # wraps around
    assert selected(page) == blocked
    page.keyboard.press("k")
    assert selected(page) == idle
    page.keyboard.press("ArrowUp")
    assert selected(page) == blocked
    page.keyboard.press("ArrowLeft")
    assert selected(page) == idle
    page.keyboard.press("1")  # an idle card has no options: nothing happens
    assert page.query_selector(".confirm") is None
    page.keyboard.press("b")  # the next blocked pane
    assert selected(page) == blocked

    # An option's key opens its confirmation; Esc cancels it; nothing was typed.
    page.keyboard.press("1")
    page.wait_for_selector(f"{card_sel(blocked)} .confirm", timeout=MS)
    assert "Answer “1. Yes”?" in page.inner_text(f"{card_sel(blocked)} .confirm")
    page.keyboard.press("Escape")
    page.wait_for_selector(f"{card_sel(blocked)} .confirm", state="detached", timeout=MS)
    assert selected(page) == blocked and lines(log) == []

    # Keys typed into the filter are the filter's.
    page.focus("#filter")
    page.keyboard.type("b")
    assert page.input_value("#filter") == "b" and selected(page) == blocked
    page.fill("#filter", "")
    page.keyboard.press("Escape")  # out of the filter: Esc there is the search box's own
    page.click(f"{card_sel(blocked)} .question")  # back on the board (a click on a card's text selects nothing)
    page.keyboard.press("b")
    assert selected(page) == blocked

    # Enter with nothing to confirm does nothing; Enter on an open confirmation answers.
    page.keyboard.press("Enter")
    assert page.query_selector(f"{card_sel(blocked)} .message") is None  # confirming would say "Sending…" at once
    assert lines(log) == []
    page.keyboard.press("3")
    page.wait_for_selector(f"{card_sel(blocked)} .confirm", timeout=MS)
    assert "Answer “3. No”?" in page.inner_text(f"{card_sel(blocked)} .confirm")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"{card_sel(blocked)}[data-state=idle]", timeout=MS)
    assert lines(log) == ["answered 3 rm -rf build/"]
    page.wait_for_selector(f"{card_sel(blocked)} .message-ok", timeout=MS)
    assert selected(page) == blocked  # the selection stays on the card through its re-renders
    page.keyboard.press("b")  # no blocked pane left: the selection stays
    assert selected(page) == blocked


def test_a_board_link_for_a_pane_opens_the_board_at_that_pane(browser: Any, serve: ServeProcess,
                                                              tmp_path: Path) -> None:
    """What a notification's click runs (`panewatch board --pane ID`): signed in, that card selected and shown."""
    panes = [new_agent(tmp_path / f"{i}.log", f"agent-{i}") for i in range(2)]
    link = json.loads(cli("board", "--json", "--pane", panes[1], check=True).stdout)["url"]
    assert link.startswith(serve.base + "?token=pwb_") and link.endswith(f"&pane={panes[1]}")
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.goto(link)
        page.wait_for_url(f"{serve.base}#pane={panes[1]}", timeout=MS)
        page.wait_for_selector(f"{card_sel(panes[1])}[aria-current]", timeout=MS)
        assert selected(page) == panes[1]
        page.evaluate(f"location.hash = '#pane={panes[0]}'")  # a second click on an open board
        page.wait_for_selector(f"{card_sel(panes[0])}[aria-current]", timeout=MS)
        assert selected(page) == panes[0]
        other = context.new_page()  # signed in already (the cookie); an unknown pane selects nothing
        other.goto(f"{serve.base}#pane=no-such-pane")
        other.wait_for_selector(card_sel(panes[1]), timeout=MS)
        assert selected(other) is None
    finally:
        context.close()


def test_this_state_is_wrong_saves_a_case_after_confirmation(page: Any, serve: ServeProcess, tmp_path: Path) -> None:
    pane = new_agent(tmp_path / "agent.log")
    cli("send", "--no-enter", pane, "b", check=True)
    sel = card_sel(pane)
    page.wait_for_selector(f"{sel}[data-state=blocked]", timeout=MS)
    corpus = tmp_path / "data" / "corpus"

    page.click(f"{sel} .report-wrong")  # asking is not saving
    page.wait_for_selector(f"{sel} .report[role=alertdialog]", timeout=MS)
    options = page.eval_on_selector_all(f"{sel} .report-expected option", "els => els.map(e => e.value)")
    assert options == ["", "working", "idle", "exited"]  # "not sure", or any state but the one shown
    page.click(f"{sel} .report-no")
    page.wait_for_selector(f"{sel} .report", state="detached", timeout=MS)
    assert not corpus.exists()

    page.click(f"{sel} .report-wrong")
    page.select_option(f"{sel} .report-expected", "idle")
    page.click(f"{sel} .report-yes")
    page.wait_for_selector(f"{sel} .message-ok", timeout=MS)
    shown = page.inner_text(f"{sel} .message")
    (folder,) = corpus.glob("claude/unknown/wrong-*")
    assert str(folder) in shown and "secrets masked" in shown
    truth = json.loads((folder / "truth.json").read_text())
    assert truth["reported"]["detected"] == "blocked" and truth["reported"]["expected"] == "idle"
    assert truth["timeline"][-1]["state"] == "idle"


def test_the_header_shows_the_minutes_lost_today_and_a_bar_per_day(page: Any, serve: ServeProcess,
                                                                   tmp_path: Path) -> None:
    pane = new_agent(tmp_path / "agent.log")
    until_js(page, "!document.querySelector('#waits').hidden", "the waits figure")
    assert page.inner_text("#waits .waits-blocked") == "blocked 0s"
    bars = page.eval_on_selector_all("#waits .waits-chart g.bar", "els => els.map(e => e.dataset.day)")
    assert len(bars) == 7 and bars == sorted(bars)
    cli("send", "--no-enter", pane, "b", check=True)
    blocked = wait_state(pane, "blocked")
    shown = blocked["since"]
    wait_for(lambda: time.time() - shown >= 2.0, "the user takes a while", timeout=10)
    cli("answer", pane, "1", "--yes", "--fingerprint", blocked["prompt"]["fingerprint"], check=True)
    # The card leaving blocked makes the page ask for the figures again: the daemon's own.
    until_js(page, "document.querySelector('#waits .waits-blocked').textContent !== 'blocked 0s'")
    (day,) = json.loads(cli("stats", "--json", check=True).stdout)["days"]
    assert day["blocked"]["count"] == 1 and day["blocked"]["seconds"] >= 2.0
    assert page.inner_text("#waits .waits-blocked") == f"blocked {int(day['blocked']['seconds'])}s"
    today = page.eval_on_selector("#waits .waits-chart g.bar:last-of-type",
                                  "e => [e.dataset.day, +e.dataset.blocked, +e.querySelector('.bar-blocked')"
                                  ".getAttribute('height')]")
    assert today[0] == day["day"] and today[1] == day["blocked"]["seconds"] and today[2] > 0
    title = page.eval_on_selector("#waits .waits-chart g.bar:last-of-type title", "e => e.textContent")
    assert f"blocked {int(day['blocked']['seconds'])}s (1)" in title


def test_the_header_says_when_the_waits_are_not_recorded_and_since_when(page: Any, serve: ServeProcess,
                                                                        tmp_path: Path) -> None:
    """Issue 23, item 8: the daemon could not write its waits (here another process holds the database's
    lock) and the board looked the same. Now the header says so, with the time, and the reason on hover."""
    pane = new_agent(tmp_path / "agent.log")
    until_js(page, "!document.querySelector('#waits').hidden", "the waits figure")
    assert page.query_selector("#waits .waits-off") is None
    holder = lock_the_database()
    try:
        cli("send", "--no-enter", pane, "b", check=True)
        blocked = wait_state(pane, "blocked")
        cli("answer", pane, "1", "--yes", "--fingerprint", blocked["prompt"]["fingerprint"], check=True)
        until_js(page, "!!document.querySelector('#waits .waits-off')", "the header's word on the recording")
        shown = page.inner_text("#waits .waits-off")
        assert shown.startswith("not recording since ") and ":" in shown
        assert page.get_attribute("#waits .waits-off", "title").startswith("database is locked")
        assert page.get_attribute("#waits .waits-off", "role") == "status"
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.communicate(timeout=10)
    assert store_path().exists()
    # Recording comes back (the daemon tries again every few seconds); the next change asks again.
    wait_for(lambda: json.loads(cli("stats", "--json", check=True).stdout)["recording"]["on"], "recording back",
             timeout=30)
    cli("send", "--no-enter", pane, "b", check=True)
    blocked = wait_state(pane, "blocked")
    cli("answer", pane, "1", "--yes", "--fingerprint", blocked["prompt"]["fingerprint"], check=True)
    until_js(page, "!document.querySelector('#waits .waits-off')", "the header's warning gone")


def test_views_and_programs_are_lines_an_answer_says_its_outcome_and_a_restart_keeps_the_tab(
        page: Any, serve: ServeProcess, tmux: Tmux) -> None:
    """One card per agent: a nested tmux view and a shell are one line each, after the agents; an answer says
    whether it took effect; a daemon restarted on the same state dir takes the open tab back without a sign-in."""
    tmux("new-session", "-d", "-s", "agents", "-x", "100", "-y", "30", agent_cmd("dialogs", DIALOG))
    tmux("new-window", "-d", "-t", "agents", "bash --norc --noprofile")
    nested = f"env -u TMUX tmux -L {tmux.name} attach -t agents"
    tmux("new-session", "-d", "-s", "work", "-x", "100", "-y", "31", nested)
    agent = wait_for(lambda: next((c for c in json.loads(cli("ls", "--json", check=True).stdout)["panes"]
                                   if c.get("target") == "agents:0.0" and c["state"] == "blocked"), None),
                     "the agent's card", 30)
    sel = card_sel(agent["id"])
    page.wait_for_selector(f"{sel} .prompt", timeout=MS)
    page.wait_for_selector(f".card-line.kind-view:has-text('view of #{agent['id']}')", timeout=MS)
    page.wait_for_selector(".card-line.kind-other:has-text('bash: no agent')", timeout=MS)
    assert page.query_selector(".card-line .option") is None  # nothing to answer on a line
    until_js(page, "document.querySelector('#summary').textContent === '1 blocked'", "only the agent counted")

    page.click(f"{sel} .option[data-option='1']")
    page.click(f"{sel} .confirm-yes")
    page.wait_for_selector(f"{sel} .message-ok", timeout=MS)
    assert "Answered 1. Yes. Applied: the agent is" in page.inner_text(f"{sel} .message")

    port = serve.port
    assert "stopped" in cli("serve", "--stop", check=True).stdout
    page.wait_for_selector("#conn[data-conn=down]", timeout=MS)
    again = start_serve()
    try:
        assert again.port == port  # the remembered port, free again at once
        page.wait_for_selector("#conn[data-conn=live]", timeout=30_000)  # the same tab, its cookie still good
        page.wait_for_selector(f"{sel}", timeout=30_000)  # the same card id after the restart
    finally:
        again.stop()
