"""Pane commands against the daemon: `ls`, `new`, `send`, `answer`, `attach`, `kill`.

Every pane is named by its id (or its name, when unique) as `panewatch ls` shows it. Typing into a
pane goes through the input guard in the process that owns the pane: `send` is refused with the
prompt shown while the pane is blocked, and `answer` is bound to the fingerprint of the prompt the
user saw.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from panewatch.board import client
from panewatch.board.client import DaemonNotRunning
from panewatch.board.model import Card, decided_by, format_duration, in_state, stands_for_agent
from panewatch.board.rpc import RemoteError


def register(subparsers: Any) -> None:
    ls = subparsers.add_parser("ls", help="list the panes the board knows (blocked first)")
    ls.add_argument("--json", action="store_true", help="one JSON object: {\"panes\": [CARD, ...]}")
    ls.add_argument("--all", action="store_true", help="also the panes that hold no agent (shells, pagers, …)")
    ls.set_defaults(func=cmd_ls)

    new = subparsers.add_parser("new", help="start CMD in a new headless pane owned by the daemon")
    new.add_argument("--name", help="the pane's name on the board (default: the command's name)")
    new.add_argument("--cwd", type=Path, help="working directory (default: this one)")
    new.add_argument("--agent", metavar="ID", help="the agent's manifest id (default: identified live)")
    new.add_argument("--size", default="120x32", metavar="COLSxROWS", help="terminal size (default 120x32)")
    new.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ...")
    new.set_defaults(func=cmd_new)

    send = subparsers.add_parser("send", help="type TEXT (and Enter) into a pane; refused while it is blocked",
                                 usage="%(prog)s [--no-enter] ID [--] TEXT ...")
    send.add_argument("--no-enter", action="store_true", help="do not press Enter after the text")
    send.add_argument("pane", metavar="ID")
    # Everything after ID is the text, word for word: `--` and dashes too (`send 3 git checkout -- a.py`).
    # nargs="+" dropped the text's `--` words (argparse takes them for its own). Options go before ID; a
    # `--` right after ID lets the text start with a dash (`send 3 -- --help`).
    send.add_argument("text", nargs=argparse.REMAINDER, metavar="TEXT",
                      help="the words to type, joined by spaces, as written (options go before ID)")
    send.set_defaults(func=cmd_send)

    answer = subparsers.add_parser("answer", help="answer a blocked pane's prompt, after showing it and "
                                                  "asking for confirmation")
    answer.add_argument("pane", metavar="ID")
    answer.add_argument("option", metavar="OPTION", help="number, key, kind (allow_once, reject…) or label")
    answer.add_argument("--yes", action="store_true", help="do not ask (requires --fingerprint)")
    answer.add_argument("--fingerprint", metavar="FP", help="the fingerprint of the prompt being answered "
                                                            "(as `panewatch ls` shows it)")
    answer.set_defaults(func=cmd_answer)

    attach = subparsers.add_parser("attach", help="this terminal becomes the pane until the detach key "
                                                  "(a tmux pane: tmux attaches to its window)")
    attach.add_argument("pane", metavar="ID")
    attach.add_argument("--detach-key", default="^\\", metavar="KEY",
                        help="the key that detaches: ^\\ (Ctrl-\\, the default) or ^] (Ctrl-])")
    attach.add_argument("--stream", action="store_true",
                        help="a tmux pane: stream it through panewatch (detach key) instead of attaching tmux")
    attach.set_defaults(func=cmd_attach)

    kill = subparsers.add_parser("kill", help="end a headless pane, or remove an exited pane from the board")
    kill.add_argument("pane", metavar="ID")
    kill.set_defaults(func=cmd_kill)


def _fail(command: str, exc: RemoteError) -> int:
    print(f"panewatch {command}: {exc}", file=sys.stderr)
    return 1


def prompt_lines(prompt: dict[str, Any] | None, indent: str = "    ") -> list[str]:
    if not prompt:
        return [f"{indent}(no prompt parsed from the screen)"]
    lines = [f"{indent}{prompt.get('question') or '(question not on screen)'}"]
    if prompt.get("body"):
        lines.append(f"{indent}  {prompt['body'][:200]}")
    lines += [f"{indent}  {o['number']}. {o['label']}" for o in prompt.get("options", [])]
    if prompt.get("fingerprint"):
        lines.append(f"{indent}  fingerprint {prompt.get('fingerprint')}")
    else:  # a hook-only pane (board/hookonly.py): no screen, no options, nothing to answer from here
        lines.append(f"{indent}  (known from its hooks only: answer it where it runs)")
    return lines


def host_lines(hosts: dict[str, dict[str, Any]], now: float | None = None) -> list[str]:
    """One line per [[remote]] host whose link is not simply up (an up host's panes speak for it), so a dead
    link is said once at the top rather than guessed from its panes' `unreachable`."""
    now = time.time() if now is None else now
    lines = []
    for label, link in sorted(hosts.items()):
        since = format_duration(max(0.0, now - float(link.get("since") or now)))
        if link.get("link") == "down":
            lines.append(f"host {label}: link down for {since}, retrying — {link.get('error') or 'no answer'}")
        elif link.get("link") == "connecting":
            lines.append(f"host {label}: connecting for {since}")
    return lines


def _short_path(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home):] if path == home or path.startswith(home + os.sep) else path


