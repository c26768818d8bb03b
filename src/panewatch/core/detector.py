"""One pane's screen-side detection: Screen + manifest + classifier + timing policy. Pure: the
caller passes the time and the bytes; nothing here reads a clock or touches a file descriptor.
The quarantine (classify.Quarantine: a rule too slow on this pane is skipped on it until the
manifests are reloaded) measures costs on the caller's clock, if it is given one.

Busy means moving. A working verdict from a busy indicator whose rule says `moving = S` (a spinner line,
a status row with elapsed seconds) holds only while that indicator's line changes at least every S
seconds: the agent redraws its own (frame, seconds, token count), while a reply that quotes it, or a
frame the agent left behind, stands still. Each such line is remembered with the time it last changed;
once it has stood still for S the rule is set aside for this pane (`still`) and the screen is judged
without it, by a check the detector asks for at that moment even if nothing else changed. A line that
changes, or goes and comes back, counts again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from panewatch.core.classify import (
    Quarantine,
    Verdict,
    classify,
    classify_unidentified,
    identify,
    indicator_line,
    rule_key,
    title_rule,
)
from panewatch.core.manifest import Manifest, Rule
from panewatch.core.policy import ChangeDrivenSchedule, Schedule
from panewatch.core.screen import Screen, Snapshot

UNKNOWN = Verdict("idle", None, agent="")
# A check this much early has come: event loops round, and a live loop runs the checks of every pane due
# within this much in one turn (runtime/driver.py DueTimers). Not more: the stop rule's "quiet 1.5x the
# usual gap" is measured against output tmux delivers in clumps, and 5 ms counted 15 % more checks as
# due at 1000 busy panes than 1 ms did (each one a classification).
TIMER_SLACK = 0.001
# A frame inside a synchronized update (DEC mode 2026) is half drawn: a terminal shows nothing of it until
# the program ends the update, and we judge nothing of it either, at the latest this long after it began
# (a program that never ends one is judged anyway). Measured: Qwen Code's full redraw after a grant came
# in two writes 67 ms apart, the first only its logo (no rule: a false idle); well-formed updates end
# within the same write or a few ms later, so this bound is met only by a broken program.
SYNC_HOLD = 0.5


@dataclass(slots=True)
class DetectorStats:
    checks: int = 0  # times the schedule fired
    classifications: int = 0  # times rules actually ran (screen differed from the last one judged)


@dataclass
class PaneDetector:
    """Feed bytes with their time; call `tick(now)` when `next_due()` has come."""

    manifests: Callable[[], list[Manifest]]  # the current manifests (reloads take effect at once)
    screen: Screen
    schedule: Schedule = field(default_factory=ChangeDrivenSchedule)
    agent_id: str | None = None  # fixed agent (--agent, or identified by process); None = identify
    # Ours skips a check whose screen did not change. The published sweep re-reads and re-judges
    # every pane every period; benchmarks set this False to model it faithfully.
    skip_unchanged: bool = True
    verdict: Verdict = UNKNOWN
    stats: DetectorStats = field(default_factory=DetectorStats)
    quarantine: Quarantine = field(default_factory=Quarantine)
    sync_hold: float = SYNC_HOLD  # 0: judge frames inside a synchronized update too (the peers' way)
    # False: the pane holds no agent (core/panekind.py: a shell, a pager, a view): no rule runs on its screen.
    judging: bool = True

    def __post_init__(self) -> None:
        self._sync_since: float | None = None  # when the synchronized update now open began
        self._judged: tuple[Snapshot, Manifest] | None = None
        # No agent known: the screen and the manifest list last judged by every manifest's rules (a pane
        # running no agent is re-checked on seeds, foreground news and ticks with its screen unchanged).
        self._judged_unknown: tuple[Snapshot, list[Manifest]] | None = None
        self._identified: str | None = None
        self._quarantined_for: list[Manifest] | None = None  # the manifest list the quarantine is about
        self._now = 0.0  # the latest time the caller gave (feed, resize, tick): classify_now's default
        # Busy indicators with `moving` (see the module doc): 'agent/rule' -> (its line, when it last changed).
        self._moving: dict[str, tuple[str, float]] = {}
        self._still_due: float | None = None  # when the verdict's indicator stands still too long, unless it moves
        self._moving_rules: tuple[list[Manifest], dict[str, Rule]] | None = None
        self._title_said: tuple[str, str | None] | None = None  # (agent, title rule) the last title set matched

    def feed(self, now: float, data: bytes) -> None:
        self._now = max(self._now, now)
        titles = self.screen.titles_set
        self.screen.feed(data)
        self.schedule.on_output(now, len(data))
        if self.screen.titles_set != titles:
            self._title_news(now)
        if not self.screen.synchronized:
            self._sync_since = None
        elif self._sync_since is None:
            self._sync_since = now

    def _title_news(self, now: float) -> None:
        """The agent set its window title: if what the title alone says changed (a title rule stopped or
        started matching: the spinner left it, 'Action Required' came), that frame is news for the schedule,
        however small it is. A spinner glyph turning in the title says the same each time: no news."""
        manifest = self.manifest()
        if manifest is None or not self.judging:
            return
        said = (manifest.id, title_rule(manifest, self.screen.title()))
        if said != self._title_said:
            if self._title_said is not None:
                self.schedule.on_news(now)
            self._title_said = said

    def resize(self, now: float, cols: int, rows: int) -> None:
        self._now = max(self._now, now)
        self.screen.resize(cols, rows)
        self.schedule.on_output(now)

    def next_due(self) -> float:
        due = self.schedule.next_due()
        if self._still_due is not None:  # the verdict's busy indicator may have stopped by then
            due = min(due, self._still_due)
        return due if self._sync_since is None else max(due, self._sync_since + self.sync_hold)

    def due(self, now: float) -> bool:
        """Whether a scheduled check has come. A live timer armed for an earlier due time fires after
        more output moved the check later (an animation's next frame postpones its stop check)."""
        return now >= self.next_due() - TIMER_SLACK

    def screen_unjudged(self) -> bool:
        """The visible screen is not the one last judged: output since the last check changed it."""
        snapshot = self.screen.snapshot()
        last = self._judged if self._judged is not None else self._judged_unknown
        return last is None or not (last[0] is snapshot or last[0] == snapshot)

    def mid_frame(self, now: float) -> bool:
        """The screen is a frame half drawn (a synchronized update open for less than `sync_hold`)."""
        return self._sync_since is not None and now < self._sync_since + self.sync_hold

    def manifest(self) -> Manifest | None:
        wanted = self.agent_id or self._identified
        manifests = self.manifests()
        if wanted is not None:
            for manifest in manifests:
                if manifest.id == wanted:
                    return manifest
            return None
        return None

    def set_agent(self, agent_id: str | None) -> None:
        """Pin the agent (e.g. from the foreground process); None returns to screen identification."""
        if agent_id != self.agent_id:
            self.agent_id = agent_id
            self._judged = self._judged_unknown = None
            if agent_id is None:
                self._identified = None

    def set_judging(self, judging: bool) -> None:
        """Judge the screen by agent rules (True), or not at all (the pane holds no agent)."""
        if judging != self.judging:
            self.judging = judging
            self._judged = self._judged_unknown = None
            if not judging:
                self.verdict = UNKNOWN
                self._still_due = None

    def classify_now(self, now: float | None = None) -> Verdict:
        """Classify the current screen regardless of the schedule (the input guard re-checks this way).
        `now` (default: the latest time fed) dates the busy indicators' motion."""
        now = self._now if now is None else max(self._now, now)
        self._now = now
        if not self.judging:
            self.verdict, self._still_due = UNKNOWN, None
            return self.verdict
        if self._still_due is not None and now >= self._still_due - TIMER_SLACK:
            # The verdict's indicator may have stood still long enough: judge again, screen changed or not.
            self._judged = self._judged_unknown = None
        if not self.skip_unchanged:
            self.screen.invalidate()
            self._judged = self._judged_unknown = None
        snapshot = self.screen.snapshot()
        manifests = self.manifests()
        if manifests is not self._quarantined_for:  # reloaded: every rule gets a fresh chance
            self.quarantine.rules.clear()
            self._quarantined_for = manifests
        manifest = self.manifest()
        if manifest is None and self.agent_id is None:
            last = self._judged_unknown
            if last is not None and last[1] is manifests and (last[0] is snapshot or last[0] == snapshot):
                return self.verdict  # the same screen, the same rules: neither identity nor verdict can differ
            found = identify(snapshot, manifests)
            if found is not None:
                self._identified = found.id
                manifest = found
        if manifest is None:
            self.stats.classifications += 1
            if self.agent_id is None:
                self.verdict = self._moving_check(
                    snapshot, manifests, now, lambda still: classify_unidentified(snapshot, manifests, self.quarantine,
                                                                                  still))
            else:
                self.verdict, self._still_due = UNKNOWN, None
            self._judged_unknown = (snapshot, manifests) if self.agent_id is None else None
            return self.verdict
        judged = (snapshot, manifest)
        if self._judged is not None and self._judged[0] is snapshot and self._judged[1] is manifest:
            return self.verdict
        if self._judged is not None and self._judged[1] is manifest and self._judged[0] == snapshot:
            self._judged = judged
            return self.verdict
        self._judged = judged
        self.stats.classifications += 1
        found = manifest
        self.verdict = self._moving_check(snapshot, manifests, now,
                                          lambda still: classify(snapshot, found, self.quarantine, still))
        return self.verdict

    def _moving_check(self, snapshot: Snapshot, manifests: list[Manifest], now: float,
                      judge: Callable[[frozenset[str]], Verdict]) -> Verdict:
        """`judge` the screen, setting aside each busy indicator that stood still past its rule's `moving`."""
        shown: set[str] = set()  # the indicators this screen shows, moving or set aside
        still: set[str] = set()  # set aside: they stood still too long
        self._still_due = None
        while True:
            verdict = judge(frozenset(still))
            key, rule = self._moving_rule(manifests, verdict)
            if rule is None or rule.moving is None:
                break
            shown.add(key)
            line = indicator_line(snapshot, verdict)
            seen = self._moving.get(key)
            if seen is None or seen[0] != line:  # new, or redrawn since: alive
                seen = self._moving[key] = (line, now)
            if now < seen[1] + rule.moving - TIMER_SLACK:
                self._still_due = seen[1] + rule.moving
                break
            still.add(key)
        # Forget the indicators this screen no longer shows: one drawn again later starts afresh.
        self._moving = {k: v for k, v in self._moving.items() if k in shown}
        return verdict

    def _moving_rule(self, manifests: list[Manifest], verdict: Verdict) -> tuple[str, Rule | None]:
        """('agent/rule', the Rule) of a verdict's deciding rule, when it is a busy indicator with `moving`."""
        if verdict.rule is None or verdict.region == "title":
            return "", None
        if self._moving_rules is None or self._moving_rules[0] is not manifests:
            self._moving_rules = (manifests, {rule_key(m.id, r.id): r for m in manifests for r in m.rules
                                              if r.moving is not None})
        key = verdict.rule if not verdict.agent else rule_key(verdict.agent, verdict.rule)
        return key, self._moving_rules[1].get(key)

    def tick(self, now: float) -> Verdict | None:
        """Run a scheduled check (nothing before it is `due`). Returns the new verdict if the *state*
        changed, else None."""
        if not self.due(now):
            return None
        before = self.verdict
        self.stats.checks += 1
        after = self.classify_now(now)
        # Only the state or the deciding rule count as a change, not the matched text: a spinner glyph
        # moving in the title is the animation the schedule backs off from. (Counting the evidence kept
        # Codex, whose title spins at 12 Hz, at 10 checks/s for whole turns; the policy's stop rule now
        # catches the end of its spinner without that.)
        self.schedule.on_classified(now, changed=(after.state, after.rule) != (before.state, before.rule))
        if after.state != before.state:
            return after
        return None
