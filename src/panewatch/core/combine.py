"""combine(): the ONE place where signal priority lives. Pure: no I/O, no clock reads.

Five signals describe a pane; this module decides which one speaks. Read top to bottom, first
row that applies wins:

    ┌───┬──────────────────────────────────────────────┬────────────┬──────────────────────────────┐
    │ # │ condition                                    │ source     │ state                        │
    ├───┼──────────────────────────────────────────────┼────────────┼──────────────────────────────┤
    │ 0 │ link_up is False (a remote host's ssh link   │ "link"     │ unreachable                  │
    │   │ is down; local panes are always up)          │            │                              │
    │ 1 │ agent_running is False (shell back in front) │ "process"  │ exited                       │
    │ 1b│ holds_agent is False (the pane's foreground  │ "process"  │ idle (its kind says what it  │
    │   │ is a program known not to be an agent: a     │            │ is: core/panekind.py)        │
    │   │ shell, a pager, a view of another pane)      │            │                              │
    │ 2 │ screen verdict is blocked                    │ "screen"   │ blocked                      │
    │ 3 │ a program status in force (OSC 7501)         │ "terminal" │ its state (done → idle)      │
    │ 4 │ a fresh report (hook or ACP, see below)      │ its own    │ report state (done → idle)   │
    │ 5 │ otherwise                                    │ "screen"   │ screen verdict (working/idle)│
    └───┴──────────────────────────────────────────────┴────────────┴──────────────────────────────┘

A report is *fresh* while all of these hold:
  * it is the latest report (the caller keeps only the newest: a newer report supersedes it);
  * the screen has not changed since it arrived (`screen_changed_at <= report.t`), or it is still
    within REPORT_SETTLE seconds of arriving (for 'blocked' and 'done': changes that soon are the
    agent drawing what it just reported). The settling ends early once the screen has shown the
    report's state (`screen_agreed`: the dialog is drawn, the idle composer is back); once it is
    over, a change during it counts too, so nothing is held by it for longer. No hook fires when
    the user grants a permission, so a hook 'blocked' must end as soon as the screen moves on;
  * it is younger than REPORT_MAX_AGE for its state (None = no limit).

Why this order:
  * Row 0 first — with the link down every other signal is a memory: the screen is the last one that
    arrived, the process is whatever tmux said before the link went. A stale "working" (or a stale
    "blocked" answered meanwhile on the host) is worse than saying we cannot see. When the link is back
    the pane's screen is redrawn from tmux (resync) before the link counts as up again, so rows 1-5
    judge a current screen.
  * Row 3 (program status) — Claude Code 2.1.332, told by its terminal that the "program status"
    protocol is understood (a headless pane answers its `OSC 7501 ; ?` probe), reports its own state
    in its output: idle, working, blocked (kind=permission, msg "approve Bash: …"), done, clear. It
    arrives in band, in order with the screen it describes (no socket race), ~70 ms before the
    dialog's rows, and — unlike hooks — it is re-sent when a permission is granted (blocked →
    working), so a screen change does not end it: only a newer status, `clear`, or a frozen screen
    older than REPORT_MAX_AGE does. It beats a hook report for the same reason; a blocked screen
    still beats it (row 2: a dialog the status does not cover, e.g. a modal at start, is *there*).
  * Row 2 before 3 and 4 — a blocked screen is never overridden: the dialog is *there*, whatever a hook
    said a moment earlier (PreToolUse 'working' fires ~0.1 s before Claude draws its prompt).
  * Row 4 before 5 — a report is the agent telling us what it does, so it beats a screen guess
    until the screen moves again; e.g. a PermissionRequest / Notification 'blocked' while the
    screen's rules see only 'working' or 'idle' (a dialog the manifest does not know yet).
  * Row 1 first — the published order puts "shell back in the foreground" below the screen and
    reports, but with the shell in front no agent can be waiting: a prompt still on screen is a
    leftover of the agent that drew it, and a report in flight came from a process that is gone.
    Both are stale, so the process signal wins over them. `agent_running=None` (unknown, e.g. the
    process could not be read) leaves rows 2 to 4 in charge.
  * Row 1b before the screen and reports — a shell that printed an agent's dialog (`cat` of a transcript,
    `panewatch ls`), a pager, a nested tmux client showing another pane: none of them waits on the user,
    whatever their screen shows (core/panekind.py says why the process decides). A report about such a
    pane comes from an agent that is not in front of it (in the background, or a view's original): the
    card of the pane where that agent is speaks for it.

What counts as "the screen changed" is `screen_key()`: the visible rows with in-place animation
blanked out, title excluded. Claude Code blinks the running tool's ● every ~0.6 s while its dialog
waits and Codex flips its title between '[ ! ]' and '[ . ]'; if those counted, a hook's 'blocked'
would be dropped within a second although nothing happened. Erasing a dialog, a new line of
output or a ticking "(5s ·" timer do count.

Why REPORT_SETTLE: Gemini CLI 0.61.0 fires Notification(ToolPermission) 0.4-0.7 s before it draws
the dialog (more under load), and AfterAgent ~0.1 s before its last redraw; taking those redraws as
"the screen moved on" made the pane flicker blocked → working → blocked and idle → working → idle
(measured live, hooks e2e). Nobody answers a dialog before it is drawn, and once it is drawn the
screen agrees and the settling is over, so an answer still ends the report at once (Codex: answer →
left 22 ms with hooks, `bench agents`). A dialog the rules do not know never agrees: answered within
the settling time, it is left at its end (the PaneMachine schedules a check then). 'working' gets
no settling time: the spinner-less error screen of a turn that failed at once is the better guess.

Report ages (REPORT_MAX_AGE): 'blocked', 'idle' and 'done' never expire by time — a dialog or an
idle prompt can wait for hours on an unchanging screen, and only a screen change (or a newer
report) tells us it is over. 'working' expires after 10 minutes without a screen change: agents
animate a spinner or a timer while they work (Claude Code updates its counter every second), so a
'working' report that saw a frozen screen that long means a lost Stop hook or a hung agent, and
the screen's own verdict is the better guess. Long silent tool calls stay 'working' meanwhile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from panewatch.core.classify import Verdict
from panewatch.core.screen import Snapshot
from panewatch.core.states import REPORT_STATES, ReportState, Source, State

# Seconds a report stays fresh on an unchanged screen; None = until the screen changes.
REPORT_MAX_AGE: dict[ReportState, float | None] = {
    "blocked": None,
    "working": 600.0,
    "idle": None,
    "done": None,
}


# Seconds after a report during which screen changes are the agent drawing what it reported.
REPORT_SETTLE: dict[ReportState, float] = {
    "blocked": 2.0,
    "working": 0.0,
    "idle": 0.0,
    "done": 2.0,
}


@dataclass(frozen=True)
class Report:
    """What the agent itself said, via a hook or ACP. `t` is on the live loop's clock."""

    state: ReportState
    t: float
    source: Source  # "hook" | "acp" | "terminal"
    detail: str = ""


