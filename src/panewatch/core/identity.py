"""Which agent a process is, from its name and command line: pure (no process is looked at here).

The runtime (runtime/process.py) reads the foreground group's processes with psutil, a tmux client
reads `#{pane_current_command}`; both ask this module what the names mean. Which version of the
agent runs is read by runtime/version.py; whether the manifest was verified on it is said here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath

from panewatch.core.manifest import VERSION_RE, Manifest

SHELLS = frozenset({
    "sh", "bash", "zsh", "fish", "dash", "ash", "ksh", "mksh", "oksh", "loksh", "yash", "tcsh", "csh",
    "nu", "elvish", "xonsh", "pwsh", "busybox",
})
# A script run by one of these is named by its script path, not by the interpreter.
INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno", "python", "ruby", "perl", "env", *SHELLS})
# Package layouts put the real name above a generic entry point: .../@anthropic-ai/claude-code/cli.js
# Launchers that may start the agent as a child in the same group: their children are looked at.
WRAPPERS = frozenset({"npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "uv", "uvx", "pipx", "sudo", "doas", "timeout",
                      "nice", "nohup", "time", "script", "xargs", "watch", "direnv", "mise", "asdf", "nix", "make",
                      "just"})
_GENERIC_STEMS = frozenset({"cli", "index", "main", "entry", "run", "start", "app", "bundle"})
_GENERIC_DIRS = frozenset({"dist", "bin", "build", "lib", "src", "out", "esm", "cjs", "node_modules"})


def base_name(name: str) -> str:
    name = name.lstrip("-")  # login shells run as "-bash"
    return PurePath(name).name if name else ""


def is_interpreter(name: str) -> bool:
    base = base_name(name)
    return base in INTERPRETERS or base.startswith(("python", "node", "ruby", "perl"))


def script_of(cmdline: Iterable[str]) -> str | None:
    """The script an interpreter runs (`node …/cli.js` → …/cli.js; `python -m aider` → aider)."""
    return _script(tuple(cmdline))


def _script(cmdline: tuple[str, ...]) -> str | None:
    """The script an interpreter runs: `-m module` for python, else the first non-option argument."""
    args = list(cmdline[1:])
    while args:
        arg = args.pop(0)
        if arg == "-m" and args:
            return args[0]
        if arg in ("-c", "-e", "--eval"):
            return None  # inline code names nothing
        if not arg.startswith("-"):
            return arg
    return None


def _path_names(path: str) -> list[str]:
    """Names a script path may carry: `.../bin/gemini` → gemini; `.../claude-code/cli.js` → claude-code."""
    p = PurePath(path)
    names = [p.name, p.stem]
    if p.stem in _GENERIC_STEMS or p.name in _GENERIC_STEMS:
        for parent in p.parents:
            if parent.name and parent.name not in _GENERIC_DIRS:
                names.append(parent.name)
                for suffix in ("-cli", "-code", "-agent"):
                    if parent.name.endswith(suffix):
                        names.append(parent.name[: -len(suffix)])
                break
    return names


def candidate_names(name: str, cmdline: Iterable[str]) -> list[str]:
    """Every name under which a process may be known, most specific first."""
    argv = tuple(cmdline)
    out: list[str] = []
    for value in (name, argv[0] if argv else ""):
        base = base_name(value)
        if base:
            out.append(base)
    if argv and (is_interpreter(name) or is_interpreter(argv[0])):
        script = _script(argv)
        if script:
            out.extend(_path_names(script))
    return list(dict.fromkeys(out))


def match_agent(name: str, cmdline: Iterable[str], manifests: Iterable[Manifest]) -> str | None:
    """The id of the first manifest listing one of the process's names in `processes`."""
    names = candidate_names(name, cmdline)
    for manifest in manifests:
        wanted = set(manifest.processes)
        if any(n in wanted for n in names):
            return manifest.id
    return None


def is_shell_name(name: str) -> bool:
    return base_name(name) in SHELLS


def parse_version(text: str) -> str | None:
    """The version in a CLI's `--version` output: '2.1.332 (Claude Code)', 'codex-cli 0.171.0', '0.61.0'."""
    found = VERSION_RE.search(text)
    return found.group(0) if found else None


def unverified_note(manifest: Manifest, version: str | None) -> str | None:
    """'not verified for 2.2.0 · tested 2.1.332' when the running version is outside the versions the
    manifest was verified on; None when it is one of them, or when the version is unknown (nothing to
    warn about that we know). Says so; never changes a verdict."""
    if version is None or (manifest.verified and version in manifest.versions):
        return None
    tested = ", ".join(manifest.versions) if manifest.verified and manifest.versions else "no version"
    return f"not verified for {version} · tested {tested}"
