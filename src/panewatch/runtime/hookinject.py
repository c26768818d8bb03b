"""panewatch's hooks added to one agent launch, without touching the user's own settings files.

Each agent takes them its own way; which events and what each reports is core/hookevents.py:

    claude   `--settings JSON` (merged by Claude with the user's settings files: their hooks run too)
    codex    `-c hooks.EVENT=[...]` config overrides (the "session flags" layer, merged with the user's
             config.toml) plus `-c hooks.state={...}`: the trust Codex requires before it runs a hook,
             as the hash Codex itself computes (`codex_trust_hash`), so no review screen and no write
             to the user's config
    gemini   a per-launch "system defaults" settings file named by GEMINI_CLI_SYSTEM_DEFAULTS_PATH, the
             lowest settings layer (the user's settings override it; hook lists are concatenated, so
             the user's hooks run too). Gemini CLI reads that file only if it and every directory above
             it belong to root and are writable by nobody else: per-launch hooks work when panewatch
             runs as root; otherwise `inject_gemini_hooks` raises HooksUnavailable.
    qwen     the same layer of Qwen Code (QWEN_CODE_SYSTEM_DEFAULTS_PATH), Claude-shaped hooks; Qwen has
             no ownership rule (any user), and its system hooks run whatever the folder's trust
    copilot  `--plugin-dir DIR`: a per-launch plugin (plugin.json + hooks.json) in the private runtime dir;
             Copilot CLI loads it beside the user's own plugins and hooks ($COPILOT_HOME/hooks, the
             repo's .github/hooks), which keep running; any user

Hooks run synchronously: the agent waits for each one, which keeps reports in order (PreToolUse
'working' must not overtake PermissionRequest 'blocked'); the client's own timeouts bound the wait
and HOOK_TIMEOUT is the agent's backstop.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

from panewatch.core.hookevents import (
    CLAUDE_HOOK_STATES,
    CLAUDE_TOOL_EVENTS,
    CODEX_HOOK_STATES,
    COPILOT_HOOK_STATES,
    GEMINI_HOOK_STATES,
    QWEN_HOOK_STATES,
)
from panewatch.core.hooksettings import snake
from panewatch.errors import HooksUnavailable
from panewatch.runtime import paths

__all__ = [
    "CLAUDE_HOOKS",
    "HOOK_TIMEOUT",
    "HooksUnavailable",
    "claude_hook_settings",
    "codex_hook_overrides",
    "codex_hooks",
    "codex_trust_hash",
    "copilot_hook_settings",
    "gemini_hook_settings",
    "gemini_settings_dir",
    "hook_launcher",
    "inject_claude_hooks",
    "inject_codex_hooks",
    "inject_copilot_hooks",
    "inject_gemini_hooks",
    "inject_qwen_hooks",
    "qwen_hook_settings",
    "remove_quietly",
]

HOOK_TIMEOUT = 5  # seconds; the agent kills a hook after this (ours finishes in tens of ms)


def hook_launcher() -> list[str]:
    """The fastest robust way for a hook to start `panewatch ...`: argv to pass as `panewatch_argv`.

    `python -I -S` skips site (no .pth scanning, no site-packages: the pane client is stdlib only)
    and isolates from the agent's cwd and PYTHON* variables, so a `panewatch/` or `json.py` in
    the project being edited cannot shadow ours. About twice as fast as the console script.
    """
    package_parent = str(Path(__file__).resolve().parents[2])
    code = f"import sys;sys.path.insert(0,{package_parent!r});from panewatch.cli import main;sys.exit(main())"
    return [sys.executable, "-I", "-S", "-c", code]


def _pane_command(panewatch_argv: list[str], event: str, state: str | None, installed: bool = False) -> str:
    """The hook's shell command: `pane report STATE --event EVENT`, or `pane notify` (state None);
    `installed`: `pane hook …`, the hooks of the user's own settings (runtime/hooksinstall.py)."""
    args = ["notify"] if state is None else ["report", state, "--event", event]
    return shlex.join([*panewatch_argv, "pane", *(["hook"] if installed else []), *args])


