"""Run golden cases through replay and score them: shared by the tests, `agents check` and the benches."""

from __future__ import annotations

from dataclasses import dataclass

from panewatch.corpus import GoldenCase
from panewatch.manifest import Manifest
from panewatch.replay import ReplayResult, replay
from panewatch.scoring import Score, score


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
    result = replay(case.cast(), manifests, agent=agent)
    detected = [(c.t, c.state) for c in result.changes]
    return CaseResult(case, result, score(case.timeline, detected, result.duration, bounds=case.latency_bounds))


def with_replacement(manifests: list[Manifest], candidate: Manifest) -> list[Manifest]:
    """The manifest list with `candidate` standing in for the one with its id."""
    return [m for m in manifests if m.id != candidate.id] + [candidate]
