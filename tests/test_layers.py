"""The layer contracts (pyproject.toml `[tool.importlinter]`, run by import-linter) hold, and can fail.

A broken contract names the importing module and the imported one, with the line of the import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def lint_imports(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([LINT_IMPORTS, "--no-cache", "--no-logo"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_layer_contracts_hold() -> None:
    out = lint_imports(ROOT, ROOT / "src")
    assert out.returncode == 0, out.stdout + out.stderr
    assert " broken" in out.stdout and "0 broken" in out.stdout


def test_an_import_against_the_layers_fails_naming_both_modules(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src" / "panewatch", tmp_path / "src" / "panewatch",
                    ignore=shutil.ignore_patterns("__pycache__", "corpus", "static"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "src" / "panewatch" / "core" / "violation.py").write_text(
        '"""A core module reaching up into the live runtime."""\n\nfrom panewatch.runtime.live import LivePane\n')
    out = lint_imports(tmp_path, tmp_path / "src")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "panewatch.core.violation -> panewatch.runtime.live" in out.stdout, out.stdout
    assert "BROKEN" in out.stdout