@dataclass(frozen=True)
class PaneState:
    """The pane's combined state, and which signal decided it."""

    state: State
    source: Source
    rule: str | None  # the screen rule that decided; None for reports, process, or no rule matched
    detail: str = ""  # matched text, or the report's detail


# Animated in place, saying nothing new: a blinking/spinning glyph at the start of a row (Claude's
# ● ⏺ ✢ ✳ ✶ ✻ ✽ · *, Codex's • ◦) and braille or half-circle spinners anywhere.
_BLINK = re.compile(r"^(\s*)[●⏺✢✳✶✻✽·*•◦](?=\s|$)")
_SPINNER = re.compile(r"[\u2800-\u28FF\u25D0-\u25D3]")


def screen_key(snapshot: Snapshot) -> tuple[str, ...]:
    """The screen as far as report staleness is concerned: compare keys, not snapshots, to set
    `screen_changed_at` (see the module docstring)."""
    return tuple(_SPINNER.sub(" ", _BLINK.sub(r"\1 ", row)).rstrip() for row in snapshot.rows)


def report_is_fresh(report: Report, screen_changed_at: float, now: float, screen_agreed: bool = False) -> bool:
    """True while `report` still speaks for the pane (see the module docstring)."""
    settle = 0.0 if screen_agreed else REPORT_SETTLE.get(report.state, 0.0)
    if screen_changed_at > report.t and now >= report.t + settle:
        return False  # the screen moved after the report (and it is not the agent drawing it): superseded
    max_age = REPORT_MAX_AGE.get(report.state)
    return max_age is None or now - report.t <= max_age


def status_is_fresh(status: Report, screen_changed_at: float, now: float) -> bool:
    """True while a program status speaks for the pane: until a newer one (the caller keeps the latest),
    except 'working' on a screen frozen for longer than REPORT_MAX_AGE (a hung agent)."""
    max_age = REPORT_MAX_AGE.get(status.state)
    return max_age is None or now - max(status.t, screen_changed_at) <= max_age


def combine(
    screen: Verdict,
    screen_changed_at: float,
    report: Report | None,
    agent_running: bool | None,
    now: float,
    screen_agreed: bool = False,
    status: Report | None = None,
    link_up: bool = True,
    link_detail: str = "",
    holds_agent: bool = True,
    holder: str = "",
) -> PaneState:
    """The pane's state from its link, its screen verdict, its latest report and its foreground process.
    `screen_agreed`: the screen has shown the report's state since it arrived (its settling is over).
    `status`: the program's latest OSC 7501 status (source "terminal"), None once it said `clear`.
    `link_up` False: a remote pane whose host's link is down (row 0). `holds_agent` False: the pane's
    foreground is known not to be an agent (row 1b; `holder` names it)."""
    if not link_up:
        return PaneState("unreachable", "link", None, link_detail or "the link to its host is down")
    if agent_running is False:
        return PaneState("exited", "process", None, "shell back in the foreground")
    if not holds_agent:
        return PaneState("idle", "process", None, f"{holder or 'a program'}: not an agent")
    if screen.state == "blocked":
        return PaneState("blocked", "screen", screen.rule, screen.matched)
    if status is not None and status.state in REPORT_STATES and status_is_fresh(status, screen_changed_at, now):
        return PaneState("idle" if status.state == "done" else status.state, status.source, None, status.detail)
    if (report is not None and report.state in REPORT_STATES
            and report_is_fresh(report, screen_changed_at, now, screen_agreed)):
        state = "idle" if report.state == "done" else report.state
        return PaneState(state, report.source, None, report.detail)
    return PaneState(screen.state, "screen", screen.rule, screen.matched)