# -- Claude Code -------------------------------------------------------------------------------

# event -> `panewatch pane ...` arguments; the events whose notification_type decides run `pane notify`.
CLAUDE_HOOKS: dict[str, tuple[str, ...]] = {
    event: ("notify",) if state is None else ("report", state) for event, state in CLAUDE_HOOK_STATES.items()
}


def claude_hook_settings(panewatch_argv: list[str], *, installed: bool = False) -> dict[str, Any]:
    """The `--settings` JSON object that adds panewatch's hooks to one Claude Code launch (`installed`:
    the `pane hook` commands for the user's settings file).

    `panewatch_argv` runs panewatch: `hook_launcher()` (fastest), or e.g. the console script.
    """
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event, state in CLAUDE_HOOK_STATES.items():
        command = _pane_command(panewatch_argv, event, state, installed)
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command,
                                            "timeout": HOOK_TIMEOUT}]}
        if event in CLAUDE_TOOL_EVENTS:  # all tools
            entry = {"matcher": "*", **entry}
        hooks[event] = [entry]
    return {"hooks": hooks}


def inject_claude_hooks(argv: list[str], panewatch_argv: list[str], *, cwd: str | None = None) -> list[str]:
    """`argv` (a claude command line) with panewatch's hooks added through `--settings`.

    `--settings` merges with the user's settings files, so their own hooks keep running. If the
    command already has `--settings FILE-or-JSON`, ours are merged into (the last) one rather than
    clobbering it; if that value cannot be read we leave the command as it is (screen detection
    still works, and the user's settings must win).
    """
    ours = claude_hook_settings(panewatch_argv)
    if not argv:
        return list(argv)
    out = list(argv)
    found: tuple[int, str, bool] | None = None  # (index of the value, value, was `--settings=`)
    for i, arg in enumerate(out[1:], start=1):
        if arg == "--":
            break
        if arg == "--settings" and i + 1 < len(out):
            found = (i + 1, out[i + 1], False)
        elif arg.startswith("--settings="):
            found = (i, arg.partition("=")[2], True)
    if found is None:
        return [out[0], "--settings", json.dumps(ours, separators=(",", ":")), *out[1:]]
    index, value, inline = found
    theirs = _load_settings_value(value, cwd)
    if theirs is None:
        return out
    merged = json.dumps(_merge_hooks(theirs, ours), separators=(",", ":"))
    out[index] = f"--settings={merged}" if inline else merged
    return out


