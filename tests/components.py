"""The real components the tests drive: how to tell each one is here, how to get it, and the pytest hooks
that keep any of them from being skipped silently.

A test that needs one says so: `@pytest.mark.needs("browser")` (or `pytestmark = pytest.mark.needs(...)`).
When the component is missing, the test FAILS with a message naming how to install it — unless the
name is in `PANEWATCH_SKIP` (comma-separated, e.g. `PANEWATCH_SKIP=browser,agents`), the one explicit
opt-out; an opted-out component's tests skip even when it is installed. Either way the run ends with
a list of every skip and why (`pytest_terminal_summary`). `scripts/test` installs all of them first.

tests/conftest.py imports the hooks; tests/test_components.py runs them on tiny test files.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from panewatch.testing.homes import find_agents_bin

SKIP_ENV = "PANEWATCH_SKIP"
SKIP_PREFIX = "PANEWATCH_SKIP="  # every skip this module makes starts so (the summary groups on it)
# the bins of tests/agents/package.json the tests drive
AGENT_CLIS = ("claude", "codex", "gemini", "claude-agent-acp", "codex-acp", "qwen", "opencode", "copilot", "aider")
TMUX_MIN = (3, 2)  # control mode's pause-after flow control


def chromium_path() -> str:
    return os.environ.get("PANEWATCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def sshd_path() -> str | None:
    return shutil.which("sshd") or next((p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd")
                                         if os.access(p, os.X_OK)), None)


def _agents() -> str | None:
    bin_dir = find_agents_bin()
    if bin_dir is None:
        where = os.environ.get("PANEWATCH_AGENTS_BIN")
        return (f"PANEWATCH_AGENTS_BIN={where} is not a directory" if where
                else "no pinned agent CLIs (PANEWATCH_AGENTS_BIN unset, no complete install-agents cache)")
    missing = [name for name in AGENT_CLIS if not (bin_dir / name).exists()]
    return f"{', '.join(missing)} not in {bin_dir}" if missing else None


def _browser() -> str | None:
    path = chromium_path()
    if not os.access(path, os.X_OK):
        return f"no chromium at {path}"
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed"
    return None


def _tmux() -> str | None:
    tmux = shutil.which("tmux")
    if tmux is None:
        return "tmux not on PATH"
    try:
        out = subprocess.run([tmux, "-V"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{tmux} -V failed: {exc}"
    found = re.search(r"(\d+)\.(\d+)", out)
    if found is None or (int(found[1]), int(found[2])) < TMUX_MIN:
        return f"{out.strip() or tmux} is older than tmux {'.'.join(map(str, TMUX_MIN))}"
    return None


def _ssh() -> str | None:
    missing = [name for name, path in (("sshd", sshd_path()), ("ssh", shutil.which("ssh")),
                                       ("ssh-keygen", shutil.which("ssh-keygen"))) if path is None]
    return f"{', '.join(missing)} not found" if missing else None


def _desktop() -> str | None:
    missing = [name for name in ("Xvfb", "kitty", "dbus-daemon", "dbus-send") if shutil.which(name) is None]
    return f"{', '.join(missing)} not found" if missing else None


@dataclass(frozen=True)
class Component:
    name: str
    what: str
    install: str
    probe: Callable[[], str | None]  # None when usable, else what is missing

    @functools.cached_property
    def missing(self) -> str | None:
        return self.probe()


COMPONENTS = {c.name: c for c in (
    Component("agents", "the pinned real agent CLIs (tests/agents/package-lock.json)",
              "scripts/install-agents (needs Node >= 20 and npm), then export PANEWATCH_AGENTS_BIN=<the dir it prints>",
              _agents),
    Component("browser", "Debian's chromium, driven by Playwright",
              "apt-get install chromium (or PANEWATCH_CHROMIUM=/path/to/chromium)", _browser),
    Component("tmux", f"tmux >= {'.'.join(map(str, TMUX_MIN))}", "apt-get install tmux", _tmux),
    Component("ssh", "OpenSSH's server and client (sshd, ssh, ssh-keygen)",
              "apt-get install openssh-server openssh-client", _ssh),
    Component("desktop", "a desktop to test against: Xvfb, kitty (its remote control) and a D-Bus session bus",
              "apt-get install xvfb kitty dbus", _desktop),
)}


def opted_out(value: str | None = None) -> frozenset[str]:
    """The names in PANEWATCH_SKIP; an unknown one is a usage error (a typo must not run everything)."""
    raw = os.environ.get(SKIP_ENV, "") if value is None else value
    names = frozenset(n.strip() for n in raw.split(",") if n.strip())
    unknown = sorted(names - COMPONENTS.keys())
    if unknown:
        raise pytest.UsageError(f"{SKIP_ENV}: unknown {', '.join(unknown)} (known: {', '.join(COMPONENTS)})")
    return names


# -- the hooks (tests/conftest.py imports them) ---------------------------------------------------------------

_SKIP_KEY = pytest.StashKey[frozenset[str]]()
_SEEN_KEY = pytest.StashKey[dict[str, Counter[str]]]()  # component -> {"ran", "failed", "skipped"} test counts


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"needs(*components): the test drives real components "
                                       f"({', '.join(COMPONENTS)}); missing ones fail it unless named in {SKIP_ENV}")
    config.stash[_SKIP_KEY] = opted_out()
    config.stash[_SEEN_KEY] = {name: Counter() for name in COMPONENTS}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in item.iter_markers("needs"):
            unknown = [n for n in marker.args if n not in COMPONENTS]
            if unknown or not marker.args:
                raise pytest.UsageError(f"{item.nodeid}: needs({', '.join(map(repr, marker.args))}): "
                                        f"name one or more of {', '.join(COMPONENTS)}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    skip, seen = item.config.stash[_SKIP_KEY], item.config.stash[_SEEN_KEY]
    needed = list(dict.fromkeys(n for marker in item.iter_markers("needs") for n in marker.args))
    for name in needed:  # an opt-out wins over a missing component: the user said so
        if name in skip:
            seen[name]["skipped"] += 1
            pytest.skip(f"{SKIP_PREFIX}{name}: {COMPONENTS[name].missing or 'installed, opted out'}")
    for name in needed:
        component = COMPONENTS[name]
        if component.missing:
            seen[name]["failed"] += 1
            pytest.fail(f"needs {component.what}: {component.missing}.\n  Install: {component.install}"
                        f"\n  (or run scripts/test, which installs it; or opt out: {SKIP_ENV}={name})", pytrace=False)
    for name in needed:
        seen[name]["ran"] += 1


def skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(reason).removeprefix("Skipped: ")


def _tests(count: int) -> str:
    return f"{count} test{'' if count == 1 else 's'}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The last word of every run: each real component (ran, missing, skipped) and every skip with its reason."""
    opted, seen = config.stash.get(_SKIP_KEY, frozenset()), config.stash.get(_SEEN_KEY, {})
    write = terminalreporter.write_line
    terminalreporter.write_sep("-", "real components and skips")
    for name, component in COMPONENTS.items():
        counts = seen.get(name, Counter())
        if counts["skipped"]:
            write(f"{name}: SKIPPED, {_tests(counts['skipped'])} ({SKIP_ENV}) — "
                  f"{component.missing or 'installed, opted out'}")
        elif name in opted:
            write(f"{name}: opted out ({SKIP_ENV}); no selected test needs it")
        if counts["failed"]:
            write(f"{name}: MISSING, {_tests(counts['failed'])} failed — {component.missing}; "
                  f"install: {component.install}")
        if counts["ran"]:
            write(f"{name}: ran in {_tests(counts['ran'])}")
    others = [(r.nodeid, skip_reason(r)) for r in terminalreporter.stats.get("skipped", [])
              if not skip_reason(r).startswith(SKIP_PREFIX)]
    for nodeid, reason in others:
        write(f"{nodeid}: skipped: {reason}")
    total = len(terminalreporter.stats.get("skipped", []))
    write("nothing skipped" if not total else f"{_tests(total)} skipped in all")
