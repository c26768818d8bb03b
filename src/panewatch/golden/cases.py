"""The golden corpus: folders holding a `session.cast` and its `truth.json` timeline.

A case may also hold the hook events recorded with it (truth.json `hooks`, on the cast's clock:
Claude Code cases), the reports a live pane was given (truth.json `reports`: {t, state, source,
detail}, any agent: cases saved by `panewatch report-wrong`) and frame goldens (`frames.json`: the
visible screen at a few times, written by `scripts/regen-frames`).

Adding a case is adding a folder (no code). The bundled corpus ships inside the package;
`PANEWATCH_CORPUS` (a path list) adds more roots.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from panewatch.core.cast import Cast, read_cast
from panewatch.core.combine import Report
from panewatch.core.hookevents import claude_hook_state, hook_detail
from panewatch.core.replay import screens_at
from panewatch.core.screen import Snapshot
from panewatch.core.states import report_state

FRAMES = "frames.json"


@dataclass(frozen=True)
class GoldenCase:
    path: Path
    truth: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.agent}/{self.truth.get('agent_version', '?')}/{self.path.name}"

    @property
    def agent(self) -> str:
        return str(self.truth.get("agent", ""))

    @property
    def timeline(self) -> list[tuple[float, str]]:
        return [(float(e["t"]), str(e["state"])) for e in self.truth.get("timeline", [])]

    def cast(self) -> Cast:
        return read_cast(self.path / "session.cast")

    def reports(self) -> list[Report]:
        """What panewatch's hooks reported during the recording: the recorded hook events mapped as the
        live hook settings map them (only Claude Code cases record hooks), and the reports as a live
        pane received them (`report-wrong` cases)."""
        out: list[Report] = [Report(r["state"], float(r["t"]), r.get("source", "hook"), str(r.get("detail") or ""))
                             for r in self.truth.get("reports", []) if report_state(r.get("state"))]
        for hook in self.truth.get("hooks", []) if self.agent == "claude" else []:
            event = str(hook.get("hook", ""))
            state = claude_hook_state(event, hook.get("notification_type"))
            if state is not None:
                out.append(Report(state, float(hook["t"]), "hook", hook_detail(event, hook)))
        return sorted(out, key=lambda r: r.t)

    def frames(self) -> list[dict[str, Any]] | None:
        """The frame goldens (`frame()` records); None if the case has none."""
        path = self.path / FRAMES
        if not path.is_file():
            return None
        frames: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["frames"]
        return frames

    def frame_times(self, cast: Cast | None = None) -> list[float]:
        """Where the frame goldens look: the middle of every scored truth segment (a screen that shows
        its state plainly, away from the redraws around a change). `cast`: the case's, not read yet."""
        timeline = self.timeline
        duration = (cast or self.cast()).duration
        out = []
        for (start, state), (end, _) in zip(timeline, [*timeline[1:], (duration, "")], strict=True):
            if state != "ignore" and end > start:
                out.append(round((start + end) / 2, 3))
        return out


def frame_differences(case: GoldenCase) -> list[str]:
    """How the screen now differs from the case's frame goldens, one line per difference ([] = same)."""
    frames = case.frames() or []
    shots = screens_at(case.cast(), [float(f["t"]) for f in frames])
    out = []
    for want, shot in zip(frames, shots, strict=True):
        got = frame(want["t"], shot)
        for key in ("title", "alt_screen"):
            if got[key] != want[key]:
                out.append(f"t={want['t']}: {key} {want[key]!r} is now {got[key]!r}")
        if got["rows"] != want["rows"]:
            if len(got["rows"]) != len(want["rows"]):
                out.append(f"t={want['t']}: {len(want['rows'])} rows are now {len(got['rows'])}")
            for row, (a, b) in enumerate(zip(want["rows"], got["rows"], strict=False)):
                if a != b:
                    out.append(f"t={want['t']}: row {row} {a!r} is now {b!r}")
    return out


def frame(t: float, snapshot: Snapshot) -> dict[str, Any]:
    """One frame golden: what is visible at cast time `t` (rows, trailing blanks stripped; title; screen)."""
    return {"t": t, "title": snapshot.title, "alt_screen": snapshot.alt_screen, "rows": list(snapshot.rows)}


def bundled_root() -> Path:
    return Path(str(resources.files("panewatch.golden") / "corpus"))


def corpus_roots() -> list[Path]:
    roots = [bundled_root()]
    for extra in os.environ.get("PANEWATCH_CORPUS", "").split(os.pathsep):
        if extra:
            roots.append(Path(extra))
    return roots


def find_cases(roots: list[Path] | None = None) -> list[GoldenCase]:
    cases = []
    for root in roots if roots is not None else corpus_roots():
        for truth_path in sorted(root.rglob("truth.json")):
            if (truth_path.parent / "session.cast").is_file():
                truth = json.loads(truth_path.read_text(encoding="utf-8"))
                cases.append(GoldenCase(truth_path.parent, truth))
    return cases
