"""Other releases of an agent CLI, each in a private prefix: what `agents verify --version` runs, and the
release job (`scripts/verify-releases`) that checks the registry's last few releases of every npm agent.

    install(agent, "2.1.331") -> .../versions/claude/2.1.331/node_modules/.bin

An install goes through npm (the registry the machine is configured for), into a scratch folder renamed
into place once complete, so a killed install is never reused; a complete one is reused. Install scripts
run only for the packages the pinned install allows (tests/agents/package.json `allowScripts`: OpenCode's
postinstall puts its binary in place, Claude Code's its native one). The cache root is
$PANEWATCH_VERSIONS_CACHE, else ~/.cache/panewatch/versions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from panewatch.testing.capture import PROFILES, CaptureError

# The packages whose install scripts may run (the same as tests/agents/package.json's): without theirs,
# OpenCode's bin is a stub and Claude Code's native binary is not put in place.
ALLOW_SCRIPTS = {"@anthropic-ai/claude-code": True, "opencode-ai": True, "@github/keytar": False, "node-pty": False}
NPM_TIMEOUT = 900.0  # seconds: Claude Code and Codex are ~400 MB each
# A release as the registry lists it: 2.1.332, not 0.171.0-win32-x64 (a platform build) or 0.62.0-nightly.
STABLE = re.compile(r"\d+\.\d+\.\d+")


def cache_root() -> Path:
    return Path(os.environ.get("PANEWATCH_VERSIONS_CACHE") or Path.home() / ".cache" / "panewatch" / "versions")


def npm_agents() -> list[str]:
    """The agents that install from npm (Aider is a Python package: not handled here)."""
    return [agent for agent, profile in PROFILES.items() if not profile.python]


def _package(agent: str) -> str:
    profile = PROFILES.get(agent)
    if profile is None:
        raise CaptureError(f"unknown agent {agent!r}; known: {', '.join(PROFILES)}")
    if profile.python:
        raise CaptureError(f"{agent} is a Python package: --version installs npm agents only "
                           f"({', '.join(npm_agents())}); run another {profile.package} with --bin DIR")
    return profile.package


def check_version(version: str) -> str:
    if not re.fullmatch(r"\d+(?:\.\d+)+(?:-[0-9A-Za-z.-]+)?", version):
        raise CaptureError(f"not a version like 2.1.331: {version!r}")
    return version


def install(agent: str, version: str, *, root: Path | None = None,
            run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> Path:
    """The bin dir of `agent` at `version` in its private prefix, installing it first if needed."""
    package, version = _package(agent), check_version(version)
    dest = (root or cache_root()) / agent / version
    bin_dir = dest / "node_modules" / ".bin"
    if (dest / ".complete").exists() and (bin_dir / agent).exists():
        return bin_dir
    if shutil.which("npm") is None:
        raise CaptureError("npm not found: it installs the agent's version")
    dest.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=dest.parent))
    try:
        manifest = {"name": "panewatch-agent-version", "version": "0.0.0", "private": True,
                    "dependencies": {package: version}, "allowScripts": ALLOW_SCRIPTS}
        (scratch / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        try:
            done = run(["npm", "install", "--prefix", str(scratch), "--no-audit", "--no-fund", "--loglevel=error"],
                       capture_output=True, text=True, timeout=NPM_TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise CaptureError(f"npm install {package}@{version} took longer than {NPM_TIMEOUT:.0f}s") from exc
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-6:]
            raise CaptureError(f"npm install {package}@{version} failed: " + " / ".join(tail))
        got = _installed_version(scratch, package)
        if got != version:
            raise CaptureError(f"npm installed {package} {got or '(none)'}, not {version}")
        if not (scratch / "node_modules" / ".bin" / agent).exists():
            raise CaptureError(f"{package}@{version} has no `{agent}` command")
        (scratch / ".complete").touch()
        shutil.rmtree(dest, ignore_errors=True)
        scratch.rename(dest)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return bin_dir


def pinned(agent: str, version: str) -> Path | None:
    """The pinned install's bin dir (scripts/install-agents) when it holds `agent` at `version`: no second copy."""
    from panewatch.testing.capture import agent_version
    from panewatch.testing.homes import find_agents_bin

    bin_dir = find_agents_bin()
    if bin_dir is None or not (bin_dir / agent).exists():
        return None
    return bin_dir if agent_version(agent, bin_dir) == version else None


