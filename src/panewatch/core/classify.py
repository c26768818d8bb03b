"""classify(snapshot, manifest) -> Verdict. Pure, synchronous, no I/O.

Rules look at a region of the visible screen (never scrollback, never the byte tail). Scoping
matters: a dialog lives at the bottom, below the input box's rule, while prose that *quotes* a
dialog lives above it. That is how the commonest false positive of the field is avoided.

Every pattern runs on RE2 (pattern.py: linear in the text, no backtracking), over at most
MAX_REGION_CHARS characters of a region and MAX_TITLE_CHARS of the title. What linear time still
allows, a rule built to defeat RE2's DFA, is caught by a `Quarantine`: a rule that cost one pane
more than its budget is skipped on that pane from then on, and every verdict it would have had a
say in carries an `error` naming it. Only that pane loses (part of) its verdict. The quarantine's
cost clock is the caller's (a live pane passes time.perf_counter; a replay, in virtual time, measures
nothing), so the core reads no clock and tests drive it without slow patterns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from panewatch.core.manifest import Manifest, Region, Rule
from panewatch.core.pattern import Pattern
from panewatch.core.screen import Snapshot, cells
from panewatch.core.states import ScreenState, urgency

# The largest screen a pane can have (Screen.resize: 1000 columns × 500 rows) with its newlines; a
# longer region (a Snapshot built by hand) keeps its bottom, where dialogs are. Titles: ghostty
# itself keeps about 4 KB.
MAX_REGION_CHARS = 500 * 1001
MAX_TITLE_CHARS = 4096
# A rule whose searches took longer than this on one pane is quarantined on that pane. RE2 runs
# the bundled rules in 1-15 µs on a 120×32 screen: a rule over 50 ms is 3,000× off.
RULE_BUDGET = 0.050

# A horizontal rule: a row made only of box-drawing horizontals (Ink draws `─`, Claude's dialogs
# `╌` between sections and `▔` above plan mode). Corners are allowed so `╭──╮` boxes count too.
_RULE_ROW = re.compile(r"^\s*[╭╰├┌└]?[─━═╌╍┄┅┈┉▔]{8,}[╮╯┤┐┘]?\s*$")


@dataclass(frozen=True, slots=True)
class Verdict:
    state: ScreenState
    rule: str | None  # id of the rule that decided; None = no rule matched (idle by default)
    region: str = ""
    matched: str = ""
    row: int | None = None  # screen row of the match (None for the title)
    agent: str = ""
    error: str = ""  # a rule that could not have its say (quarantined): the verdict may be wrong


@dataclass
class Quarantine:
    """One pane's rules that exceeded `budget` seconds once: (agent, rule id) -> why."""

    budget: float = RULE_BUDGET
    clock: Callable[[], float] | None = None  # the cost clock; None: costs are not measured
    rules: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, agent: str, rule: Rule, seconds: float) -> str:
        patterns = ", ".join(repr(p.pattern) for p in (*rule.none, *rule.all, *rule.any))
        why = (f"rule {agent}/{rule.id} quarantined on this pane: it took {seconds * 1e3:.0f} ms "
               f"(budget {self.budget * 1e3:.0f} ms); patterns {patterns}")
        self.rules[(agent, rule.id)] = why
        return why


@dataclass(frozen=True, slots=True)
class RuleTrace:
    rule: Rule
    matched: bool
    why: str  # which pattern decided, for `panewatch agents explain`
    skipped: bool = False  # quarantined, or a busy indicator that stopped moving (`still`): not run


def rule_key(agent: str, rule_id: str) -> str:
    """'agent/rule': how `still` names a rule (and how an unidentified pane's verdict names its rule)."""
    return f"{agent}/{rule_id}"


