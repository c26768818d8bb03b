"""The skip accounting (tests/components.py) on a tiny test file, in a real pytest subprocess.

A missing component fails its test with how to install it; PANEWATCH_SKIP is the only way to skip it
(even when installed); an unknown name is a usage error; the run ends with the list of skips.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from components import AGENT_CLIS, COMPONENTS

TESTS = Path(__file__).resolve().parent
SAMPLE = '''
import pytest

@pytest.mark.needs("browser")
def test_browser():
    pass

@pytest.mark.needs("browser", "agents")
def test_both():
    pass

def test_plain():
    pass

def test_skips_for_its_own_reason():
    pytest.skip("no /dev/full here")
'''


def run(tmp_path: Path, *, skip: str = "", chromium: str | None = None, agents: str | None = None,
        source: str = SAMPLE) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(source)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the project's addopts / filterwarnings
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "PANEWATCH_SKIP": skip}
    if chromium is not None:
        env["PANEWATCH_CHROMIUM"] = chromium
    if agents is not None:
        env["PANEWATCH_AGENTS_BIN"] = agents
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "components", "-rN", "-p", "no:cacheprovider",
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def fake_agents(tmp_path: Path) -> str:
    bin_dir = tmp_path / "agents-bin"
    bin_dir.mkdir()
    for name in AGENT_CLIS:
        (bin_dir / name).write_text("#!/bin/sh\n")
    return str(bin_dir)


def summary(out: str) -> list[str]:
    """The lines of the closing "real components and skips" section."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "real components and skips" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
    return lines[start + 1:end]


def test_a_missing_component_fails_naming_how_to_install_it(tmp_path: Path) -> None:
    out = run(tmp_path, chromium=str(tmp_path / "no-chromium"), agents=fake_agents(tmp_path))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "2 errors" in out.stdout or "2 failed" in out.stdout, out.stdout
    assert f"no chromium at {tmp_path / 'no-chromium'}" in out.stdout
    assert "Install: apt-get install chromium" in out.stdout
    assert "opt out: PANEWATCH_SKIP=browser" in out.stdout
    assert summary(out.stdout) == [
        f"browser: MISSING, 2 tests failed — no chromium at {tmp_path / 'no-chromium'}; "
        "install: apt-get install chromium (or PANEWATCH_CHROMIUM=/path/to/chromium)",
        "test_sample.py::test_skips_for_its_own_reason: skipped: no /dev/full here",
        "1 test skipped in all",
    ]


def test_opting_out_skips_and_the_summary_says_what_and_why(tmp_path: Path) -> None:
    out = run(tmp_path, skip="browser", chromium=str(tmp_path / "no-chromium"), agents=fake_agents(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 3 skipped" in out.stdout, out.stdout
    assert summary(out.stdout) == [
        f"browser: SKIPPED, 2 tests (PANEWATCH_SKIP) — no chromium at {tmp_path / 'no-chromium'}",
        "test_sample.py::test_skips_for_its_own_reason: skipped: no /dev/full here",
        "3 tests skipped in all",
    ]


def test_an_opted_out_component_is_skipped_even_when_installed(tmp_path: Path) -> None:
    out = run(tmp_path, skip="agents", chromium=sys.executable, agents=fake_agents(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 passed, 2 skipped" in out.stdout, out.stdout
    assert summary(out.stdout)[:2] == ["agents: SKIPPED, 1 test (PANEWATCH_SKIP) — installed, opted out",
                                       "browser: ran in 1 test"]  # test_both skipped on agents


def test_opting_out_one_component_does_not_excuse_another(tmp_path: Path) -> None:
    out = run(tmp_path, skip="browser", chromium=sys.executable, agents=str(tmp_path / "none"))
    assert out.returncode == 0, out.stdout  # test_both skips on browser before agents is looked at
    out = run(tmp_path, skip="agents", chromium=str(tmp_path / "no-chromium"), agents=str(tmp_path / "none"))
    assert out.returncode == 1 and "1 error" in out.stdout, out.stdout  # test_browser fails; test_both skips
    assert summary(out.stdout)[:2] == [
        f"agents: SKIPPED, 1 test (PANEWATCH_SKIP) — PANEWATCH_AGENTS_BIN={tmp_path}/none is not a directory",
        f"browser: MISSING, 1 test failed — no chromium at {tmp_path / 'no-chromium'}; "
        "install: apt-get install chromium (or PANEWATCH_CHROMIUM=/path/to/chromium)"]


def test_nothing_skipped_is_said_too(tmp_path: Path) -> None:
    source = SAMPLE.replace('    pytest.skip("no /dev/full here")', "    pass")
    out = run(tmp_path, chromium=sys.executable, agents=fake_agents(tmp_path), source=source)
    assert out.returncode == 0, out.stdout + out.stderr
    assert summary(out.stdout) == ["agents: ran in 1 test", "browser: ran in 2 tests", "nothing skipped"]


@pytest.mark.parametrize("skip", ["browsr", "browser,gpu"])
def test_an_unknown_name_in_panewatch_skip_is_a_usage_error(tmp_path: Path, skip: str) -> None:
    out = run(tmp_path, skip=skip)
    assert out.returncode == 4, out.stdout + out.stderr
    assert "PANEWATCH_SKIP: unknown" in out.stderr and "(known: agents, browser, tmux, ssh, desktop)" in out.stderr


def test_an_unknown_component_in_a_marker_is_a_usage_error(tmp_path: Path) -> None:
    out = run(tmp_path, source='import pytest\n\n@pytest.mark.needs("gpu")\ndef test_x():\n    pass\n')
    assert out.returncode != 0
    assert "needs('gpu'): name one or more of agents, browser, tmux, ssh" in out.stdout + out.stderr


def test_scripts_test_and_the_readme_know_the_same_names() -> None:
    script = (TESTS.parent / "scripts" / "test").read_text()
    readme = (TESTS.parent / "README.md").read_text()
    for name in COMPONENTS:
        assert f"want {name}" in script, name
        assert f"`{name}`" in readme, name