def _load_settings_value(value: str, cwd: str | None) -> dict[str, Any] | None:
    """Claude's `--settings` takes a JSON string or a path to a JSON file."""
    text = value
    if not value.lstrip().startswith("{"):
        path = Path(value).expanduser()
        if cwd is not None and not path.is_absolute():
            path = Path(cwd) / path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _merge_hooks(theirs: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    merged = dict(theirs)
    their_hooks = theirs.get("hooks")
    hooks: dict[str, Any] = dict(their_hooks) if isinstance(their_hooks, dict) else {}
    for event, entries in ours["hooks"].items():
        existing = hooks.get(event)
        hooks[event] = [*(existing if isinstance(existing, list) else []), *entries]
    merged["hooks"] = hooks
    return merged


# -- Codex CLI ---------------------------------------------------------------------------------

# Codex clamps these events' hook timeouts to 1-3 s before hashing: declare what it will store.
_CODEX_SHORT_TIMEOUT = {"Interrupt": 3, "SessionEnd": 3}
# The source path Codex gives hooks from `-c` overrides; part of every trust key.
CODEX_SESSION_FLAGS = "/<session-flags>/config.toml"
_snake = snake  # Codex's event names in trust keys (core/hooksettings.py)


def codex_trust_hash(event: str, command: str, timeout: int) -> str:
    """The `trusted_hash` Codex 0.171.0 expects for one command hook (one group, one handler, no matcher):
    sha256 of the canonical JSON (sorted keys, compact, unescaped) of its normalised identity. An
    internal format of Codex: tests/e2e checks it against the pinned binary (a wrong hash = hooks that
    never run, and a "Hooks need review" screen)."""
    identity = {"event_name": _snake(event),
                "hooks": [{"async": False, "command": command, "timeout": timeout, "type": "command"}]}
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _toml(value: object) -> str:
    """A TOML inline value (JSON's string escapes are valid TOML basic strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_toml_key(k)}={_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML for {type(value).__name__}")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def codex_hooks(panewatch_argv: list[str], *, installed: bool = False) -> list[tuple[str, str, int]]:
    """(event, command, timeout) of each Codex hook panewatch adds (`installed`: for config.toml)."""
    return [(event, _pane_command(panewatch_argv, event, state, installed),
             _CODEX_SHORT_TIMEOUT.get(event, HOOK_TIMEOUT)) for event, state in CODEX_HOOK_STATES.items()]


def codex_hook_overrides(panewatch_argv: list[str]) -> list[str]:
    """The `-c` arguments that add panewatch's hooks, and their trust, to one Codex launch."""
    args: list[str] = []
    trust: dict[str, dict[str, str]] = {}
    for event, command, timeout in codex_hooks(panewatch_argv):
        args += ["-c", f"hooks.{event}=" + _toml([{"hooks": [{"type": "command", "command": command,
                                                               "timeout": timeout}]}])]
        trust[f"{CODEX_SESSION_FLAGS}:{_snake(event)}:0:0"] = {"trusted_hash": codex_trust_hash(event, command,
                                                                                                timeout)}
    return [*args, "-c", "hooks.state=" + _toml(trust)]


def inject_codex_hooks(argv: list[str], panewatch_argv: list[str]) -> list[str]:
    """`argv` (a codex command line) with panewatch's hooks as `-c` overrides right after the program.

    The user's config.toml hooks are another layer and keep running. A command that already overrides
    anything under `hooks` is left alone: its `hooks.state` would replace our trust (Codex would then
    stop on its review screen) and its `hooks.EVENT` would replace our hook, or ours theirs.
    """
    if not argv:
        return list(argv)
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "--":
            break
        value = argv[i + 1] if arg in ("-c", "--config") and i + 1 < len(argv) else \
            arg.partition("=")[2] if arg.startswith("--config=") else arg[2:] if arg.startswith("-c") else ""
        if value.lstrip().startswith("hooks"):
            return list(argv)
    return [argv[0], *codex_hook_overrides(panewatch_argv), *argv[1:]]


# -- Gemini CLI --------------------------------------------------------------------------------

ENV_GEMINI_DEFAULTS = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"
_GEMINI_TIMEOUT_MS = HOOK_TIMEOUT * 1000  # Gemini's hook timeouts are in milliseconds


def gemini_hook_settings(panewatch_argv: list[str], *, installed: bool = False) -> dict[str, Any]:
    """The settings object with panewatch's Gemini CLI hooks (no matcher: every tool)."""
    hooks = {event: [{"hooks": [{"type": "command", "name": f"panewatch {event}",
                                 "command": _pane_command(panewatch_argv, event, state, installed),
                                 "timeout": _GEMINI_TIMEOUT_MS}]}]
             for event, state in GEMINI_HOOK_STATES.items()}
    # "Executing hook" indicators would redraw the screen after each report (which ends its freshness);
    # a default only: the user's own hooksConfig.notifications wins.
    return {"hooks": hooks, "hooksConfig": {"notifications": False}}


def _gemini_system_defaults(env: dict[str, str]) -> Path:
    """Where Gemini CLI would read its system defaults from for this launch."""
    if path := env.get(ENV_GEMINI_DEFAULTS):
        return Path(path)
    system = env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
    return (Path(system).parent if system else Path("/etc/gemini-cli")) / "system-defaults.json"


def _insecure_for_gemini(directory: Path) -> str | None:
    """Why Gemini CLI would skip a system settings file in `directory` (its rule: every directory above
    the file owned by root and writable by nobody else); None if it would read it."""
    for part in [directory, *directory.parents]:
        try:
            st = part.lstat()
        except OSError as exc:
            return f"{part}: {exc.strerror}"
        if st.st_uid != 0:
            return f"{part} is not owned by root"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{part} is writable by group or others"
    return None


def gemini_settings_dir() -> Path:
    """A directory for per-launch Gemini settings files that Gemini CLI will read: the private runtime
    dir if its parents pass Gemini's check (not /tmp: writable by all), else one under the home, else
    (a HOME under /tmp, as an agent's private home may be) one under /run, root's own tmpfs."""
    candidates = [paths.runtime_dir(), Path.home() / ".cache" / "panewatch" / "gemini-hooks",
                  Path("/run/panewatch/gemini-hooks")]
    reasons = []
    for directory in candidates:
        with contextlib.suppress(OSError):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if (reason := _insecure_for_gemini(directory)) is None:
            return directory
        reasons.append(reason)
    raise HooksUnavailable("no directory Gemini CLI would read a settings file from: " + "; ".join(reasons))


def _system_defaults(path: Path, agent: str) -> dict[str, Any]:
    """The system defaults a launch would read from `path` ({} if there is none), to merge ours into;
    HooksUnavailable if the file is there but unreadable (it must keep applying)."""
    if not path.exists():
        return {}
    loaded = _load_settings_value(str(path), None)
    if loaded is None:
        raise HooksUnavailable(f"cannot merge with the {agent} system defaults in {path}")
    return loaded


def _write_defaults(env: dict[str, str], variable: str, path: Path, settings: dict[str, Any]) -> Path:
    """Write a launch's settings file (0600 from its creation) and point `env`'s `variable` at it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(settings, f)
    env[variable] = str(path)
    return path


def inject_gemini_hooks(env: dict[str, str], panewatch_argv: list[str], name: str,
                        directory: Path | None = None) -> Path:
    """Write `directory/name` (default: gemini_settings_dir()): the system defaults this launch would
    read (if any) plus panewatch's hooks, and point `env`'s GEMINI_CLI_SYSTEM_DEFAULTS_PATH at it.
    Returns the file (the caller removes it when the pane is gone). Raises HooksUnavailable when
    Gemini would not read it (not root), or when the existing defaults file cannot be read (it must
    keep applying)."""
    if os.geteuid() != 0:
        raise HooksUnavailable("Gemini CLI reads a per-launch settings file only when it belongs to root "
                               "(`panewatch hooks install --agent gemini` adds the hooks to your settings instead)")
    directory = directory or gemini_settings_dir()
    if reason := _insecure_for_gemini(directory):
        raise HooksUnavailable(f"Gemini CLI would skip a settings file in {directory}: {reason}")
    theirs = _system_defaults(_gemini_system_defaults(env), "Gemini CLI")
    ours = gemini_hook_settings(panewatch_argv)
    merged = _merge_hooks(theirs, ours)
    their_config = theirs.get("hooksConfig")
    merged["hooksConfig"] = ours["hooksConfig"] | (their_config if isinstance(their_config, dict) else {})
    return _write_defaults(env, ENV_GEMINI_DEFAULTS, directory / name, merged)


# -- Qwen Code ---------------------------------------------------------------------------------

ENV_QWEN_DEFAULTS = "QWEN_CODE_SYSTEM_DEFAULTS_PATH"
# Qwen rewrites a settings file without its current "$version" (4 in 0.24.4) to add it: ours has it.
QWEN_SETTINGS_VERSION = 4


def qwen_hook_settings(panewatch_argv: list[str], *, installed: bool = False) -> dict[str, Any]:
    """The settings object with panewatch's Qwen Code hooks (no matcher: every tool; timeouts in seconds)."""
    hooks = {event: [{"hooks": [{"type": "command", "name": f"panewatch {event}",
                                 "command": _pane_command(panewatch_argv, event, state, installed),
                                 "timeout": HOOK_TIMEOUT}]}]
             for event, state in QWEN_HOOK_STATES.items()}
    return {"$version": QWEN_SETTINGS_VERSION, "hooks": hooks}


def _qwen_system_defaults(env: dict[str, str]) -> Path:
    """Where Qwen Code would read its system defaults from for this launch."""
    if path := env.get(ENV_QWEN_DEFAULTS):
        return Path(path)
    system = env.get("QWEN_CODE_SYSTEM_SETTINGS_PATH")
    return (Path(system).parent if system else Path("/etc/qwen-code")) / "system-defaults.json"


def inject_qwen_hooks(env: dict[str, str], panewatch_argv: list[str], name: str,
                      directory: Path | None = None) -> Path:
    """Write `directory/name` (default: the private runtime dir): the system defaults this launch would
    read (if any) plus panewatch's hooks, and point `env`'s QWEN_CODE_SYSTEM_DEFAULTS_PATH at it. The
    user's settings override it and their hook lists are concatenated with ours ("concat" merge), so
    their hooks run too. Returns the file (the caller removes it when the pane is gone). Raises
    HooksUnavailable when the existing defaults file cannot be read (it must keep applying)."""
    theirs = _system_defaults(_qwen_system_defaults(env), "Qwen Code")
    merged = _merge_hooks(theirs, qwen_hook_settings(panewatch_argv))
    merged.setdefault("$version", QWEN_SETTINGS_VERSION)
    directory = directory or paths.runtime_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return _write_defaults(env, ENV_QWEN_DEFAULTS, directory / name, merged)


# -- GitHub Copilot CLI ------------------------------------------------------------------------

COPILOT_PLUGIN = "panewatch"  # the plugin's name, as Copilot lists it


def copilot_hook_settings(panewatch_argv: list[str], *, installed: bool = False) -> dict[str, Any]:
    """Copilot CLI's hooks.json with panewatch's hooks (version 1; `bash` commands, timeouts in seconds)."""
    hooks = {event: [{"type": "command", "bash": _pane_command(panewatch_argv, event, state, installed),
                      "timeoutSec": HOOK_TIMEOUT}]
             for event, state in COPILOT_HOOK_STATES.items()}
    return {"version": 1, "hooks": hooks}


def inject_copilot_hooks(argv: list[str], panewatch_argv: list[str], name: str,
                         directory: Path | None = None) -> tuple[list[str], Path]:
    """`argv` (a copilot command line) with `--plugin-dir` naming a plugin made for this launch in
    `directory/name` (default: the private runtime dir): its plugin.json and hooks.json with panewatch's
    hooks. Returns the command and the plugin dir (the caller removes it when the pane is gone). The user's
    plugins, `--plugin-dir`s and hooks are left as they are: Copilot runs every plugin's hooks."""
    directory = directory or paths.runtime_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    plugin = directory / name
    plugin.mkdir(mode=0o700)
    for file, doc in (("plugin.json", {"name": COPILOT_PLUGIN, "version": "1.0.0",
                                       "description": "panewatch: this pane's state from Copilot's hooks",
                                       "hooks": "hooks.json"}),
                      ("hooks.json", copilot_hook_settings(panewatch_argv))):
        fd = os.open(plugin / file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f)
    if not argv:
        return list(argv), plugin
    return [argv[0], "--plugin-dir", str(plugin), *argv[1:]], plugin


def remove_quietly(path: Path) -> None:
    """Remove a launch's settings file or plugin dir (Copilot), whatever is left of it."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
        return
    with contextlib.suppress(OSError):
        path.unlink()
