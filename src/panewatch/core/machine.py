"""PaneMachine: one pane's state as a sans-I/O object. Events in, state changes out.

Every pane source feeds one: a `run` PTY, a headless PTY, a tmux pane (local or remote), a replay.
The caller owns the clock (`t` arguments, monotonic seconds, or cast time in a replay) and the
timers: it asks `next_due()` and calls `tick(t)` then. Each event returns the state changes it
caused (usually none, sometimes one), as h11's Connection returns events.

Everything that decides what `combine()` is told lives here, and only here:

* when the screen last changed, which supersedes a report (`combine.report_is_fresh`): while a
  report is in force, animations (a blinking bullet, a spinner, the title) do not count — the
  screen is compared by `screen_key` with the screen the report arrived on; without one, any
  change of the visible screen does;
* the program's own status (OSC 7501, core/termstatus.py) read from its output: the latest is in force
  until a newer one or `clear`;
* a report stamped on another clock (outside the last REPORT_SKEW seconds) counts as arriving now;
* a report that ends a block (blocked -> anything else) while the screen shows a frame not judged yet
  is combined at that frame's check (REPORT_WAITS_FOR_SCREEN), not before: a dialog answered within
  milliseconds is still the dialog on that frame, and the pane leaves blocked once, not twice;
* what the pane is (core/panekind.py `pane_kind`, from its foreground): an agent, a view of another pane,
  another program, or unknown; only an agent's screen (or one we cannot read) is judged by agent rules;
* whether the agent still runs: an agent seen by its process or by its screen, then the shell (or a
  program we can tell is not that agent) back in front, means it is gone;
* which agent's rules judge the screen: pinned, else the foreground process's agent if a manifest
  knows it, else (the foreground unknown) identification by the screen;
* exit: the last frame is judged, then the pane is exited for good;
* a remote pane's link (`link()`): down, the pane is unreachable whatever its last screen said; up
  again only once its screen was redrawn from the host (the caller resyncs first), judged at once.

The screen-side detection (Screen + manifests + timing policy) is `PaneDetector`'s; signal priority
is `combine()`'s alone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from panewatch.core import termstatus
from panewatch.core.classify import Quarantine, Verdict, classify_unidentified
from panewatch.core.combine import REPORT_SETTLE, PaneState, Report, combine, screen_key
from panewatch.core.detector import PaneDetector
from panewatch.core.history import History
from panewatch.core.manifest import Manifest
from panewatch.core.panekind import UNKNOWN, PaneKind, pane_kind
from panewatch.core.policy import ChangeDrivenSchedule, Schedule
from panewatch.core.screen import Screen, Snapshot
from panewatch.core.termstatus import ProgramStatus

REPORT_SKEW = 60.0  # seconds: a report stamped further back (or in the future) was stamped on another clock
# A report that ends a block while the screen has a frame not judged yet waits for that frame's check, at
# most this long (the schedule judges any output within 0.3 s, core/policy.py). Qwen Code fires PreToolUse
# after the grant: answered within ms of its dialog being drawn, the report came before the check of the
# dialog's frame, and taken at once the pane went blocked -> working -> blocked (that frame) -> working.
REPORT_WAITS_FOR_SCREEN = 0.3


@dataclass(frozen=True, slots=True)
class Foreground:
    """Who holds the pane's terminal: its foreground process group, described. The runtime fills it
    (psutil for a local tty, tmux formats for a tmux pane); the machine only reads it."""

    pgid: int
    name: str
    cmdline: tuple[str, ...]
    is_shell: bool  # a shell holds the pane (no agent found anywhere in the group)
    agent_id: str | None  # the manifest whose `processes` match a member of the group
    pid: int | None = None  # the process described: the group leader, else the group's newest process
    agent_pid: int | None = None  # the member that is the agent (a wrapper such as npx may lead the group)
    version: str | None = None  # the agent's version, once learnt (runtime/version.py); None: not known
    # The group's other processes, (name, cmdline) each, when they were read: what a script runs
    # (`sh -c 'cat f; sleep 600'` is described by its shell), judged with it by core/panekind.py.
    members: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class StateChange:
    """One change of a pane's combined state, at `t` on the machine's clock. `wall` is unix time,
    stamped by a live driver when it publishes the change (None in replays: the core reads no clock)."""

    t: float
    pane: str
    old: PaneState | None
    new: PaneState
    agent: str | None
    wall: float | None = None

    def as_json(self) -> dict[str, Any]:
        t = self.t if self.wall is None else self.wall
        return {"t": round(t, 6), "pane": self.pane, "state": self.new.state, "rule": self.new.rule,
                "source": self.new.source, "agent": self.agent, "detail": self.new.detail or None}


def collapse(changes: list[StateChange]) -> list[StateChange]:
    """Changes that followed each other within one event, as the one change they make together (none when
    the pane ends where it began): what a caller publishes when it folds a second look into a first."""
    if len(changes) < 2:
        return changes
    first, last = changes[0], changes[-1]
    if first.old is not None and first.old.state == last.new.state:
        return []
    return [replace(last, old=first.old)]


class PaneMachine:
    """One pane: feed it events with their time; read `state`; publish what the events return."""

    def __init__(self, manifests: Callable[[], list[Manifest]], cols: int, rows: int, *, pane_id: str = "",
                 agent: str | None = None, schedule: Schedule | None = None, start: float = 0.0,
                 cost_clock: Callable[[], float] | None = None, history: int = 0) -> None:
        self.pane_id = pane_id
        self.pinned_agent = agent
        self._manifests = manifests
        self.screen = Screen(cols, rows)
        # cost_clock: what a rule's searches cost is measured on it (a live pane's time.perf_counter), so a
        # rule over budget is quarantined on this pane; a replay gives none (virtual time, no quarantine).
        self.detector = PaneDetector(manifests, self.screen, schedule or ChangeDrivenSchedule(start=start),
                                     agent_id=agent, quarantine=Quarantine(clock=cost_clock))
        self.state = PaneState("idle", "screen", None)
        self.report_in_force: Report | None = None
        self.program_status: deque[tuple[float, ProgramStatus]] = deque(maxlen=64)  # OSC 7501 reports seen
        self.status_in_force: Report | None = None  # the latest of them, as a report (source "terminal")
        self._settle_due: float | None = None  # when a report's settling time ends (combine.REPORT_SETTLE)
        self._screen_agreed = False  # the screen has shown the report's state since it arrived
        self.fg: Foreground | None = None
        self.exit_code: int | None = None
        self.has_exited = False
        self.last_output = start
        self._screen_changed_at = start
        self._last_snapshot: Snapshot | None = None
        self._report_key: tuple[str, ...] | None = None  # the screen a report arrived on, animations ignored
        self._agent_seen = False  # an agent held this pane (by process or by its screen)
        self._agent_by_process = False  # ... and we recognised its process
        self._queued: list[StateChange] = []  # caused by classify_now(), handed out by the next event
        # history: keep this many bytes of recent output (and what else the machine is told) for
        # `report-wrong` (core/history.py); 0 = none (replays and benchmarks need none).
        self.history = History(self.screen, start, self.state, max_bytes=history) if history > 0 else None
        self.link_up = True  # a local pane's always is; a remote pane's follows its host's ssh link
        self.link_detail = ""
        self.kind: PaneKind = PaneKind("agent", agent) if agent is not None else UNKNOWN
        # The screen at the last look that found a program known not to be an agent in front, and the dialog
        # text (a blocked verdict's `matched`) that screen showed when a program named nowhere took over: that
        # program did not draw it (`cat transcript`, later `make` or a script). Believed again once not shown.
        self._screen_at_look: Snapshot | None = None
        self._inherited_block: str | None = None
        self.watched_hosts: frozenset[str] = frozenset()  # [[remote]] hosts: ssh to one is a view (panekind)

    # -- events in ---------------------------------------------------------------------------

    def output(self, t: float, data: bytes) -> list[StateChange]:
        """Bytes the pane's program wrote. Judged when the schedule says (`next_due()`), not now."""
        if data:
            self.last_output = t
            self.detector.feed(t, data)
            if self.history is not None:
                self.history.output(t, data)
            statuses = self.screen.take_program_status()
            if statuses:
                for status in statuses:
                    self.program_status.append((t, status))
                    self._take_status(t, status)
                return self._flush(self._update(t))
        return self._flush([])

    def _take_status(self, t: float, status: ProgramStatus) -> None:
        """The program's own OSC 7501 status: the latest is in force (combine row 3), unless it is one
        termstatus.STATUS_STATES does not take (`clear`, ...): that withdraws it."""
        state = termstatus.report_state(status)
        self.status_in_force = None if state is None else Report(state, t, "terminal", status.detail())

    def resize(self, t: float, cols: int, rows: int) -> list[StateChange]:
        self.last_output = t
        self.detector.resize(t, cols, rows)
        if self.history is not None:
            self.history.resize(t, self.screen.cols, self.screen.rows)
        return self._flush([])

    def report(self, t: float, report: Report) -> list[StateChange]:
        """A hook, ACP or terminal-protocol report about this pane: the newest replaces any earlier one."""
        if self.has_exited:
            return self._flush([])
        if not t - REPORT_SKEW <= report.t <= t:  # stamped on another clock: it arrived just now
            report = replace(report, t=t)
        self.report_in_force = report
        if self.history is not None:
            self.history.report(report)
        self._report_key = screen_key(self.screen.snapshot())
        settle = REPORT_SETTLE.get(report.state, 0.0)
        self._settle_due = report.t + settle if settle > 0 else None  # combine() looks again then
        self._screen_agreed = False
        if self.state.state == "blocked" and report.state != "blocked" and self._screen_check_pending(t):
            return self._flush([])  # the pending check combines it with the screen drawn meanwhile
        return self._flush(self._update(t))

    def foreground(self, t: float, fg: Foreground | None) -> list[StateChange]:
        """Who holds the tty now (None: unknown, or the tty is gone). Unchanged news changes nothing."""
        if fg == self.fg or self.has_exited:
            return self._flush([])
        self.fg = fg
        self._refresh_agent()
        self.looked(t)
        return self._flush(self.check(t))

    def looked(self, t: float) -> None:
        """The runtime looked at who holds the tty (changed or not): under a program known not to be an agent,
        what is on screen now is that program's (or older), whatever runs next."""
        if not self.kind.judged and not self.has_exited:
            self._screen_at_look = self.detector.screen.snapshot()

    def manifests_changed(self, t: float) -> list[StateChange]:
        """The manifests were reloaded: an edited rule applies to the screen already shown."""
        if self.has_exited:
            return self._flush([])
        self._refresh_agent()
        return self._flush(self.check(t))

    def is_due(self, t: float) -> bool:
        """Whether `tick(t)` would check anything (a live timer may fire for a time since moved later)."""
        if self.has_exited:
            return False
        return (self._settle_due is not None and t >= self._settle_due) or self.detector.due(t)

    def tick(self, t: float) -> list[StateChange]:
        """Run the scheduled check; call when `next_due()` has come."""
        if self.has_exited:
            return self._flush([])
        settled = self._settle_due is not None and t >= self._settle_due
        if not settled and not self.detector.due(t):
            # A live timer armed for an earlier due time, fired after more output moved the check later
            # (an animation's next frame): nothing is due, so nothing is read (a snapshot of a screen fed
            # since is an engine read) nor combined; the driver re-arms at next_due().
            return self._flush([])
        if settled:
            self._settle_due = None
        self.detector.tick(t)
        self._observe_screen()
        return self._flush(self._update(t))

    def exited(self, t: float, code: int | None, detail: str | None = None) -> list[StateChange]:
        """The pane's program ended (`code` None: it could not be reaped), or the pane itself went
        (`detail` says how: a closed tmux pane). Its last frame is judged first; then the pane stays
        exited whatever comes."""
        if self.has_exited:
            return self._flush([])
        changes = self.check(t)
        self.exit_code, self.has_exited = code, True
        if self.history is not None:
            self.history.exited(t, code)
        if detail is None:
            detail = f"exit code {code}" if code is not None else "the command did not exit"
        return self._flush(changes + self._set_state(t, PaneState("exited", "process", None, detail)))

    def link(self, t: float, up: bool, detail: str = "") -> list[StateChange]:
        """A remote pane's link to its host: down (`detail` says why), or up again — call that after the
        pane's screen was resynchronised from the host, so the state published next is the current one."""
        if self.has_exited or (up == self.link_up and detail == self.link_detail):
            return self._flush([])
        self.link_up, self.link_detail = up, detail
        return self._flush(self.check(t) if up else self._update(t))

    def check(self, t: float) -> list[StateChange]:
        """Classify the screen now, whatever the schedule says (but never a frame half drawn: the last
        verdict stands until the program ends its synchronized update), and combine."""
        if self.has_exited:
            return []
        if not self.detector.mid_frame(t):
            self.detector.classify_now()
        self._observe_screen()
        return self._update(t)

    def classify_now(self, t: float) -> PaneState:
        """The combined state re-checked now: the input guard's question (a prompt a hook reported
        before it was drawn, or an agent that exited, must refuse input too). The changes it causes are
        handed out by the next event; a driver that publishes at once calls `check(t)` instead."""
        self._queued.extend(self.check(t))
        return self.state

    # -- queries -----------------------------------------------------------------------------

    def next_due(self) -> float:
        """When `tick()` wants to run next (inf once exited)."""
        if self.has_exited:
            return float("inf")
        due = self.detector.next_due()
        return due if self._settle_due is None else min(due, self._settle_due)

    @property
    def verdict(self) -> Verdict:
        """The screen's own verdict, before combining."""
        return self.detector.verdict

    @property
    def agent(self) -> str | None:
        fg = self.fg
        return self.pinned_agent or (fg.agent_id if fg else None) or self._believed_verdict().agent or None

    # -- what combine() is told --------------------------------------------------------------

    def _observe_screen(self) -> None:
        """Track when the visible screen last changed (see the module docstring)."""
        snapshot = self.screen.snapshot()
        if snapshot is self._last_snapshot or snapshot == self._last_snapshot:
            return
        if self._last_snapshot is not None:
            if self.report_in_force is None or self._report_key is None:
                self._screen_changed_at = self.last_output  # the output that made the change
            elif screen_key(snapshot) != self._report_key:
                self._screen_changed_at = self.last_output
                self._report_key = None  # superseded for good: later changes need no comparison
        self._last_snapshot = snapshot

    def _screen_check_pending(self, t: float) -> bool:
        """The screen changed since it was last judged and its check comes within REPORT_WAITS_FOR_SCREEN."""
        return self.detector.next_due() <= t + REPORT_WAITS_FOR_SCREEN and self.detector.screen_unjudged()

    def _refresh_agent(self) -> None:
        fg = self.fg
        if self.pinned_agent is not None:  # `--agent ID`: an agent by the user's word, whatever runs
            return
        was_judged, self.kind = self.kind.judged, pane_kind(fg, watched_hosts=self.watched_hosts)
        if not was_judged and self.kind.kind == "unknown":
            self._inherited_block = self._block_shown_at_look()
        elif self.kind.kind != "unknown":
            self._inherited_block = None
        self.detector.set_judging(self.kind.judged)
        if fg is None:
            return
        known = fg.agent_id is not None and any(m.id == fg.agent_id for m in self._manifests())
        self.detector.set_agent(fg.agent_id if known else None)

    def _block_shown_at_look(self) -> str | None:
        """The dialog text the screen at the last look under a known non-agent showed, if any."""
        if self._screen_at_look is None:
            return None
        verdict = classify_unidentified(self._screen_at_look, self._manifests())
        return verdict.matched if verdict.state == "blocked" else None

    def _believed_verdict(self) -> Verdict:
        """The screen's verdict, less a dialog inherited by the program in front (see `_inherited_block`)."""
        verdict = self.detector.verdict
        if self._inherited_block is None:
            return verdict
        if verdict.state == "blocked" and verdict.matched == self._inherited_block:
            return Verdict("idle", None, agent="")  # nor is it the agent the words name
        self._inherited_block = None  # gone from the screen (cleared, scrolled away): a dialog from now on is new
        return verdict

    def _agent_running(self) -> bool | None:
        """True: an agent holds the pane. False: it is gone (the shell, or a program we can tell is not
        the agent we saw, holds the pane: a prompt still on screen is a leftover). None: unknown."""
        fg = self.fg
        if fg is None:
            return None
        if fg.agent_id is not None:
            self._agent_seen = self._agent_by_process = True
            return True
        if not self.kind.judged:  # a shell, `ls`, `vim`, a view after the agent: it is gone
            return False if self._agent_seen else None
        if self.kind.what:  # a transport or an unnamed interpreter: what it shows may be a new agent
            self._agent_seen = self._agent_by_process = False
        elif self._agent_by_process:  # the agent's process was known and the group cannot be read now
            return False
        if self._believed_verdict().agent:  # an unrecognised wrapper drawing a known agent's screen
            self._agent_seen = True
        return None

    def _update(self, t: float) -> list[StateChange]:
        if self.has_exited:
            return []
        running = self._agent_running()
        report, verdict = self.report_in_force, self._believed_verdict()
        if report is not None and verdict.state == ("idle" if report.state == "done" else report.state):
            self._screen_agreed, self._settle_due = True, None
        new = combine(verdict, self._screen_changed_at, report, running, t, self._screen_agreed,
                      self.status_in_force, link_up=self.link_up, link_detail=self.link_detail,
                      holds_agent=self.kind.judged, holder=self.kind.what)
        return self._set_state(t, new)

    def _set_state(self, t: float, new: PaneState) -> list[StateChange]:
        old, self.state = self.state, new
        if new.state == old.state:
            return []
        if self.history is not None:
            self.history.changed(t, new)
        return [StateChange(t, self.pane_id, old, new, self.agent)]

    def _flush(self, changes: list[StateChange]) -> list[StateChange]:
        if not self._queued:
            return changes
        queued, self._queued = self._queued, []
        return queued + changes
