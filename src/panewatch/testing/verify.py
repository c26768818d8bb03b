"""`panewatch agents verify`: the one command to run when an agent CLI updates.

Drives the installed CLI through the standard scenarios against the mock model servers, with the
capture machinery (capture.py: the same driver, the same truth from capture_truth.py, never from
our classifier), then replays each capture through the manifests in force (golden/run.py) and
scores it. A scenario passes when every truth segment is detected within the latency bound and
nothing is wrongly `blocked`; a failure shows the screen's rule trace where the verdict went wrong.
A run that does not follow its scenario (a dialog worded differently, a turn that never ends) fails
with what the driver saw: the CLI changed under the profile's literals.

    SCENARIO    what the CLI is driven through (capture scenario, answer)
    permission  a shell-command permission dialog, allowed once   (bash, the allow key)
    edit        a file-edit dialog, allowed once                  (edit)
    working     a long streamed reply with nothing to approve      (slow)
    idle        a short reply, then the composer left alone        (text, held longer)
    trap        a reply quoting the agent's own dialog as prose    (trap: never blocked)
    prose       markdown lists and rules, every agent's dialog lines as plain reply text (prose)
    quote       a reply ending with the agent's own dialog, footer and busy line, right above where it
                draws the real ones: idle once the reply is out                      (quote)
    esc         a permission dialog refused with Esc               (bash, Esc; a line REPL: its 'no' answer)
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from panewatch.core.classify import explain
from panewatch.core.manifest import Manifest
from panewatch.core.replay import Change, screens_at
from panewatch.core.screen import Snapshot
from panewatch.golden.cases import GoldenCase, find_cases
from panewatch.golden.run import CaseResult, run_case
from panewatch.golden.scoring import LATENCY_BOUND, Segment
from panewatch.testing.capture import HOLD, PROFILES, CaptureError, capture


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    capture: str  # the capture (mock) scenario
    what: str
    answer: str | None = None  # None: the agent's allow-once key
    refuse: bool = False  # answered with the agent's refusing key (AgentProfile.refuse: Esc, Aider's n⏎)
    hold: float = HOLD  # seconds each dialog and the final idle screen stay up


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("permission", "bash", "shell command permission dialog, allowed"),
    Scenario("edit", "edit", "file edit dialog, allowed"),
    Scenario("working", "slow", "long streamed turn, nothing to approve"),
    Scenario("idle", "text", "short turn, then idle for a while", hold=4.0),
    Scenario("trap", "trap", "reply quoting the agent's own dialog (never blocked)"),
    Scenario("prose", "prose", "markdown lists, rules and dialog lines as plain prose"),
    Scenario("quote", "quote", "reply ending with the agent's own dialog, footer and busy line"),
    Scenario("esc", "bash", "permission dialog refused (Esc; a line REPL: n⏎)", refuse=True),
)


@dataclass
class ScenarioResult:
    scenario: Scenario
    seconds: float  # wall time of the capture and its replay
    case: GoldenCase | None = None
    outcome: CaseResult | None = None
    error: str = ""  # the capture did not follow its scenario
    details: list[str] = field(default_factory=list)  # what went wrong, with the rule traces
    first: ScenarioResult | None = None  # a failed first capture this one repeated (see verify())

    @property
    def ok(self) -> bool:
        return self.outcome is not None and self.outcome.ok and not self.error


def _case_name(scenario: Scenario, cols: int, rows: int) -> str:
    return f"verify_{scenario.name}_{cols}x{rows}"


def trace_lines(snapshot: Snapshot, manifest: Manifest, indent: str = "   ") -> list[str]:
    """Each rule tried on this screen up to the winner: matched ✔, not ·, skipped ✘, and why."""
    verdict, trace = explain(snapshot, manifest)
    out = []
    if verdict.error:
        out.append(f"{indent}FAILED verdict: {verdict.error}")
    for step in trace:
        mark = "✘" if step.skipped else "✔" if step.matched else "·"
        out.append(f"{indent}{mark} {step.rule.state:<8} {step.rule.id:<28} [{step.rule.region}] {step.why}")
    if verdict.rule is None:
        out.append(f"{indent}no rule matched: idle by default")
    else:
        where = "title" if verdict.region == "title" else f"row {verdict.row}"
        out.append(f"{indent}matched on {where}: {verdict.matched!r}")
    return out


def _state_at(changes: Sequence[Change], t: float) -> Change | None:
    found = None
    for change in changes:
        if change.t > t:
            break
        found = change
    return found


def _wrong_at(segment: Segment, changes: Sequence[Change]) -> float:
    """A time inside the segment where the detected state is not the truth: the first one after the
    grace window, else (never detected) the segment's middle."""
    start = segment.start + LATENCY_BOUND
    points = [start] + [c.t for c in changes if start < c.t < segment.end]
    for t in points:
        change = _state_at(changes, t)
        if change is not None and change.state != segment.state:
            return t
    return (segment.start + segment.end) / 2


