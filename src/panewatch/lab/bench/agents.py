"""`panewatch bench agents`: live latencies with the pinned real CLIs against the mock servers.

Per CLI, the bash scenario in a headless LivePane (live_agents.LiveAgent), answered through the
input guard, `reps` times:

    drawn → blocked     the pty read whose screen first shows the dialog → the pane's blocked event
    answer → left       the guard writing the key → the pane's first event that is not blocked
    answer → erased     the guard writing the key → the pty read whose screen no longer shows the
                        dialog (the agent's own share of "answer → left")
    answer → confirmed  the guard writing the key → the guard's own confirmation that the answer took effect
                        (the dialog left and the agent went on: `answer` says "applied" then)
    dropped             answers the agent ignored (guard.answer: cleared=False, the same prompt
                        still up) and that were pressed again; the times are from the press taken

Every verified agent with a capture profile is measured; those with hooks without and with
panewatch's hooks (Claude `--settings`, Codex `-c`, Gemini a per-launch settings file), side by
side. With hooks the permission report usually arrives before the dialog is drawn, so drawn →
blocked is negative: the state leads the screen. Times are on the event loop's clock.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from panewatch.core.hookevents import HOOK_STATES
from panewatch.core.machine import StateChange
from panewatch.runtime.guard import InputGuard
from panewatch.testing.agents import LiveAgent
from panewatch.testing.capture import PROFILES
from panewatch.testing.homes import find_agents_bin

STARTUP, STEP = 60.0, 45.0


@dataclass
class Samples:
    label: str
    drawn_to_blocked: list[float] = field(default_factory=list)
    answer_to_left: list[float] = field(default_factory=list)
    answer_to_erased: list[float] = field(default_factory=list)
    answer_confirmed: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    dropped: int = 0  # answers the agent ignored (the prompt stayed; pressed again)


async def _one(agent_name: str, hooks: bool, samples: Samples) -> None:
    with tempfile.TemporaryDirectory(prefix="pw-bench-") as root:
        agent = LiveAgent(agent_name, Path(root), hooks=hooks, pane_id="bench")
        async with agent:
            dialog = agent.profile.dialogs["bash"][0]
            if not await agent.ready(STARTUP):
                samples.failures.append("never ready")
                return
            agent.watch(dialog)
            await agent.submit("SCN=bash DELAY=1 run the scripted scenario")
            blocked = await agent.wait_state("blocked", STEP)
            # A user answers the whole dialog they see: a hook may say blocked before it is drawn, and
            # Gemini CLI draws its question a moment before its options.
            if blocked is None or not await agent.until(lambda: dialog in agent.first_seen
                                                        and agent.pane.verdict.state == "blocked", 10):
                samples.failures.append("no blocked dialog")
                return
            guard = InputGuard(agent.pane)
            prompt = guard.prompt()
            allow = prompt.option("allow_once")
            if allow is None:
                samples.failures.append("no allow-once option parsed")
                return
            agent.watch_gone(dialog)
            index = len(agent.changes)
            for _ in range(3):  # a dropped key press is counted, then pressed again as a user would
                result = await guard.answer(allow.number, prompt.fingerprint, timeout=3)
                pressed = agent.pane.last_input  # when the key was written (after the guard's settle wait)
                if result.cleared:
                    if result.applied:
                        samples.answer_confirmed.append(result.elapsed)
                    break
                samples.dropped += 1
            else:
                samples.failures.append(f"answer not taken ({result.state}, screen still shows the prompt)")
                return

            def leaving() -> StateChange | None:
                return next((c for c in agent.changes[index:] if c.new.state != "blocked"), None)

            await agent.until(lambda: leaving() is not None, 10)
            left = leaving()
            if left is None:
                samples.failures.append("prompt gone but the pane stayed blocked")
                return
            samples.drawn_to_blocked.append(blocked.t - agent.first_seen[dialog])
            samples.answer_to_left.append(left.t - pressed)
            if dialog in agent.gone_at:
                samples.answer_to_erased.append(agent.gone_at[dialog] - pressed)
            await agent.turn_over(STEP)


def _fmt(values: list[float]) -> str:
    if not values:
        return f"{'-':>13}"
    return f"{statistics.median(values) * 1000:6.0f} /{max(values) * 1000:6.0f}"


METRICS = (("drawn → blocked", "drawn_to_blocked"), ("answer → left", "answer_to_left"),
           ("answer → erased", "answer_to_erased"), ("answer → confirmed", "answer_confirmed"))


def _values(samples: Samples | None, attr: str) -> list[float]:
    return list(getattr(samples, attr)) if samples is not None else []


def table(rows: dict[tuple[str, bool], Samples], reps: int) -> str:
    """Each agent on one line, every metric without and with hooks side by side."""
    agents = list(dict.fromkeys(name for name, _ in rows))
    head = f"{'':<8}" + "".join(f" {title:^29}" for title, _ in METRICS) + "  dropped   failures"
    sub = f"{'agent':<8}" + f" {'no hooks':>13} {'+ hooks':>15}" * len(METRICS) + f"  {'-/+':>7}"
    lines = [f"live latencies, bash scenario, {reps} run(s) per cell, ms as median / max", head, sub]
    for name in agents:
        plain, hooked = rows.get((name, False)), rows.get((name, True))
        cells = "".join(f" {_fmt(_values(plain, attr))} {_fmt(_values(hooked, attr)):>15}" for _, attr in METRICS)
        dropped = f"{plain.dropped if plain else '-'}/{hooked.dropped if hooked else '-'}"
        cells_failed = (("no hooks", plain), ("hooks", hooked))
        failures = "; ".join(f"{label}: {', '.join(s.failures)}" for label, s in cells_failed
                             if s is not None and s.failures) or "-"
        lines.append(f"{name:<8}{cells}  {dropped:>7}   {failures}")
    lines.append("drawn → blocked < 0: a hook (or the agent's OSC 7501 status) put the pane in blocked before the "
                 "dialog was drawn; answer → erased is the agent's own redraw time. no hooks: screen + OSC 7501 "
                 "(Claude: probe answered; Codex: unasked); + hooks: PaneHooks.wire's hooks as well (- : the "
                 "agent has no hooks panewatch can use)")
    return "\n".join(lines)


def run(reps: int = 3, agents: tuple[str, ...] = tuple(PROFILES), hooks: bool = True) -> str:
    """Measure and return the table (ms, median / max over `reps` runs per cell); `hooks`: also with hooks,
    for the agents that have them (core/hookevents.py)."""
    bin_dir = find_agents_bin()
    if bin_dir is None:
        return "bench agents: pinned agent CLIs not installed (scripts/install-agents)"
    rows: dict[tuple[str, bool], Samples] = {}
    for name in (a for a in agents if (bin_dir / a).exists()):
        for with_hooks in (False, True) if hooks and name in HOOK_STATES else (False,):
            samples = rows[(name, with_hooks)] = Samples(name + (" + hooks" if with_hooks else ""))
            for _ in range(reps):
                try:
                    asyncio.run(asyncio.wait_for(_one(name, with_hooks, samples), 150))
                except OSError as exc:  # e.g. Gemini's per-launch hooks need root: say so in the table
                    samples.failures.append(f"hooks unavailable: {exc}")
                    break
    return table(rows, reps)


if __name__ == "__main__":
    print(run())
