"""The golden corpus: folders holding a `session.cast` and its `truth.json` timeline.

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

from panewatch.cast import Cast, read_cast


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

    @property
    def latency_bounds(self) -> dict[float, float]:
        """Widened latency bounds by truth entry t (see scoring)."""
        return {float(e["t"]): float(e["latency_bound"]) for e in self.truth.get("timeline", [])
                if "latency_bound" in e}

    def cast(self) -> Cast:
        return read_cast(self.path / "session.cast")


def bundled_root() -> Path:
    return Path(str(resources.files("panewatch") / "corpus"))


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
