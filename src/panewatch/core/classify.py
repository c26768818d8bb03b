"""classify(snapshot, manifest) -> Verdict. Pure, synchronous, no I/O.

Rules look at a region of the visible screen (never scrollback, never the byte tail). Scoping
matters: a dialog lives at the bottom, below the input box's rule, while prose that *quotes* a
dialog lives above it. That is how the commonest false positive of the field is avoided.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from panewatch.core.manifest import Manifest, Region, Rule
from panewatch.core.screen import Snapshot
from panewatch.core.states import ScreenState, urgency

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


@dataclass(frozen=True, slots=True)
class RuleTrace:
    rule: Rule
    matched: bool
    why: str  # which pattern decided, for `panewatch agents explain`


def region_rows(snapshot: Snapshot, region: Region) -> tuple[int, list[str]]:
    """(first row index, rows) of `region`. Title is handled by the caller."""
    rows = snapshot.rows
    if region.kind == "screen":
        return 0, list(rows)
    if region.kind == "bottom":
        # Count from the last non-blank row, so inline renderers whose output does not yet reach
        # the bottom of the screen are treated like full-screen ones.
        end = len(rows)
        while end > 0 and not rows[end - 1].strip():
            end -= 1
        start = max(0, end - region.n)
        return start, list(rows[start:end])
    if region.kind == "top":
        return 0, list(rows[: region.n])
    if region.kind == "below_rule":
        for index in range(len(rows) - 1, -1, -1):
            if _RULE_ROW.match(rows[index]):
                return index + 1, list(rows[index + 1 :])
        return 0, list(rows)  # no rule drawn (a fragment, a bare dialog): the whole screen is "below" it
    raise ValueError(region.kind)


class _Regions:
    """Region texts of one snapshot, computed once per classification."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._cache: dict[Region, tuple[int, str]] = {}

    def get(self, region: Region) -> tuple[int | None, str]:
        if region.kind == "title":
            return None, self.snapshot.title
        hit = self._cache.get(region)
        if hit is None:
            start, rows = region_rows(self.snapshot, region)
            hit = (start, "\n".join(rows))
            self._cache[region] = hit
        return hit


def _match_rule(rule: Rule, regions: _Regions) -> tuple[re.Match[str] | None, int | None, str]:
    """(deciding match, first row of the region, why) — match None if the rule does not apply."""
    first_row, text = regions.get(rule.region)
    for pattern in rule.none:
        if pattern.search(text):
            return None, first_row, f"excluded by none {pattern.pattern!r}"
    found: re.Match[str] | None = None
    for pattern in rule.all:
        m = pattern.search(text)
        if m is None:
            return None, first_row, f"all {pattern.pattern!r} absent"
        found = found or m
    if rule.any:
        for pattern in rule.any:
            m = pattern.search(text)
            if m is not None:
                return m, first_row, f"any {pattern.pattern!r}"
        return None, first_row, "no `any` pattern matched"
    return found, first_row, "all patterns present"


def _verdict(rule: Rule, match: re.Match[str], first_row: int | None, text_source: str, agent: str) -> Verdict:
    row = None
    if first_row is not None:
        # `^\s*` may swallow blank rows before the text: count from the first visible character.
        start = match.start() + len(match.group(0)) - len(match.group(0).lstrip())
        row = first_row + text_source.count("\n", 0, start)
    return Verdict(rule.state, rule.id, str(rule.region), match.group(0).strip(),
                   row, agent)


def classify(snapshot: Snapshot, manifest: Manifest) -> Verdict:
    """First matching rule wins; no match means idle."""
    regions = _Regions(snapshot)
    for rule in manifest.rules:
        match, first_row, _ = _match_rule(rule, regions)
        if match is not None:
            return _verdict(rule, match, first_row, regions.get(rule.region)[1], manifest.id)
    return Verdict("idle", None, agent=manifest.id)


def explain(snapshot: Snapshot, manifest: Manifest) -> tuple[Verdict, list[RuleTrace]]:
    """The verdict plus, for each rule tried up to the winner, whether it matched and why."""
    regions = _Regions(snapshot)
    trace: list[RuleTrace] = []
    for rule in manifest.rules:
        match, first_row, why = _match_rule(rule, regions)
        trace.append(RuleTrace(rule, match is not None, why))
        if match is not None:
            return _verdict(rule, match, first_row, regions.get(rule.region)[1], manifest.id), trace
    return Verdict("idle", None, agent=manifest.id), trace


def classify_unidentified(snapshot: Snapshot, manifests: list[Manifest]) -> Verdict:
    """No agent recognised yet: the most urgent verdict any manifest's rules give (blocked first),
    reported with agent '' since the agent is unknown. Better to surface a dialog than to miss it."""
    best = Verdict("idle", None, agent="")
    for manifest in manifests:
        if not manifest.verified:  # unverified rules are too loose to apply to an unknown screen
            continue
        verdict = classify(snapshot, manifest)
        if verdict.rule is not None and urgency(verdict.state) < urgency(best.state):
            best = Verdict(verdict.state, f"{manifest.id}/{verdict.rule}", verdict.region, verdict.matched,
                           verdict.row, "")
    return best


def identify(snapshot: Snapshot, manifests: list[Manifest]) -> Manifest | None:
    """Which agent draws this screen, from its title or screen patterns (when no process is known)."""
    text: str | None = None
    for manifest in manifests:
        if any(p.search(snapshot.title) for p in manifest.detect_title):
            return manifest
    for manifest in manifests:
        if manifest.detect_screen:
            text = text if text is not None else snapshot.text()
            if any(p.search(text) for p in manifest.detect_screen):
                return manifest
    return None
