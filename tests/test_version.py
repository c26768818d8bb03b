"""The running agent's version (package metadata, cached `--version`), and "not verified for" wherever
the agent shows: the board's card, `ls`, `ls --json`, `agents list`. The verdict never changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from boardutil import AGENT, ServeProcess, cli, wait_for, wait_state
from panewatch.core.identity import parse_version, unverified_note
from panewatch.core.manifest import ManifestError, load_all, load_manifest_text
from panewatch.runtime.version import VersionCache, installed_version, package_version, process_version

CLAUDE = load_all().manifests["claude"]


def fake_claude(bin_dir: Path, version: str, *, runs: Path | None = None) -> Path:
    """An executable named `claude` that answers `--version` like Claude Code and otherwise is the
    board's scripted Claude-like agent (tests/board_agent.py). `runs`: a file that counts `--version`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "claude"
    count = f"open({str(runs)!r}, 'a').write('x')\n    " if runs else ""
    path.write_text(
        f"#!{sys.executable}\n"
        "import runpy, sys\n"
        "if sys.argv[1:] == ['--version']:\n"
        f"    {count}print({version + ' (Claude Code)'!r})\n"
        "    sys.exit(0)\n"
        f"sys.argv = [{str(AGENT)!r}, *sys.argv[1:]]\n"
        f"runpy.run_path({str(AGENT)!r}, run_name='__main__')\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def test_versions_as_the_clis_print_them() -> None:
    assert parse_version("2.1.332 (Claude Code)\n") == "2.1.332"
    assert parse_version("codex-cli 0.171.0\n") == "0.171.0"
    assert parse_version("0.61.0\n") == "0.61.0"
    assert parse_version("aider 0.86.2.dev3+g1a2b\n") == "0.86.2"
    assert parse_version("1.0.0-beta.3") == "1.0.0-beta.3"
    assert parse_version("no version here") is None


def test_the_note_names_the_running_and_the_tested_versions() -> None:
    assert unverified_note(CLAUDE, "2.1.332") is None
    assert unverified_note(CLAUDE, None) is None  # unknown: nothing we know to warn about
    assert unverified_note(CLAUDE, "2.2.0") == "not verified for 2.2.0 · tested 2.1.332"
    aider = load_all().manifests["aider"]
    assert unverified_note(aider, "0.86.1") == "not verified for 0.86.1 · tested 0.86.2"
    cursor = load_all().manifests["cursor"]  # written from peers' patterns, never checked
    assert not cursor.verified
    assert unverified_note(cursor, "1.0.0") == "not verified for 1.0.0 · tested no version"


def test_manifest_versions_are_validated() -> None:
    base = ('[agent]\nid = "toy"\nprocesses = ["toy"]\n{agent}\n'
            '[[rules]]\nid = "a"\nstate = "idle"\nany = ["x"]\nnote = "n"\n')
    with pytest.raises(ManifestError) as bad:
        load_manifest_text(base.format(agent='versions = ["latest"]\nverified = true'), "toy.toml")
    assert "`versions` entry 'latest' is not a version" in str(bad.value)
    with pytest.raises(ManifestError) as bare:
        load_manifest_text(base.format(agent="verified = true"), "toy.toml")
    assert "needs the `versions`" in str(bare.value)
    ok = load_manifest_text(base.format(agent='versions = ["1.2.3"]\nverified = true\npackages = ["toy-cli"]'),
                            "toy.toml")
    assert ok.versions == ("1.2.3",) and ok.packages == ("toy-cli",)
    for manifest in load_all():
        assert not manifest.verified or manifest.packages, f"{manifest.id}: verified, but no package to read"


def test_npm_package_metadata_next_to_the_program(tmp_path: Path) -> None:
    pkg = tmp_path / "node_modules" / "@anthropic-ai" / "claude-code"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": "@anthropic-ai/claude-code", "version": "2.2.0"}))
    exe = pkg / "bin" / "claude.exe"
    exe.write_text("")
    link_dir = tmp_path / "node_modules" / ".bin"
    link_dir.mkdir()
    (link_dir / "claude").symlink_to(exe)
    assert package_version(link_dir / "claude", CLAUDE.packages) == "2.2.0"  # the link is followed
    assert package_version(link_dir / "claude", ("@other/pkg",)) is None  # only the manifest's packages


def test_python_console_script_metadata(tmp_path: Path) -> None:
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "lib" / "python3.11" / "site-packages" / "aider_chat-0.86.1.dist-info").mkdir(parents=True)
    (env / "bin" / "aider").write_text("#!/usr/bin/env python\n")
    assert package_version(env / "bin" / "aider", ("aider-chat",)) == "0.86.1"
    assert package_version(env / "bin" / "aider", ("other",)) is None