def region_span(snapshot: Snapshot, region: Region) -> tuple[int, int]:
    """[first, end) physical rows of `region` (not title, not cursor)."""
    rows = snapshot.rows
    if region.kind == "screen":
        return 0, len(rows)
    if region.kind == "bottom":
        # Count from the last non-blank row, so inline renderers whose output does not yet reach
        # the bottom of the screen are treated like full-screen ones.
        end = len(rows)
        while end > 0 and not rows[end - 1].strip():
            end -= 1
        return max(0, end - region.n), end
    if region.kind == "top":
        return 0, min(region.n, len(rows))
    if region.kind == "below_rule":
        for index in range(len(rows) - 1, -1, -1):
            if _RULE_ROW.match(rows[index]):
                return index + 1, len(rows)
        return 0, len(rows)  # no rule drawn (a fragment, a bare dialog): the whole screen is "below" it
    raise ValueError(region.kind)


def region_rows(snapshot: Snapshot, region: Region) -> tuple[int, list[str]]:
    """(first row index, rows) of `region`, as drawn (physical rows). Title is handled by the caller."""
    rows = snapshot.rows
    if region.kind == "cursor":
        # What is left of the cursor on its row (blanks kept): a line REPL (Aider) waits for input right
        # after its prompt or question; once the input is sent the same text stays in the history with
        # the cursor below it, and text being streamed leaves the cursor at the row's far end.
        if not rows:
            return 0, [""]
        col, row = snapshot.cursor
        row = min(max(row, 0), len(rows) - 1)
        return row, [rows[row].ljust(max(col, 0))[:max(col, 0)]]
    start, end = region_span(snapshot, region)
    return start, list(rows[start:end])


def _cursor_line(snapshot: Snapshot) -> tuple[int, str]:
    """(first row, text) of the line left of the cursor. A question the terminal wrapped puts the cursor on
    its last row, after the text of the rows above (`Snapshot.wraps`). A line editor that breaks the line
    itself (prompt_toolkit: Aider's '… (D)on't ask again' at the pane's edge, then ' [Yes]: ' on the next
    row) fills each row to the last column: such rows above the cursor's are read as the same line, up to
    MAX_EDITOR_ROWS of them (never a horizontal rule, full-width too)."""
    first, (left,) = region_rows(snapshot, _CURSOR)
    start, text = first, left
    for wrap_start, last, joined in snapshot.wraps:
        if wrap_start < first <= last:
            # The line's text up to the cursor row (its rows above were full to the edge), then the cursor row's left.
            tail = "".join(snapshot.rows[first:last + 1])
            head = (joined[:len(joined) - len(tail)] if joined.endswith(tail)
                    else "".join(snapshot.rows[wrap_start:first]))
            start, text = wrap_start, head + left
            break
    while (start > 0 and first - start < MAX_EDITOR_ROWS and snapshot.width
           and cells(above := snapshot.rows[start - 1]) >= snapshot.width and not _RULE_ROW.match(above)):
        start, text = start - 1, above + text
    return start, text


MAX_EDITOR_ROWS = 4  # rows of one line a line editor breaks at the edge (a long question, typed text)


