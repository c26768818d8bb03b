"""Run golden cases through replay and score them: shared by the tests, `agents check` and the benches.

The replay drives a PaneMachine with the cast and the hook reports recorded with it, so what is scored
is the pane's combined state, as live."""

from __future__ import annotations

from dataclasses import dataclass

from panewatch.core.manifest import Manifest
from panewatch.core.replay import ReplayResult, replay
from panewatch.golden.cases import GoldenCase
from panewatch.golden.scoring import Detected, Score, score


@dataclass
class CaseResult:
    case: GoldenCase
    result: ReplayResult
    score: Score

    @property
    def ok(self) -> bool:
        return self.score.ok()

    def summary(self) -> str:
        s = self.score
        verdict = "ok  " if self.ok else "FAIL"
        return (f"{verdict} {self.case.name:<44} segments {s.detected}/{len(s.scored)}  "
                f"max latency {s.max_latency:.3f}s  false blocked {s.false_blocked:.2f}s  "
                f"classifications {self.result.classifications}")


def run_case(case: GoldenCase, manifests: list[Manifest], agent: str | None = None) -> CaseResult:
    result = replay(case.cast(), manifests, agent=agent, reports=case.reports())
    detected: list[Detected] = [(c.t, c.state, c.pane.source) for c in result.changes]
    return CaseResult(case, result, score(case.timeline, detected, result.duration))


def with_replacement(manifests: list[Manifest], candidate: Manifest) -> list[Manifest]:
    """The manifest list with `candidate` standing in for the one with its id."""
    return [m for m in manifests if m.id != candidate.id] + [candidate]
