"""The layers hold (pyproject.toml `[tool.importlinter]`, run by import-linter) and can fail; no
import cycle; nothing imports the command line, and only `panewatch serve` imports the daemon.

A broken contract names the importing module and the imported one, with the line of the import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def lint_imports(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([LINT_IMPORTS, "--no-cache", "--no-logo"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_layer_contracts_hold() -> None:
    out = lint_imports(ROOT, ROOT / "src")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_an_import_against_the_layers_fails_naming_both_modules(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src" / "panewatch", tmp_path / "src" / "panewatch",
                    ignore=shutil.ignore_patterns("__pycache__", "corpus", "static"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "src" / "panewatch" / "core" / "violation.py").write_text(
        '"""A core module reaching up into the live runtime."""\n\nfrom panewatch.runtime.live import LivePane\n')
    out = lint_imports(tmp_path, tmp_path / "src")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "panewatch.core.violation -> panewatch.runtime.live (l.3)" in out.stdout, out.stdout
    assert "BROKEN" in out.stdout


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("panewatch")


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (strongly connected)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan; the package is small enough for recursion
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph.find_modules_directly_imported_by(module):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                other = stack.pop()
                group.append(other)
                if other == module:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return groups


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_one() -> None:
    graph = _graph()
    graph.add_import(importer="panewatch.core.screen", imported="panewatch.core.classify")
    assert ["panewatch.core.classify", "panewatch.core.screen"] in _cycles(graph)


def test_nothing_imports_the_command_line_and_only_serve_imports_the_daemon() -> None:
    graph = _graph()
    cli = {m for m in graph.modules if m == "panewatch.cli" or m.startswith("panewatch.cli.")}
    outside = {importer for m in cli for importer in graph.find_modules_that_directly_import(m)} - cli
    assert outside <= {"panewatch.__main__"}, outside
    assert graph.find_modules_that_directly_import("panewatch.board.daemon") == {"panewatch.cli.serve"}
