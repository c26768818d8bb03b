"""testing/versions.py: which releases the release job takes, and an install in a private prefix that is
complete or absent (npm itself is replaced by a fake here; tests/e2e/test_verify_real.py runs the real one)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from panewatch.testing.capture import CaptureError
from panewatch.testing.versions import ReleaseRow, install, latest_releases, npm_agents, release_table


def test_the_last_three_stable_releases_oldest_first() -> None:
    served = ["0.9.0", "0.10.0", "0.171.0-win32-x64", "0.170.0", "0.62.0-nightly.20260909.ged2ac40df", "0.171.0",
              "0.169.1", "0.169.0"]
    assert latest_releases(served) == ["0.169.1", "0.170.0", "0.171.0"]  # numbers, not text, decide the order
    assert latest_releases(["1.0.0"], 3) == ["1.0.0"]
    assert "aider" not in npm_agents() and {"claude", "codex", "copilot"} <= set(npm_agents())


class FakeNpm:
    """Writes what `npm install --prefix DIR` would for `package.json`'s one dependency (or fails)."""

    def __init__(self, version: str | None = None, fail: bool = False) -> None:
        self.version, self.fail, self.calls = version, fail, 0

    def __call__(self, argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        self.calls += 1
        prefix = Path(argv[argv.index("--prefix") + 1])
        [(package, wanted)] = json.loads((prefix / "package.json").read_text())["dependencies"].items()
        if self.fail:
            return subprocess.CompletedProcess(argv, 1, "", "npm error 404 No match for version\n")
        folder = prefix / "node_modules" / package
        folder.mkdir(parents=True)
        (folder / "package.json").write_text(json.dumps({"version": self.version or wanted}))
        (prefix / "node_modules" / ".bin").mkdir()
        (prefix / "node_modules" / ".bin" / "claude").write_text("#!/bin/sh\n")
        return subprocess.CompletedProcess(argv, 0, "", "")


def test_an_install_is_reused_once_complete_and_never_left_half_done(tmp_path: Path) -> None:
    npm = FakeNpm()
    bin_dir = install("claude", "2.1.331", root=tmp_path, run=npm)
    assert bin_dir == tmp_path / "claude" / "2.1.331" / "node_modules" / ".bin" and (bin_dir / "claude").exists()
    assert install("claude", "2.1.331", root=tmp_path, run=npm) == bin_dir and npm.calls == 1
    failed = re.escape("npm install @anthropic-ai/claude-code@2.1.9 failed: npm error 404")
    with pytest.raises(CaptureError, match=failed):
        install("claude", "2.1.9", root=tmp_path, run=FakeNpm(fail=True))
    with pytest.raises(CaptureError, match=re.escape("npm installed @anthropic-ai/claude-code 2.1.332, not 2.1.8")):
        install("claude", "2.1.8", root=tmp_path, run=FakeNpm(version="2.1.332"))
    assert sorted(p.name for p in (tmp_path / "claude").iterdir()) == ["2.1.331"]  # no scratch left behind
    with pytest.raises(CaptureError, match="Python package"):
        install("aider", "0.86.1", root=tmp_path, run=npm)
    with pytest.raises(CaptureError, match="not a version"):
        install("claude", "latest; rm -rf /", root=tmp_path, run=npm)


def test_the_release_table_says_each_scenario_of_each_release() -> None:
    rows = [ReleaseRow("claude", "2.1.331", {"permission": "pass", "trap": "pass*"}),
            ReleaseRow("codex", "0.170.0", {"permission": "FAIL"}, note="")]
    assert release_table(rows, ["permission", "trap"]) == [
        "| agent | version | permission | trap | passed | note |", "|---|---|---|---|---|---|",
        "| claude | 2.1.331 | pass | pass* | 2/2 |  |", "| codex | 0.170.0 | FAIL | - | 0/2 |  |"]