def failure_details(outcome: CaseResult, manifest: Manifest) -> list[str]:
    """For each segment that failed: expected vs detected, the deciding rule, the rule trace."""
    lines: list[str] = []
    changes = outcome.result.changes
    bad = [s for s in outcome.score.scored if not s.ok() or s.false_blocked]
    times = [_wrong_at(s, changes) for s in bad]
    shots = screens_at(outcome.case.cast(), times) if times else []
    for segment, t, shot in zip(bad, times, shots, strict=True):
        change = _state_at(changes, t)
        got = change.state if change is not None else "?"
        rule = change.pane.rule if change is not None and change.pane.rule else "-"
        late = "never detected" if segment.latency is None else f"detected after {segment.latency:.3f}s"
        lines.append(f"  truth {segment.state} {segment.start:.3f}s–{segment.end:.3f}s ({late}); "
                     f"at {t:.3f}s detected {got} (rule {rule}, source "
                     f"{change.pane.source if change else '-'})")
        lines += trace_lines(shot, manifest, indent="    ")
    return lines


Progress = Callable[[str], None]


def verify(agent: str, manifests: list[Manifest], *, cols: int = 120, rows: int = 32,
           scenarios: Sequence[str] | None = None, save_to: Path | None = None, bin_dir: Path | None = None,
           delay: float = 1.0, progress: Progress | None = None) -> list[ScenarioResult]:
    """Capture and replay each scenario; the captures go to `save_to` (a corpus root) or a scratch dir."""
    if agent not in PROFILES:
        raise CaptureError(f"no capture profile for {agent!r}; verifiable: {', '.join(PROFILES)}")
    manifest = next((m for m in manifests if m.id == agent), None)
    if manifest is None:
        raise CaptureError(f"no manifest for {agent!r}")
    chosen = [s for s in SCENARIOS if scenarios is None or s.name in scenarios]
    root = save_to or Path(tempfile.mkdtemp(prefix=f"panewatch-verify-{agent}-"))
    results = []
    for scenario in chosen:
        if progress is not None:
            progress(f"{agent}: {scenario.name} ({scenario.what}) …")
        result = _one(agent, scenario, manifests, manifest, root, cols, rows, bin_dir, delay)
        if not result.ok:
            # A broken manifest fails every capture; a real CLI on a loaded machine sometimes draws late
            # once. One more capture tells them apart, and the table shows both when they differ.
            if progress is not None:
                progress(f"{agent}: {scenario.name} failed; capturing it once more …")
            again = _one(agent, scenario, manifests, manifest, root, cols, rows, bin_dir, delay, again=True)
            result = replace(again, first=result)
        results.append(result)
    if save_to is None and all(r.ok for r in results):  # a failure's capture is kept for a look
        shutil.rmtree(root, ignore_errors=True)
    return results


def _one(agent: str, scenario: Scenario, manifests: list[Manifest], manifest: Manifest, root: Path,
         cols: int, rows: int, bin_dir: Path | None, delay: float, again: bool = False) -> ScenarioResult:
    started = time.monotonic()
    name = _case_name(scenario, cols, rows) + ("_again" if again else "")
    try:
        answer = PROFILES[agent].refuse if scenario.refuse else scenario.answer
        captured = capture(agent, scenario.capture, cols=cols, rows=rows, out=root, case=name,
                           answer=answer, delay=delay, bin_dir=bin_dir, hold=scenario.hold)
    except CaptureError as exc:
        return ScenarioResult(scenario, time.monotonic() - started, error=str(exc))
    case = next(c for c in find_cases([captured.folder]))
    outcome = run_case(case, manifests, agent=agent)
    details = [] if outcome.ok else failure_details(outcome, manifest)
    return ScenarioResult(scenario, time.monotonic() - started, case, outcome, details=details)


def table(results: Sequence[ScenarioResult]) -> list[str]:
    """The pass/fail table, then the details of each failure."""
    rows = [("SCENARIO", "RESULT", "SEGMENTS", "MAX LATENCY", "FALSE BLOCKED", "TIME", "WHAT")]
    for r in results:
        s = r.outcome.score if r.outcome is not None else None
        rows.append((r.scenario.name, ("pass*" if r.first is not None else "pass") if r.ok else "FAIL",
                     f"{s.detected}/{len(s.scored)}" if s else "-",
                     f"{s.max_latency:.3f}s" if s else "-", f"{s.false_blocked:.2f}s" if s else "-",
                     f"{r.seconds:.0f}s", r.scenario.what if not r.error else "capture failed: see below"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    for r in results:
        if r.ok and r.first is not None:
            out += ["", f"{r.scenario.name}: * passed on a second capture; the first failed:",
                    *(r.first.details or [r.first.error])]
        if r.ok:
            continue
        out.append("")
        if r.error:
            out.append(f"{r.scenario.name}: the CLI did not follow the scenario: {r.error}")
        else:
            case = r.case.name if r.case is not None else "?"
            out.append(f"{r.scenario.name}: FAIL ({case}, kept in {r.case.path if r.case else '?'})")
            out += r.details
    return out