def cmd_ls(ns: argparse.Namespace) -> int:
    try:
        listed: dict[str, Any] = asyncio.run(client.call("list"))
    except DaemonNotRunning as exc:
        from panewatch.board.tmux import agents_in_tmux

        if not agents_in_tmux():
            return _fail("ls", exc)
        # agents `new` started in tmux outlive the daemon: listing them starts one to watch them again
        try:
            listed = asyncio.run(client.call("list", autostart=True))
        except RemoteError as again:
            return _fail("ls", again)
    except RemoteError as exc:
        return _fail("ls", exc)
    cards: list[Card] = listed["cards"]
    hosts: dict[str, dict[str, Any]] = listed.get("hosts") or {}
    if ns.json:
        print(json.dumps({"panes": cards, "hosts": hosts, "notes": listed.get("notes") or []}, ensure_ascii=False))
        return 0
    for line in [*host_lines(hosts), *(str(n) for n in listed.get("notes") or [])]:
        print(plain(line))
    agents = [c for c in cards if stands_for_agent(c)]
    views = [c for c in cards if c.get("kind") == "view"]
    others = [c for c in cards if c.get("kind") == "other"]
    if not cards:
        print("no panes (start one with `panewatch run -- CMD` or `panewatch new -- CMD`)")
        return 0
    if agents or ns.all:
        _table(agents + (others if ns.all else []))
    elif not views:
        print("no agents (start one with `panewatch run -- CMD`, `panewatch new -- CMD`, or in any tmux pane)")
    for card in views:
        shown = f"view of {card['view_of']}" if card.get("view_of") else "view"
        what = card.get("shows") or card.get("what") or ""
        print(plain(f"{card['id']}  {shown} ({what})  {card.get('target') or card.get('name') or ''}"))
    if others and not ns.all:
        kinds = Counter(str(c.get("what") or "?").split(" ")[0] for c in others)
        listing = ", ".join(f"{n} {what}" for what, n in kinds.most_common())
        print(plain(f"also watching {len(others)} pane{'s' if len(others) > 1 else ''} without an agent ({listing}): "
                    "`panewatch ls --all` lists them"))
    return 0


def _table(cards: list[Card]) -> None:
    rows: list[tuple[str, ...]] = [("ID", "NAME", "AGENT", "STATE", "FOR", "WHERE", "DECIDED BY")]
    for card in cards:
        agent = card.get("agent") or ("-" if stands_for_agent(card) else f"({card.get('what') or 'no agent'})")
        rows.append((str(card["id"]), str(card.get("name", ""))[:24], agent, str(card["state"]),
                     format_duration(in_state(card)), _where(card), decided_by(card)))
    rows = [tuple(plain(cell) for cell in row) for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    print("  ".join(cell.ljust(w) for cell, w in zip(rows[0], widths, strict=False)) + "  " + rows[0][-1])
    for row, card in zip(rows[1:], cards, strict=True):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])
        if card.get("unverified"):  # the agent's version is outside the manifest's verified ones
            print(plain(f"    {card['unverified']}"))
        if card.get("answer"):
            print(plain(f"    last answer {card['answer'].get('option')}: {card['answer'].get('outcome')}"))
        if card["state"] == "blocked":
            print("\n".join(plain(line) for line in prompt_lines(card.get("prompt"))))


