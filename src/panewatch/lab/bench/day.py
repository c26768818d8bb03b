"""`panewatch bench day --panes N --minutes M`: a simulated day in tmux, scored against the agents' own truth.

One private tmux server holds N panes of a real day (issue 22): fake agents drawing Claude Code's screens
(lab/fakeagent.py, each writing its TRUE state to a side file), one of them under `panewatch run` inside a pane,
two on a "remote" host behind a real sshd on loopback ([[remote]]); and around them the panes that only look
like agents: shells that print dialogs (`cat` of one, `panewatch ls`, a transcript grep), a pager on a dialog,
a nested `tmux attach` view of the agents' session, and `ssh devbox tmux attach` (a view through ssh). A real
`panewatch serve` watches all of it with the `[notify] command` backend logging each call; a bot user answers
every dialog through `panewatch answer` (fingerprint from `ls --json`) after a human delay, and types the next task
through `panewatch send`; the shells are typed into as a user types (tmux send-keys). The daemon's cards are
read every OBSERVE seconds.

Per run (targets: 0 false, 0 missed, 0 duplicates, every notification within 1 s, every answer applied):
    false "needs you"  a card blocked while nothing there waits on the user: a pane that is no agent (a shell,
                       a pager), or an agent whose truth was not blocked (count of episodes, their seconds)
    missed dialogs     a true blocked episode with no card of that agent blocked during it
    duplicate cards    a view of an agent's pane (nested tmux, ssh view, a run's host pane) blocked, or two
                       cards of one agent blocked at once
    notifications      blocked calls vs true blocked episodes, their latency (call - truth), and calls that
                       name no agent
    answers / sends    `panewatch answer` that said applied / all; `panewatch send` that said sent / all
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from panewatch.runtime.tmux_status import ask
from panewatch.testing.sshd import Sshd

OBSERVE = 0.25  # seconds between reads of the daemon's cards
TOLERANCE = 1.0  # seconds of truth around a blocked card that still count it right (detection and answer lag)
NOTIFY_WITHIN = 1.0
ANSWER_DELAY, TASK_DELAY, SHELL_EVERY = (2.0, 6.0), (3.0, 8.0), (6.0, 15.0)
TASKS = ("fix the failing parser test", "run the linters and fix what they say", "update the changelog",
         "make the build reproducible", "add a test for the empty input case")
DIALOG = "\n".join(["─" * 100, " Bash command", "   rm -rf build/", "", " Do you want to proceed?", " ❯ 1. Yes",
                    "   2. Yes, and don't ask again", "   3. No", "", " Esc to cancel · Tab to amend", ""])
AGENT = ("import sys\nfrom panewatch.lab.fakeagent import main\n"  # named …/claude-code/cli.js: Claude Code by process
         "sys.exit(main())\n")


@dataclass
class Pane:
    role: str  # agent | run | remote | shell | pager | view | sshview
    name: str
    tmux_pane: str = ""  # on the day's server (the remote's own for a remote agent)
    truth: Path | None = None  # the fake agent's side file
    card: str = ""  # its card id on the board, once seen

    @property
    def agent(self) -> bool:
        return self.role in ("agent", "run", "remote")


@dataclass
class Day:
    root: Path
    env: dict[str, str]
    panes: list[Pane] = field(default_factory=list)
    observed: list[tuple[float, list[dict[str, Any]]]] = field(default_factory=list)
    answers: list[tuple[int, str]] = field(default_factory=list)  # (exit code, what it said)
    sends: list[tuple[int, str]] = field(default_factory=list)
    sshd: Sshd | None = None


def plan(n: int) -> list[str]:
    """The roles of a day of `n` panes (n >= 10): about half agents, the rest what surrounds them."""
    fixed = ["run", "remote", "remote", "pager", "view", "sshview", "shell", "shell", "shell"]
    agents = max(1, n - len(fixed) - max(0, (n - 20) // 4))
    return ["agent"] * agents + fixed + ["shell"] * max(0, n - agents - len(fixed))


def _tmux(day: Day, *args: str) -> str:
    done = subprocess.run(["tmux", "-L", "day", *args], env=day.env, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"tmux {' '.join(args[:2])}: {done.stderr.strip()}")
    return done.stdout.strip()


def _pw(day: Day, *args: str, timeout: float = 40.0) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-m", "panewatch", *args], env=day.env, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", "timed out")


def _rpc(day: Day, op: str, **params: Any) -> dict[str, Any] | None:
    return ask(op, timeout=3.0, socket_path=str(day.root / "run" / "board.sock"), **params)


def setup(root: Path, n: int, time_scale: float, seed: int) -> Day:
    home = root / "home"
    for d in ("config", "state", "data", "run", "cache", "tmux", "truth", "home/.ssh", "agents/claude-code"):
        (root / d).mkdir(parents=True, exist_ok=True, mode=0o700)
    notify_log, notifier = root / "notify.jsonl", root / "notify-log"
    notifier.write_text(f"#!{sys.executable}\nimport json, os, time\n"
                        "call = {'t': time.time(), **{k[10:].lower(): v for k, v in os.environ.items() "
                        "if k.startswith('PANEWATCH_')}}\n"
                        f"open({str(notify_log)!r}, 'a').write(json.dumps(call) + '\\n')\n")
    notifier.chmod(0o755)
    agent = root / "agents" / "claude-code" / "cli.js"
    agent.write_text(AGENT)
    (root / "dialog.txt").write_text(DIALOG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PANEWATCH_") and k not in ("TMUX", "TMUX_PANE")}
    env.update(HOME=str(home), TMUX_TMPDIR=str(root / "tmux"), PANEWATCH_CONFIG_DIR=str(root / "config"),
               PANEWATCH_STATE_DIR=str(root / "state"), PANEWATCH_DATA_DIR=str(root / "data"),
               PANEWATCH_RUNTIME_DIR=str(root / "run"), PANEWATCH_CACHE_DIR=str(root / "cache"),
               PANEWATCH_BOARD="connect", LANG="C.UTF-8", LC_ALL="C.UTF-8", TERM="xterm-256color")
    day = Day(root, env)
    roles = plan(n)
    config = f'[notify]\nbackends = ["command"]\ncommand = {json.dumps(str(notifier))}\ncooldown = 0\n'
    if "remote" in roles:
        day.sshd = Sshd(root / "sshd").start()
        shutil.copy(day.sshd.ssh_config, home / ".ssh" / "config")
        config += f'\n[[remote]]\nhost = "{day.sshd.alias}"\n'
    (root / "config" / "config.toml").write_text(config)
    rng = random.Random(seed)

    def fake(k: int) -> str:
        truth = root / "truth" / f"{k}.jsonl"
        return shlex.join([sys.executable, str(agent), "--seed", str(seed * 100 + k), "--truth", str(truth),
                           "--time-scale", repr(time_scale)])

    conf = root / "tmux.conf"
    conf.write_text("set -g default-size 120x32\nset -g history-limit 2000\n")
    _tmux(day, "-f", str(conf), "new-session", "-d", "-s", "work", "-x", "120", "-y", "32", "-n", "w0",
          "bash --norc --noprofile")
    first = True
    for k, role in enumerate(roles):
        truth = root / "truth" / f"{k}.jsonl" if role in ("agent", "run", "remote") else None
        if role == "agent":
            target = "agents:" if _has(day, "agents") else None
            if target is None:
                pane = _tmux(day, "new-session", "-d", "-s", "agents", "-x", "120", "-y", "32", "-P", "-F",
                             "#{pane_id}", fake(k))
            else:
                pane = _tmux(day, "new-window", "-d", "-t", target, "-P", "-F", "#{pane_id}", fake(k))
            day.panes.append(Pane(role, f"agent {k}", pane, truth))
            continue
        if role == "remote":
            assert day.sshd is not None
            if "remote" not in day.sshd.tmux("list-sessions", "-F", "#{session_name}", check=False).split():
                day.sshd.tmux("new-session", "-d", "-s", "remote", "-x", "120", "-y", "32", fake(k))
            else:
                day.sshd.tmux("new-window", "-d", "-t", "remote:", fake(k))
            pane = day.sshd.tmux("display-message", "-p", "-t", "remote:$", "#{pane_id}").strip()
            day.panes.append(Pane(role, f"remote {k}", pane, truth))
            continue
        command = {"run": f"{shlex.quote(sys.executable)} -m panewatch run -- {fake(k)}",
                   "pager": f"less {shlex.quote(str(root / 'dialog.txt'))}",
                   "view": "env -u TMUX tmux -L day attach -t agents",
                   "sshview": f"ssh -F {shlex.quote(str(home / '.ssh' / 'config'))} -t "
                              f"{day.sshd.alias if day.sshd else 'devbox'} tmux attach -t remote",
                   "shell": "bash --norc --noprofile"}[role]
        if first and role == "shell":
            pane, first = _tmux(day, "display-message", "-p", "-t", "work:w0", "#{pane_id}"), False
        else:
            pane = _tmux(day, "new-window", "-d", "-t", "work:", "-P", "-F", "#{pane_id}", command)
        day.panes.append(Pane(role, f"{role} {k}", pane, truth))
    for p in day.panes:
        if p.role == "shell":
            _tmux(day, "send-keys", "-t", p.tmux_pane, "PS1='$ '; unset HISTFILE; clear", "Enter")
    rng.shuffle(day.panes)
    return day


def _has(day: Day, session: str) -> bool:
    return subprocess.run(["tmux", "-L", "day", "has-session", "-t", f"={session}"], env=day.env,
                          capture_output=True, timeout=10).returncode == 0


def _card_of(day: Day, pane: Pane, cards: list[dict[str, Any]]) -> dict[str, Any] | None:
    if pane.role == "remote":
        return next((c for c in cards if c.get("origin") == "remote" and c.get("tmux_pane") == pane.tmux_pane), None)
    if pane.role == "run":
        return next((c for c in cards if c.get("origin") == "run"), None)
    return next((c for c in cards if c.get("origin") == "tmux" and c.get("tmux_pane") == pane.tmux_pane), None)


def _truth(pane: Pane) -> list[tuple[float, str]]:
    if pane.truth is None or not pane.truth.exists():
        return []
    out = []
    for line in pane.truth.read_text().splitlines():
        with contextlib.suppress(ValueError, KeyError):
            entry = json.loads(line)
            out.append((float(entry["t"]), str(entry["state"])))
    return out


async def _observe(day: Day, stop: asyncio.Event) -> None:
    while not stop.is_set():
        reply = await asyncio.to_thread(_rpc, day, "list")
        if reply is not None:
            day.observed.append((time.time(), reply["cards"]))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), OBSERVE)


async def _bot(day: Day, pane: Pane, stop: asyncio.Event, rng: random.Random) -> None:
    """The user of one agent: answers each dialog after a while, types the next task after a turn."""
    seen = 0
    await asyncio.sleep(rng.uniform(*TASK_DELAY))
    await _send(day, pane)
    while not stop.is_set():
        truth = _truth(pane)
        if len(truth) == seen:
            await asyncio.sleep(0.2)
            continue
        seen = len(truth)
        state = truth[-1][1]
        if state == "blocked":
            await asyncio.sleep(rng.uniform(*ANSWER_DELAY))
            card = _card_of(day, pane, day.observed[-1][1]) if day.observed else None
            prompt = (card or {}).get("prompt") or {}
            if card is None or not prompt.get("fingerprint"):
                day.answers.append((-1, f"{pane.name}: no blocked card with a prompt to answer"))
                continue
            done = await asyncio.to_thread(_pw, day, "answer", str(card["id"]), "1", "--yes", "--fingerprint",
                                           str(prompt["fingerprint"]))
            day.answers.append((done.returncode, (done.stdout + done.stderr).strip()))
        elif state == "idle":
            await asyncio.sleep(rng.uniform(*TASK_DELAY))
            await _send(day, pane)


async def _send(day: Day, pane: Pane) -> None:
    card = _card_of(day, pane, day.observed[-1][1]) if day.observed else None
    if card is None:
        day.sends.append((-1, f"{pane.name}: no card"))
        return
    done = await asyncio.to_thread(_pw, day, "send", str(card["id"]), random.choice(TASKS))
    day.sends.append((done.returncode, (done.stdout + done.stderr).strip()))


async def _shells(day: Day, stop: asyncio.Event, rng: random.Random) -> None:
    """What a user does in their shells all day: shows dialogs' words, lists panewatch's panes, clears."""
    shells = [p for p in day.panes if p.role == "shell"]
    dialog = shlex.quote(str(day.root / "dialog.txt"))
    moves = [f"cat {dialog}", "panewatch ls", f"grep -n 'Do you want' {dialog}", "clear", f"tail -5 {dialog}"]
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), rng.uniform(*SHELL_EVERY))
        if shells and not stop.is_set():
            shell = rng.choice(shells)
            with contextlib.suppress(RuntimeError):
                _tmux(day, "send-keys", "-t", shell.tmux_pane, rng.choice(moves), "Enter")


async def live(day: Day, minutes: float, seed: int) -> float:
    daemon = subprocess.Popen([sys.executable, "-m", "panewatch", "serve", "--quiet", "--log-file",
                               str(day.root / "daemon.log")], env=day.env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = asyncio.Event()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            reply = _rpc(day, "list")
            cards = reply["cards"] if reply else []
            if all(_card_of(day, p, cards) is not None for p in day.panes if p.role != "run"):
                break
            await asyncio.sleep(0.5)
        rng = random.Random(seed)
        started = time.time()
        tasks = [asyncio.create_task(_observe(day, stop)), asyncio.create_task(_shells(day, stop, rng))]
        tasks += [asyncio.create_task(_bot(day, p, stop, random.Random(f"{seed}:{p.name}")))
                  for p in day.panes if p.agent]
        await asyncio.sleep(minutes * 60)
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        return started
    finally:
        _pw(day, "serve", "--stop", timeout=30)
        if daemon.poll() is None:
            daemon.terminate()
            daemon.wait(10)


# -- scoring -------------------------------------------------------------------------------------------

def _episodes(truth: list[tuple[float, str]], start: float, end: float) -> list[tuple[float, float]]:
    out = []
    for (t, state), nxt in zip(truth, [*truth[1:], (end, "end")], strict=True):
        if state == "blocked" and start <= t < end:
            out.append((t, nxt[0]))
    return out


def _blocked_at(truth: list[tuple[float, str]], t: float) -> bool:
    """The truth is blocked somewhere within TOLERANCE of `t`."""
    for (a, state), nxt in zip(truth, [*truth[1:], (float("inf"), "end")], strict=True):
        if state == "blocked" and a - TOLERANCE <= t <= nxt[0] + TOLERANCE:
            return True
    return False


def score(day: Day, started: float, ended: float) -> dict[str, Any]:
    role_of: dict[str, Pane] = {}
    for _, cards in day.observed:
        for each in day.panes:
            card = _card_of(day, each, cards)
            if card is not None:
                role_of[str(card["id"])] = each
    truth = {p.name: _truth(p) for p in day.panes if p.agent}
    false_episodes, false_seconds, dup_episodes = 0, 0.0, 0
    open_false: set[str] = set()
    open_dup: set[str] = set()
    blocked_cards: dict[str, list[float]] = {}
    for t, cards in day.observed:
        now_false, now_dup = set(), set()
        per_agent: dict[str, int] = {}
        for card in cards:
            if card.get("state") != "blocked":
                continue
            found = role_of.get(str(card["id"]))
            key = str(card["id"])
            if found is None or found.role in ("shell", "pager"):
                now_false.add(key)
            elif found.role in ("view", "sshview"):
                now_dup.add(key)
            elif not _blocked_at(truth[found.name], t):
                now_false.add(key)
            else:
                per_agent[found.name] = per_agent.get(found.name, 0) + 1
                blocked_cards.setdefault(found.name, []).append(t)
        now_dup |= {f"two:{name}" for name, count in per_agent.items() if count > 1}
        false_episodes += len(now_false - open_false)
        dup_episodes += len(now_dup - open_dup)
        false_seconds += OBSERVE * len(now_false)
        open_false, open_dup = now_false, now_dup
    expected: list[tuple[str, float, float]] = []
    missed = 0
    for name, entries in truth.items():
        for begin, end in _episodes(entries, started, ended - TOLERANCE):
            expected.append((name, begin, end))
            seen = blocked_cards.get(name, [])
            if not any(begin - TOLERANCE <= t <= end + TOLERANCE for t in seen) and end - begin > OBSERVE * 2:
                missed += 1
    calls = [json.loads(line) for line in (day.root / "notify.jsonl").read_text().splitlines()] \
        if (day.root / "notify.jsonl").exists() else []
    refs: dict[str, Pane] = {}
    for _, cards in day.observed:
        for card in cards:
            owner = role_of.get(str(card["id"]))
            if owner is not None and owner.agent:
                for ref in (card.get("id"), card.get("name"), card.get("target"), card.get("tmux_pane")):
                    if ref:
                        refs.setdefault(str(ref), owner)
    latencies, stray = [], 0
    told: set[tuple[str, float]] = set()
    for call in (c for c in calls if c.get("state") == "blocked" and started <= float(c["t"])):
        at, named = float(call["t"]), refs.get(str(call.get("pane")))
        # the episode this call is about: the agent's, begun before it (a hook may lead a little), not yet over
        episode = next((e for e in expected if named is not None and e[0] == named.name
                        and e[1] - TOLERANCE <= at <= e[2] + TOLERANCE), None)
        if episode is None:
            if at <= ended - TOLERANCE:  # (a call after the scored window is about a dialog not counted)
                stray += 1
            continue
        told.add((episode[0], episode[1]))
        latencies.append(at - episode[1])
    return {
        "false": false_episodes, "false_seconds": round(false_seconds, 1), "missed": missed, "duplicates": dup_episodes,
        "dialogs": len(expected), "notified": len(told), "stray_notifications": stray,
        "notify_latency": latencies,
        "answers": (sum(1 for rc, out in day.answers if rc == 0 and "applied" in out), len(day.answers)),
        "sends": (sum(1 for rc, out in day.sends if rc == 0 and out.startswith("sent")), len(day.sends)),
        "answer_failures": [out for rc, out in day.answers if rc != 0][:5],
        "send_failures": [out for rc, out in day.sends if rc != 0][:5],
        "panes": len(day.panes), "roles": {r: sum(1 for p in day.panes if p.role == r) for r in dict.fromkeys(
            p.role for p in day.panes)},
    }


def report(result: dict[str, Any], minutes: float) -> str:
    lat = result["notify_latency"]
    within = sum(1 for x in lat if x <= NOTIFY_WITHIN)
    med = f"{statistics.median(lat):.2f}" if lat else "-"
    worst = f"{max(lat):.2f}" if lat else "-"
    answers, sends = result["answers"], result["sends"]
    rows = [
        ("panes", f"{result['panes']} ({', '.join(f'{n} {r}' for r, n in result['roles'].items())})"),
        ("minutes", f"{minutes:g}"),
        ('false "needs you"', f"{result['false']} ({result['false_seconds']} s)"),
        ("missed dialogs", f"{result['missed']} of {result['dialogs']}"),
        ("duplicate cards", str(result["duplicates"])),
        ("notifications", f"{result['notified']} of {result['dialogs']} dialogs; {within} within {NOTIFY_WITHIN:g} s "
                          f"(median {med} s, max {worst} s); {result['stray_notifications']} naming no agent"),
        ("answers applied", f"{answers[0]} of {answers[1]}"),
        ("sends submitted", f"{sends[0]} of {sends[1]}"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"a day in tmux ({minutes:g} min)"] + [f"  {k:<{width}}  {v}" for k, v in rows]
    for label in ("answer_failures", "send_failures"):
        for out in result[label]:
            lines.append(f"  {label.split('_')[0]} not done: {out[:160]}")
    return "\n".join(lines)


def run(panes: int = 20, minutes: float = 10.0, seed: int = 7, time_scale: float = 1.0, keep: bool = False) -> str:
    if shutil.which("tmux") is None:
        return "bench day: tmux is not installed"
    root = Path(tempfile.mkdtemp(prefix="pw-day-"))
    day = setup(root, max(10, panes), time_scale, seed)
    try:
        started = asyncio.run(live(day, minutes, seed))
        ended = day.observed[-1][0] if day.observed else time.time()  # scored while the cards were read
        result = score(day, started, ended)
        if keep:  # what was seen, for a look afterwards
            with (root / "observed.jsonl").open("w") as fh:
                for t, cards in day.observed:
                    fh.write(json.dumps({"t": t, "cards": cards}) + "\n")
            (root / "panes.json").write_text(json.dumps([p.__dict__ | {"truth": str(p.truth)} for p in day.panes]))
    finally:
        subprocess.run(["tmux", "-L", "day", "kill-server"], env=day.env, capture_output=True, timeout=20)
        if day.sshd is not None:
            day.sshd.close()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return report(result, minutes) + (f"\n  kept {root}" if keep else "")


if __name__ == "__main__":
    print(run())
