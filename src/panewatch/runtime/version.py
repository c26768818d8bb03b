"""Which version of an agent runs: read from its package's metadata, else its cached `--version`.

In order, for a running agent process (its pid) or an installed binary (a path on PATH):

1. the metadata of the package it ships in, found from its real path: walking up from
   `…/node_modules/@anthropic-ai/claude-code/bin/claude.exe` to the `package.json` whose `name` is
   one of the manifest's `packages`; for a Python console script (`<venv>/bin/aider`) the
   `<venv>/lib/python*/site-packages/<name>-<version>.dist-info` of such a package;
2. else `<program> --version`, run once per program path and mtime with a bounded timeout (stdin
   closed, its own session so it never touches the pane's tty), remembered in the user's cache dir
   (`versions.json`).

Everything here blocks (file reads, a subprocess): a live pane calls it in an executor thread
(`ProcessVersions`), never on its event loop. What the version means for the manifest
(`unverified_note`) is core/identity.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

from panewatch.core.identity import is_interpreter, parse_version, script_of
from panewatch.core.machine import Foreground
from panewatch.core.manifest import Manifest
from panewatch.runtime.paths import cache_dir

VERSION_TIMEOUT = 5.0  # seconds: a node CLI prints its version in ~0.5 s cold
MAX_PARENTS = 6  # package.json is at most this many folders above the program (bin/, dist/, vendor/…)
CACHE_FILE = "versions.json"
_lock = threading.Lock()  # the cache file is shared by every pane's executor thread


def _normal(name: str) -> str:
    """PyPI's name normalisation (PEP 503), with `_` as dist-info folder names spell it."""
    return re.sub(r"[-_.]+", "_", name).lower()


def package_version(program: Path, packages: Sequence[str]) -> str | None:
    """The version in the metadata of the package (one of `packages`) that `program` belongs to."""
    if not packages:
        return None
    try:
        real = program.resolve()
    except OSError:
        return None
    wanted = set(packages)
    for parent in list(real.parents)[:MAX_PARENTS]:
        with contextlib.suppress(OSError, ValueError):
            doc = json.loads((parent / "package.json").read_text(encoding="utf-8"))
            if isinstance(doc, dict) and doc.get("name") in wanted and isinstance(doc.get("version"), str):
                return str(doc["version"])
    return _dist_info_version(program, packages)


def _dist_info_version(program: Path, packages: Sequence[str]) -> str | None:
    """A console script in `<env>/bin/`: its package's dist-info in that env's site-packages."""
    env = program.absolute().parent.parent
    wanted = {_normal(p) for p in packages}
    with contextlib.suppress(OSError):
        for site in sorted(env.glob("lib/python*/site-packages")):
            for info in site.glob("*.dist-info"):
                name, _, version = info.name[: -len(".dist-info")].rpartition("-")
                if _normal(name) in wanted and version:
                    return version
    return None


class VersionCache:
    """`--version` answers by program path, valid while the program's mtime and size are unchanged."""

    def __init__(self, path: Path | None = None, timeout: float = VERSION_TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout
        self.runs = 0  # how many times a program was actually run (tests read it)

    def _file(self) -> Path:
        return self.path or cache_dir() / CACHE_FILE

    def _load(self) -> dict[str, dict[str, object]]:
        try:
            doc = json.loads(self._file().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def version(self, command: Sequence[str], program: Path) -> str | None:
        """`command --version`'s version (cached for `program`); None if it says none or fails."""
        try:
            real = program.resolve()
            st = real.stat()
        except OSError:
            return None
        stamp = [st.st_mtime_ns, st.st_size]
        key = str(real)
        with _lock:
            entry = self._load().get(key)
        if isinstance(entry, dict) and entry.get("stamp") == stamp:
            cached = entry.get("version")
            return cached if isinstance(cached, str) else None
        version = self._run([*command, "--version"])
        with _lock, contextlib.suppress(OSError):
            doc = self._load()
            doc[key] = {"stamp": stamp, "version": version}
            file = self._file()
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp = file.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
            tmp.replace(file)
        return version

    def _run(self, argv: list[str]) -> str | None:
        self.runs += 1
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=self.timeout,
                                  start_new_session=True, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode != 0:
            return None
        return parse_version(done.stdout.decode("utf-8", "replace")) or parse_version(
            done.stderr.decode("utf-8", "replace"))


def _program(exe: str, cmdline: Sequence[str], cwd: str | None) -> tuple[list[str], Path] | None:
    """(the command to add `--version` to, the file whose path and mtime key the cache)."""
    if cmdline and (is_interpreter(exe) or is_interpreter(cmdline[0])):
        script = script_of(cmdline)
        if script is None or not script.strip():
            return None
        path = Path(script)
        if not path.is_absolute():
            if cwd is None or not (Path(cwd) / path).is_file():
                return None  # `python -m aider`: a module, not a file (its package metadata is found below)
            path = Path(cwd) / path
        return [exe or cmdline[0], str(path)], path
    program = exe or (cmdline[0] if cmdline else "")
    return ([program], Path(program)) if program and os.path.isabs(program) else None


def installed_version(binary: Path, manifest: Manifest, cache: VersionCache | None = None) -> str | None:
    """The version of an installed agent binary (e.g. `shutil.which('claude')`)."""
    return package_version(binary, manifest.packages) or (cache or VersionCache()).version([str(binary)], binary)


def process_version(pid: int, manifest: Manifest, cache: VersionCache | None = None) -> str | None:
    """The version of the running agent process `pid`; None if it cannot be told (or it is gone)."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            exe, cmdline = proc.exe(), tuple(proc.cmdline())
            cwd = proc.cwd()
    except (psutil.Error, OSError):
        return None
    found = _program(exe, cmdline, cwd)
    if found is None:
        return None
    command, program = found
    return package_version(program, manifest.packages) or (cache or VersionCache()).version(command, program)


class ProcessVersions:
    """Learns the version of each agent process a live pane sees, once, off the event loop: the probe
    runs in the loop's default executor; `on_version(pid, version)` is called back on the loop."""

    def __init__(self, cache: VersionCache | None = None) -> None:
        self.cache = cache or VersionCache()
        self.known: dict[int, str | None] = {}
        self._pending: set[int] = set()

    def wanted(self, fg: Foreground | None) -> bool:
        pid = fg.agent_pid if fg is not None else None
        return pid is not None and pid not in self.known and pid not in self._pending

    def probe(self, loop: asyncio.AbstractEventLoop, fg: Foreground, manifests: Sequence[Manifest],
              on_version: Callable[[int, str | None], None]) -> None:
        manifest = next((m for m in manifests if m.id == fg.agent_id), None)
        pid = fg.agent_pid
        if manifest is None or pid is None or not self.wanted(fg):
            return
        self._pending.add(pid)
        future = loop.run_in_executor(None, process_version, pid, manifest, self.cache)

        def done(f: asyncio.Future[str | None]) -> None:
            self._pending.discard(pid)
            if f.cancelled():
                return
            version = None if f.exception() is not None else f.result()
            self.known[pid] = version
            on_version(pid, version)

        future.add_done_callback(done)
