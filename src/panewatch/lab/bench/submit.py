"""`panewatch bench submit`: how long after typed text each real CLI takes Enter as "submit" (its paste window),
and what `send` then does, with the pinned CLIs against the mock servers.

Agents read fast input as a paste: Codex takes an Enter within 120 ms of a burst of characters as a newline
in its composer, Gemini CLI one within 40 ms of a paste. `send` types the text, waits the agent's
`submit_gap` (its manifest), then presses Enter as a key of its own (runtime/guard.py). Per CLI, for each gap
in GAPS: the text typed at once (as the guard writes it), Enter written `gap` seconds after its last byte,
and whether the turn started (working, or the text gone from the input row) within STARTED — then, the whole
`send` with the manifest's gap: submitted or not, and how long from its Enter to the turn's start.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from panewatch.errors import GuardError
from panewatch.runtime.guard import InputGuard
from panewatch.testing.agents import LiveAgent
from panewatch.testing.capture import PROFILES
from panewatch.testing.homes import find_agents_bin

GAPS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.25)  # seconds between the text's last byte and Enter
STARTED = 3.0  # seconds for the turn to show it started
STARTUP, TURN = 60.0, 45.0


@dataclass
class Row:
    agent: str
    taken: dict[float, list[bool]] = field(default_factory=dict)  # gap -> submitted, per try
    send_ok: list[bool] = field(default_factory=list)
    send_elapsed: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


async def _started(agent: LiveAgent, timeout: float) -> bool:
    """The turn started: the pane working (or blocked). (Not the input row: OpenCode parks its cursor
    elsewhere, so its row says nothing either way.)"""
    return await agent.until(lambda: agent.pane.classify_now().state in ("working", "blocked"), timeout)


async def _one(name: str, row: Row, tries: int) -> None:
    with tempfile.TemporaryDirectory(prefix="pw-submit-") as root:
        agent = LiveAgent(name, Path(root), pane_id="submit")
        async with agent:
            if not await agent.ready(STARTUP):
                row.failures.append("never ready")
                return
            guard = InputGuard(agent.pane)
            for gap in GAPS:
                for k in range(tries):
                    text = f"SCN=text DELAY=1 gap {int(gap * 1000)} try {k}"
                    await guard.send(text, enter=False)  # typed at once, as the guard types it
                    await asyncio.sleep(max(0.0, agent.pane.last_input + gap - agent.pane.clock()))
                    agent.pane.write(b"\r")  # Enter alone, `gap` after the text's last byte (no wait for its echo)
                    took = await _started(agent, STARTED)
                    row.taken.setdefault(gap, []).append(took)
                    if took:
                        await agent.until(lambda: agent.pane.state.state == "idle", TURN)
                    else:  # a pasted newline: clear the composer (Ctrl-U deletes to the start; Esc for others)
                        agent.pane.write(b"\r")  # an Enter alone, long after: submits what was typed
                        await agent.until(lambda: agent.pane.state.state == "working", STARTED)
                        await agent.until(lambda: agent.pane.state.state == "idle", TURN)
            for k in range(tries):
                try:
                    result = await guard.send(f"SCN=text DELAY=1 the whole send {k}")
                except GuardError as exc:
                    row.send_ok.append(False)
                    row.failures.append(f"send: {exc}")
                    continue
                row.send_ok.append(bool(result.submitted))
                row.send_elapsed.append(result.elapsed)
                await agent.until(lambda: agent.pane.state.state == "idle", TURN)


def table(rows: list[Row], tries: int) -> str:
    head = f"{'agent':<9}" + "".join(f"{int(g * 1000):>6} ms" for g in GAPS) + "   submit_gap   send: submitted, ms"
    lines = [f"Enter taken as submit, by the gap after the text (submitted / tries, {tries} each)", head]
    for row in rows:
        cells = "".join(f"{sum(row.taken.get(g, [])):>4}/{len(row.taken.get(g, [])):<4}" for g in GAPS)
        gap = _manifest_gap(row.agent)
        sent = f"{sum(row.send_ok)}/{len(row.send_ok)}"
        ms = f"{1000 * max(row.send_elapsed):.0f} max" if row.send_elapsed else "-"
        failures = f"   {'; '.join(row.failures)}" if row.failures else ""
        lines.append(f"{row.agent:<9}{cells}   {gap:>7.2f} s   {sent:>5}, {ms}{failures}")
    return "\n".join(lines)


def _manifest_gap(agent: str) -> float:
    from panewatch.core.manifest import load_all

    manifest = load_all().get(agent)
    return manifest.submit_gap if manifest is not None else float("nan")


def run(tries: int = 2, agents: tuple[str, ...] = tuple(PROFILES)) -> str:
    bin_dir = find_agents_bin()
    if bin_dir is None:
        return "bench submit: pinned agent CLIs not installed (scripts/install-agents)"
    rows = []
    for name in (a for a in agents if (bin_dir / a).exists()):
        row = Row(name)
        rows.append(row)
        try:
            asyncio.run(asyncio.wait_for(_one(name, row, tries), 600))
        except TimeoutError:
            row.failures.append("timed out")
    return table(rows, tries)


if __name__ == "__main__":
    print(run())