class _Regions:
    """Region texts of one snapshot as UTF-8 (what RE2 reads), computed once per classification.

    Rules read logical lines: a row the terminal soft-wrapped is joined to its continuation (the screen's
    `wraps`), so a pattern means a line of text however narrow the pane; a region takes a wrapped line
    whole when its edge cuts through it. `rows` maps each line of the text to its first screen row."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._cache: dict[Region, tuple[int | None, bytes, tuple[int, ...] | None]] = {}

    def get(self, region: Region) -> tuple[int | None, bytes, tuple[int, ...] | None]:
        """(first row, text, first row of each line when lines span rows) of `region`."""
        hit = self._cache.get(region)
        if hit is None:
            snapshot = self.snapshot
            line_rows: tuple[int, ...] | None = None
            if region.kind == "title":
                hit = (None, _utf8(snapshot.title[:MAX_TITLE_CHARS]), None)
                self._cache[region] = hit
                return hit
            if region.kind == "cursor":
                start, text = _cursor_line(snapshot)
            elif not snapshot.wraps:
                start, end = region_span(snapshot, region)
                text = "\n".join(snapshot.rows[start:end])
            else:
                lines = snapshot.lines(*region_span(snapshot, region))
                start = lines[0][0] if lines else 0
                text = "\n".join(line for _, line in lines)
                line_rows = tuple(row for row, _ in lines)
            if len(text) > MAX_REGION_CHARS:
                cut = text.count("\n", 0, len(text) - MAX_REGION_CHARS)
                start += cut
                line_rows = line_rows[cut:] if line_rows is not None else None
                text = text[len(text) - MAX_REGION_CHARS:]
            hit = (start, _utf8(text), line_rows)
            self._cache[region] = hit
        return hit


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # never raises; a lone surrogate matches nothing


# Why a rule matched or not, formatted only for a trace (`explain`): classify runs every rule that
# does not match on every check, and formatting a reason with the pattern's repr each time cost more
# than most of the searches it explains.
_WHY = {"none": "excluded by none {!r}", "all": "all {!r} absent", "any": "any {!r}",
        "no-any": "no `any` pattern matched", "all-present": "all patterns present"}


def _why(reason: str, pattern: Pattern | None) -> str:
    return _WHY[reason].format(pattern.pattern) if pattern is not None else _WHY[reason]


def _match_rule(rule: Rule, regions: _Regions) -> tuple[tuple[int, int] | None, str, Pattern | None]:
    """(deciding match's byte span, why, the pattern why names) — span None if the rule does not apply;
    `_why(why, pattern)` says it in words."""
    data = regions.get(rule.region)[1]
    for pattern in rule.none:
        if pattern.search(data):
            return None, "none", pattern
    found: tuple[int, int] | None = None
    for pattern in rule.all:
        span = pattern.search(data)
        if span is None:
            return None, "all", pattern
        found = found or span
    if rule.any:
        for pattern in rule.any:
            span = pattern.search(data)
            if span is not None:
                return span, "any", pattern
        return None, "no-any", None
    return found, "all-present", None


def _verdict(rule: Rule, span: tuple[int, int], region: tuple[int | None, bytes, tuple[int, ...] | None],
             agent: str, error: str) -> Verdict:
    first_row, data, line_rows = region
    matched = data[span[0]:span[1]].decode("utf-8", "replace")
    row = None
    if first_row is not None:
        # `^\s*` may swallow blank rows before the text: count from the first visible character.
        lead = matched[: len(matched) - len(matched.lstrip())]
        line = data.count(b"\n", 0, span[0]) + lead.count("\n")
        row = first_row + line if line_rows is None else line_rows[min(line, len(line_rows) - 1)]
    return Verdict(rule.state, rule.id, str(rule.region), matched.strip(), row, agent, error)


def _judge(regions: _Regions, manifest: Manifest, quarantine: Quarantine | None,
           trace: list[RuleTrace] | None, *, identified: bool = True, still: frozenset[str] = frozenset()) -> Verdict:
    """First matching rule wins; no match means idle. Quarantined rules are skipped and named, and so
    are rules marked `identified` when the agent is not known (`identified=False`), and busy indicators
    the caller saw stand still (`still`: 'agent/rule' keys, see detector.py)."""
    errors: list[str] = []
    agent = manifest.id
    # Hoisted: this loop is the hot path of every classification.
    clock, budget, skip = (None, 0.0, {}) if quarantine is None else (quarantine.clock, quarantine.budget,
                                                                    quarantine.rules)
    started = clock() if clock is not None else 0.0
    for rule in manifest.rules:
        if rule.identified and not identified:
            continue
        if still and rule_key(agent, rule.id) in still:
            if trace is not None:
                trace.append(RuleTrace(rule, False, f"its line stood still longer than {rule.moving or 0:g}s: a copy, "
                                                    "not the agent's indicator", skipped=True))
            continue
        if skip and (skipped := skip.get((agent, rule.id))) is not None:
            errors.append(skipped)
            if trace is not None:
                trace.append(RuleTrace(rule, False, skipped, skipped=True))
            continue
        span, why, pattern = _match_rule(rule, regions)
        if clock is not None:
            now = clock()
            if now - started > budget and quarantine is not None:  # this result stands (RE2 finished)
                errors.append(quarantine.add(agent, rule, now - started))
            started = now
        if trace is not None:
            trace.append(RuleTrace(rule, span is not None, _why(why, pattern)))
        if span is not None:
            return _verdict(rule, span, regions.get(rule.region), agent, "; ".join(errors))
    return Verdict("idle", None, agent=agent, error="; ".join(errors))


def classify(snapshot: Snapshot, manifest: Manifest, quarantine: Quarantine | None = None,
             still: frozenset[str] = frozenset()) -> Verdict:
    """First matching rule wins; no match means idle."""
    return _judge(_Regions(snapshot), manifest, quarantine, None, still=still)


def explain(snapshot: Snapshot, manifest: Manifest, quarantine: Quarantine | None = None,
            still: frozenset[str] = frozenset()) -> tuple[Verdict, list[RuleTrace]]:
    """The verdict plus, for each rule tried up to the winner, whether it matched and why."""
    trace: list[RuleTrace] = []
    return _judge(_Regions(snapshot), manifest, quarantine, trace, still=still), trace


def title_rule(manifest: Manifest, title: str) -> str | None:
    """The first of the manifest's title rules that matches `title` (its id), or None: what the window title
    alone says, cheap enough to ask at every title the agent sets (a few patterns on one short string)."""
    regions = _Regions(Snapshot(rows=(), title=title))
    for rule in manifest.rules:
        if rule.region.kind == "title" and _match_rule(rule, regions)[0] is not None:
            return rule.id
    return None


def indicator_line(snapshot: Snapshot, verdict: Verdict) -> str:
    """The logical line(s) a verdict's match is on (all of a busy indicator: its spinner, seconds and
    counters, wherever in the line the pattern matched); "" for the title."""
    if verdict.row is None:
        return ""
    lines = snapshot.lines(verdict.row)
    return "\n".join(text for _, text in lines[:verdict.matched.count("\n") + 1])


def classify_unidentified(snapshot: Snapshot, manifests: list[Manifest],
                          quarantine: Quarantine | None = None, still: frozenset[str] = frozenset()) -> Verdict:
    """No agent recognised yet: the most urgent verdict any manifest's rules give (blocked first),
    reported with agent '' since the agent is unknown. Better to surface a dialog than to miss it."""
    best = Verdict("idle", None, agent="")
    regions = _Regions(snapshot)  # one set of region texts for every manifest
    errors: list[str] = []
    for manifest in manifests:
        if not manifest.verified:  # unverified rules are too loose to apply to an unknown screen
            continue
        verdict = _judge(regions, manifest, quarantine, None, identified=False, still=still)
        if verdict.error:
            errors.append(verdict.error)
        if verdict.rule is not None and urgency(verdict.state) < urgency(best.state):
            best = Verdict(verdict.state, rule_key(manifest.id, verdict.rule), verdict.region, verdict.matched,
                           verdict.row, "")
    return Verdict(best.state, best.rule, best.region, best.matched, best.row, "", "; ".join(errors)) \
        if errors else best


def identify(snapshot: Snapshot, manifests: list[Manifest]) -> Manifest | None:
    """Which agent draws this screen, from its title or screen patterns (when no process is known)."""
    regions = _Regions(snapshot)
    title = regions.get(_TITLE)[1]
    for manifest in manifests:
        if any(p.search(title) for p in manifest.detect_title):
            return manifest
    for manifest in manifests:
        if manifest.detect_screen:
            text = regions.get(_SCREEN)[1]
            if any(p.search(text) for p in manifest.detect_screen):
                return manifest
    return None


_TITLE, _SCREEN, _CURSOR = Region("title"), Region("screen"), Region("cursor")