def _where(card: Card) -> str:
    """Where the pane is: its tmux target and window, else (a hook-only pane) its terminal, tty and directory, else
    its working directory."""
    if card.get("where"):
        return str(card["where"])
    target = str(card.get("target") or "")
    window = str(card.get("window") or "")
    cwd = _short_path(str(card.get("cwd") or ""))
    place = f"{target} [{window}]" if target and window else target
    return f"{place} {cwd}".strip() if place else cwd


def plain(text: str) -> str:
    """A line as the terminal should show it: no control characters from a pane's title, a remote session's
    name or an agent's question (they would move the cursor or recolour the user's terminal)."""
    return "".join(ch if ch.isprintable() or ch == "\t" else "?" for ch in text)


def cmd_new(ns: argparse.Namespace) -> int:
    argv = list(ns.command)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("panewatch new: no command given (usage: panewatch new [--name N] [--cwd DIR] -- CMD ...)",
              file=sys.stderr)
        return 2
    try:
        cols, rows = (int(x) for x in ns.size.lower().split("x"))
    except ValueError:
        print(f"panewatch new: --size {ns.size!r} is not COLSxROWS", file=sys.stderr)
        return 2
    cwd = str((ns.cwd or Path.cwd()).resolve())
    if "/" in argv[0] and not os.path.isabs(argv[0]):  # ./script means here, not in the pane's --cwd
        argv[0] = os.path.abspath(argv[0])
    try:
        card = asyncio.run(client.call("new", autostart=True, argv=argv, name=ns.name, cwd=cwd, env=dict(os.environ),
                                       agent=ns.agent, cols=cols, rows=rows))["card"]
    except RemoteError as exc:
        return _fail("new", exc)
    print(card["id"])
    return 0


def cmd_send(ns: argparse.Namespace) -> int:
    if not ns.text:
        print("panewatch send: no TEXT to type (usage: panewatch send [--no-enter] ID [--] TEXT ...)", file=sys.stderr)
        return 2
    try:
        result = asyncio.run(client.call("send", pane=ns.pane, text=" ".join(ns.text), enter=not ns.no_enter))
    except RemoteError as exc:
        if exc.kind == "pane_blocked":
            print(f"panewatch send: pane {ns.pane} is blocked on a prompt; nothing was typed:", file=sys.stderr)
            print("\n".join(prompt_lines(exc.data.get("prompt"))), file=sys.stderr)
            print(f"answer it with: panewatch answer {ns.pane} OPTION", file=sys.stderr)
            return 1
        if exc.kind == "pane_busy":
            print(f"panewatch send: pane {ns.pane} is busy changing (its screen did not settle in time); nothing "
                  "was typed: try again in a moment", file=sys.stderr)
            return 1
        if exc.kind == "not_submitted":
            print(f"panewatch send: {exc}. Press Enter in the pane, or `panewatch send {ns.pane} ''` to press it "
                  "from here", file=sys.stderr)
            return 1
        return _fail("send", exc)
    if result.get("submitted"):
        print(f"sent: {result.get('how')} ({result.get('elapsed')} s after Enter)")
    elif not ns.no_enter:
        print(f"typed; {result.get('how') or 'whether the agent took it cannot be told'}")
    return 0


def _choose(prompt: dict[str, Any], option: str) -> dict[str, Any] | None:
    """The option `option` names, as Prompt.option() would pick it (number, kind, key, label)."""
    options: list[dict[str, Any]] = prompt.get("options", [])
    text = option.strip()
    for test in (lambda o: str(o["number"]) == text, lambda o: o["kind"] == text, lambda o: o["key"] == text,
                 lambda o: o["label"].casefold() == text.casefold()):
        found = [o for o in options if test(o)]
        if found:
            return found[0]
    return None