def _installed_version(prefix: Path, package: str) -> str | None:
    try:
        meta = json.loads((prefix / "node_modules" / package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = meta.get("version") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def latest_releases(versions: Sequence[str], count: int = 3) -> list[str]:
    """The `count` highest stable releases (no pre-release or platform suffix), oldest first."""
    stable = sorted({v for v in versions if STABLE.fullmatch(v)}, key=_key)
    return stable[-count:]


def registry_versions(agent: str, run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> list[str]:
    """Every version of the agent's package the registry serves (`npm view PKG versions`)."""
    package = _package(agent)
    done = run(["npm", "view", package, "versions", "--json"], capture_output=True, text=True, timeout=120,
               stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise CaptureError(f"npm view {package} failed: {done.stderr.strip()[-300:]}")
    found = json.loads(done.stdout or "[]")
    return [found] if isinstance(found, str) else [v for v in found if isinstance(v, str)]


@dataclass
class ReleaseRow:
    """One release of one agent, verified: each scenario's outcome ('pass', 'pass*', 'FAIL', or why not run)."""

    agent: str
    version: str
    outcomes: dict[str, str] = field(default_factory=dict)
    note: str = ""

    @property
    def passed(self) -> int:
        return sum(o.startswith("pass") for o in self.outcomes.values())


def release_table(rows: Sequence[ReleaseRow], scenarios: Sequence[str]) -> list[str]:
    """A markdown table, release by release: each scenario's outcome and the count that passed."""
    out = ["| agent | version | " + " | ".join(scenarios) + " | passed | note |",
           "|---|---|" + "---|" * len(scenarios) + "---|---|"]
    for row in rows:
        cells = [row.outcomes.get(name, "-") for name in scenarios]
        out.append(f"| {row.agent} | {row.version} | " + " | ".join(cells)
                   + f" | {row.passed}/{len(scenarios)} | {row.note} |")
    return out


Progress = Callable[[str], None]


def verify_releases(agents: Sequence[str], *, count: int = 3, scenarios: Sequence[str] | None = None,
                    cols: int = 120, rows: int = 32, progress: Progress | None = None,
                    details: Callable[[str, str, list[str]], None] | None = None) -> list[ReleaseRow]:
    """`agents verify` for the last `count` releases of each agent the registry serves, with the manifests in
    force. `details(agent, version, lines)` gets each release's verify table (its failures' rule traces)."""
    from panewatch.core.manifest import load_all
    from panewatch.testing.verify import table, verify

    manifests = load_all().list()
    out: list[ReleaseRow] = []
    for agent in agents:
        try:
            versions = latest_releases(registry_versions(agent), count)
        except (CaptureError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
            out.append(ReleaseRow(agent, "?", note=f"registry: {exc}"))
            continue
        for version in versions:
            row = ReleaseRow(agent, version)
            out.append(row)
            try:
                bin_dir = pinned(agent, version)
                if bin_dir is None:
                    if progress is not None:
                        progress(f"{agent} {version}: installing …")
                    bin_dir = install(agent, version)
            except CaptureError as exc:
                row.note = f"not installed: {exc}"
                continue
            results = verify(agent, manifests, cols=cols, rows=rows, scenarios=scenarios, bin_dir=bin_dir,
                             progress=progress)
            for r in results:
                row.outcomes[r.scenario.name] = ("pass*" if r.first is not None else "pass") if r.ok else \
                    "no run" if r.error else "FAIL"
            if details is not None:
                details(agent, version, table(results))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """scripts/verify-releases: the release table on stdout (markdown), progress and each release's
    verify table on stderr. Exit 1 if any scenario of any release failed."""
    import argparse
    import sys

    from panewatch.testing.verify import SCENARIOS

    parser = argparse.ArgumentParser(prog="verify-releases", description=main.__doc__)
    parser.add_argument("--agent", action="append", choices=npm_agents(),
                        help="an npm agent (repeatable; default: every one)")
    parser.add_argument("--count", type=int, default=3, help="releases per agent, newest last (default 3)")
    parser.add_argument("--scenario", help="a comma-separated subset of the verify scenarios")
    ns = parser.parse_args(argv)
    scenarios = ns.scenario.split(",") if ns.scenario else [s.name for s in SCENARIOS]

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def show(agent: str, version: str, lines: list[str]) -> None:
        say(f"--- {agent} {version}")
        for line in lines:
            say(line)

    rows = verify_releases(ns.agent or npm_agents(), count=ns.count, scenarios=scenarios, progress=say,
                           details=show)
    print("\n".join(release_table(rows, scenarios)))
    return 0 if all(row.passed == len(scenarios) for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