def test_version_flag_runs_once_per_binary_and_mtime(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    binary = fake_claude(tmp_path / "bin", "2.2.0", runs=runs)
    cache = VersionCache(tmp_path / "cache" / "versions.json")
    assert installed_version(binary, CLAUDE, cache) == "2.2.0"
    assert installed_version(binary, CLAUDE, VersionCache(cache.path)) == "2.2.0"  # from the file
    assert runs.read_text() == "x"
    os.utime(binary, ns=(0, 1_000_000_000))  # an update replaces the binary: asked again
    assert installed_version(binary, CLAUDE, cache) == "2.2.0"
    assert runs.read_text() == "xx"


def test_version_flag_is_bounded(tmp_path: Path) -> None:
    hang = tmp_path / "claude"
    hang.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    hang.chmod(0o755)
    assert VersionCache(tmp_path / "v.json", timeout=0.5).version([str(hang)], hang) is None


def test_version_of_a_running_process(tmp_path: Path) -> None:
    binary = fake_claude(tmp_path / "bin", "2.2.0")
    master, slave = os.openpty()  # the scripted agent wants a terminal
    proc = subprocess.Popen([str(binary), os.devnull], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        cache = VersionCache(tmp_path / "v.json")
        # The kernel runs the script with its interpreter: the version is asked of the script's path.
        assert wait_for(lambda: process_version(proc.pid, CLAUDE, cache), "the version", 10) == "2.2.0"
    finally:
        proc.kill()
        proc.wait()
        os.close(master)


def test_agents_list_says_an_installed_version_is_not_verified(tmp_path: Path) -> None:
    fake_claude(tmp_path / "bin", "2.2.0")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run([sys.executable, "-m", "panewatch", "agents", "list"], capture_output=True, text=True,
                         env=env, timeout=60, check=True).stdout
    line = next(row for row in out.splitlines() if str(tmp_path / "bin" / "claude") in row)
    assert "installed: 2.2.0" in line and "not verified for 2.2.0 · tested 2.1.332" in line


def test_board_card_and_ls_say_not_verified_without_changing_the_verdict(serve: ServeProcess,
                                                                        tmp_path: Path) -> None:
    panes = {}
    for version in ("2.2.0", "2.1.332"):
        binary = fake_claude(tmp_path / version, version)
        out = cli("new", "--name", f"claude-{version}", "--size", "100x32", "--", str(binary),
                  str(tmp_path / f"{version}.log"), check=True)
        panes[version] = out.stdout.strip()
    new = wait_for(lambda: (c := wait_state(panes["2.2.0"], "idle")).get("agent_version") and c,
                   "the new version learnt")
    tested = wait_for(lambda: (c := wait_state(panes["2.1.332"], "idle")).get("agent_version") and c,
                      "the tested version learnt")
    assert new["agent"] == tested["agent"] == "claude"
    assert new["agent_version"] == "2.2.0" and new["unverified"] == "not verified for 2.2.0 · tested 2.1.332"
    assert tested["agent_version"] == "2.1.332" and tested["unverified"] is None
    assert (new["state"], new["rule"], new["source"]) == (tested["state"], tested["rule"], tested["source"])
    listing = cli("ls", check=True).stdout.splitlines()
    at = next(i for i, row in enumerate(listing) if row.startswith(panes["2.2.0"] + " "))
    assert listing[at + 1].strip() == "not verified for 2.2.0 · tested 2.1.332"
    assert not any("not verified" in row for row in listing if row.startswith(panes["2.1.332"] + " "))
    assert sum("not verified" in row for row in listing) == 1