def cmd_answer(ns: argparse.Namespace) -> int:
    if ns.yes and not ns.fingerprint:
        print("panewatch answer: --yes needs --fingerprint FP (the prompt you decided on; `panewatch ls` shows it)",
              file=sys.stderr)
        return 2
    try:
        card: Card = asyncio.run(client.call("prompt", pane=ns.pane))["card"]
    except RemoteError as exc:
        return _fail("answer", exc)
    if card.get("kind") in ("view", "other"):
        shows = f"; it shows pane {card['view_of']}: answer there" if card.get("view_of") else ""
        print(f"panewatch answer: pane {card['id']} runs {card.get('what') or 'a program'}, not an agent{shows}; "
              "nothing was typed", file=sys.stderr)
        return 1
    if card["state"] != "blocked":
        print(f"panewatch answer: pane {card['id']} is {card['state']}, not blocked: there is no prompt to answer",
              file=sys.stderr)
        return 1
    prompt = card.get("prompt") or {}
    print(f"pane {card['id']} ({card.get('name')}, {card.get('agent') or 'agent unknown'}) asks:")
    print("\n".join(prompt_lines(prompt)))
    chosen = _choose(prompt, ns.option)
    if chosen is None:
        print(f"panewatch answer: the prompt has no option {ns.option!r}", file=sys.stderr)
        return 1
    fingerprint = ns.fingerprint or prompt.get("fingerprint", "")
    if not ns.yes:
        if not sys.stdin.isatty():
            print("panewatch answer: not asking without a terminal: pass --yes --fingerprint "
                  f"{prompt.get('fingerprint')}", file=sys.stderr)
            return 2
        reply = input(f"Answer {chosen['number']}. {chosen['label']!r}? [y/N] ").strip().lower()
        if reply not in ("y", "yes"):
            print("not answered")
            return 1
    try:
        result = asyncio.run(client.call("answer", pane=card["id"], option=str(chosen["number"]),
                                         fingerprint=fingerprint))
    except RemoteError as exc:
        if exc.kind == "prompt_changed":
            print("panewatch answer: refused: the prompt changed since it was shown; nothing was typed. "
                  "Now on screen:", file=sys.stderr)
            print("\n".join(prompt_lines(exc.data.get("prompt"))), file=sys.stderr)
            return 1
        return _fail("answer", exc)
    said = f"answered {result['option']['number']}. {result['option']['label']}: {result.get('outcome')}"
    if result.get("applied"):
        print(f"{said} ({result.get('elapsed')} s)")
        return 0
    print(f"panewatch answer: {said}", file=sys.stderr)
    return 1


def cmd_attach(ns: argparse.Namespace) -> int:
    from panewatch.board.attach import DETACH_KEYS, attach

    key = DETACH_KEYS.get(ns.detach_key)
    if key is None:
        print(f"panewatch attach: --detach-key must be one of {', '.join(DETACH_KEYS)}", file=sys.stderr)
        return 2
    try:
        if not ns.stream:
            _go_there(ns.pane)  # returns only when the pane is one panewatch streams itself
        return attach(ns.pane, key, ns.detach_key)
    except RemoteError as exc:
        return _fail("attach", exc)


def _go_there(pane: str) -> None:
    """Go to the pane as `top`'s Enter does (board/goto.py): inside the tmux that holds it, this client switches
    there; a tmux pane elsewhere (or a remote host's): this process becomes the tmux client showing its window.
    A pane panewatch holds itself: return (the caller streams it)."""
    from panewatch.board import goto

    async def find() -> goto.Route:
        card: Card = (await client.call("prompt", pane=pane))["card"]
        return await goto.route(card, client.call, inside=goto.inside_tmux())

    route = asyncio.run(find())
    if route.how == "stream":
        return
    if route.how == "say":
        raise RemoteError("not_shown", route.message)
    if route.message:
        print(f"panewatch attach: {route.message}", file=sys.stderr)
    sys.stdout.flush()
    try:
        os.execvpe(route.argv[0], list(route.argv), goto.run_env(route))
    except OSError as exc:
        raise RemoteError("exec", f"could not run {route.argv[0]}: {exc.strerror}") from None


def cmd_kill(ns: argparse.Namespace) -> int:
    try:
        asyncio.run(client.call("close", pane=ns.pane))
    except RemoteError as exc:
        return _fail("kill", exc)
    return 0



