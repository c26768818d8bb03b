"""`panewatch hooks install / uninstall / status`: panewatch's hooks in the agents' USER settings, for
agents started by hand (in tmux: the hooks report by `$TMUX_PANE`, runtime/paneclient.py `pane hook`).

    claude   $CLAUDE_CONFIG_DIR/settings.json (~/.claude)   JSON `hooks`, the shape of `--settings`
    gemini   ~/.gemini/settings.json                        JSON `hooks`, the shape of the per-launch file
    qwen     $QWEN_HOME/settings.json (~/.qwen)             JSON `hooks`, the shape of the per-launch file
    codex    $CODEX_HOME/config.toml (~/.codex)             a delimited block of `[[hooks.EVENT]]` tables and
                                                            their `[hooks.state."FILE:event:GROUP:0"]` trust,
                                                            appended: the user's bytes stay as they are
    copilot  $COPILOT_HOME/hooks/panewatch.json (~/.copilot) a hooks file of its own in the folder Copilot CLI
                                                            reads every *.json of (the user's files untouched)

The documents' edits are core/hooksettings.py. Ours are recognisable by their command
(`… panewatch … pane hook report|notify`), so the user's own
hooks are never touched. Install is idempotent (the same hooks again: nothing written) and refuses a
malformed file with an AgentSettingsError naming it (nothing written). Writes are atomic (a temp file
renamed over, the file's mode kept; a symlinked file is written where it points).

A record per file in the state dir (`hooks/AGENT-CRC.json`, 0600, beside `AGENT-CRC.orig`: the bytes the
file had without panewatch, or none if there was no file) lets uninstall give the file back byte for
byte when nobody changed it since install (its bytes are still the ones install wrote); otherwise
uninstall removes only panewatch's entries and keeps the user's later edits. A file install created is
removed again.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from panewatch.core.hooksettings import (
    BEGIN,
    OURS,
    CodexHook,
    dump_json,
    json_has_ours,
    json_with_ours,
    json_without_ours,
    load_json,
    load_toml,
    toml_with_ours,
    toml_without_ours,
)
from panewatch.errors import AgentSettingsError
from panewatch.runtime import paths
from panewatch.runtime.hookinject import (
    claude_hook_settings,
    codex_hooks,
    codex_trust_hash,
    copilot_hook_settings,
    gemini_hook_settings,
    hook_launcher,
    qwen_hook_settings,
)

AGENTS = ("claude", "gemini", "codex", "qwen", "copilot")
__all__ = ["AGENTS", "OURS", "Outcome", "Status", "default_agents", "install", "settings_file", "status", "uninstall"]


def config_dir(agent: str, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if agent == "claude" and env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser()
    if agent == "codex" and env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"]).expanduser().resolve()  # Codex canonicalises CODEX_HOME: trust keys use it
    if agent == "qwen" and env.get("QWEN_HOME"):  # Qwen Code 0.24.4 Storage.getGlobalQwenDir
        return Path(env["QWEN_HOME"]).expanduser().resolve()
    if agent == "copilot" and env.get("COPILOT_HOME"):  # `copilot help environment`
        return Path(env["COPILOT_HOME"]).expanduser()
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / f".{agent}"


def settings_file(agent: str, env: Mapping[str, str] | None = None) -> Path:
    if agent not in AGENTS:
        raise ValueError(f"no installed hooks for {agent!r} (known: {', '.join(AGENTS)})")
    if agent == "copilot":  # Copilot CLI reads every hooks file in this folder: ours is a file of its own
        return config_dir(agent, env) / "hooks" / "panewatch.json"
    return config_dir(agent, env) / ("config.toml" if agent == "codex" else "settings.json")


def default_agents(env: Mapping[str, str] | None = None) -> list[str]:
    """Every supported agent whose config dir exists; claude if none does."""
    return [a for a in AGENTS if config_dir(a, env).is_dir()] or ["claude"]


@dataclass(frozen=True, slots=True)
class Outcome:
    agent: str
    path: Path
    action: str  # installed | updated | unchanged | restored | removed | cleaned | absent
    message: str


def _settings(agent: str, launcher: list[str]) -> dict[str, Any]:
    # Only the hooks are taken from these (json_with_ours): Qwen's "$version" stays the user's file's own.
    make = {"claude": claude_hook_settings, "gemini": gemini_hook_settings, "qwen": qwen_hook_settings,
            "copilot": copilot_hook_settings}[agent]
    return make(launcher, installed=True)


def _codex(launcher: list[str]) -> list[CodexHook]:
    return [(event, command, timeout, codex_trust_hash(event, command, timeout))
            for event, command, timeout in codex_hooks(launcher, installed=True)]


# -- records and files -------------------------------------------------------------------------

def _record_paths(agent: str, path: Path) -> tuple[Path, Path]:
    folder = paths.state_dir() / "hooks"
    stem = f"{agent}-{zlib.crc32(str(path).encode('utf-8', 'surrogateescape')):08x}"
    return folder / f"{stem}.json", folder / f"{stem}.orig"


def _read_record(agent: str, path: Path) -> tuple[dict[str, Any], bytes | None] | None:
    record_file, orig_file = _record_paths(agent, path)
    try:
        record = json.loads(record_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("path") != str(path):
        return None
    try:
        original = orig_file.read_bytes() if record.get("existed") else None
    except OSError:
        return None
    return record, original


def _write_record(agent: str, path: Path, written: bytes, original: bytes | None, created_dir: bool) -> None:
    record_file, orig_file = _record_paths(agent, path)
    record_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if original is not None:
        _write_private(orig_file, original)
    else:
        with contextlib.suppress(FileNotFoundError):
            orig_file.unlink()
    record = {"path": str(path), "existed": original is not None, "created_dir": created_dir,
              "written_crc": zlib.crc32(written), "written_size": len(written)}
    _write_private(record_file, json.dumps(record).encode())


def _drop_record(agent: str, path: Path) -> None:
    for file in _record_paths(agent, path):
        with contextlib.suppress(FileNotFoundError):
            file.unlink()


def _same_as_written(record: dict[str, Any], data: bytes) -> bool:
    return record.get("written_size") == len(data) and record.get("written_crc") == zlib.crc32(data)


def _write_private(path: Path, data: bytes) -> None:
    _atomic(path, data, 0o600)


def _atomic(path: Path, data: bytes, mode: int) -> None:
    """`data` into `path` by a temp file in its folder renamed over it (never half a settings file)."""
    temp = path.with_name(f".{path.name}.panewatch-{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def _real(path: Path) -> Path:
    """Where to write: a symlinked settings file (dotfiles) is written where it points."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AgentSettingsError(str(path), exc.strerror or str(exc)) from None


def _mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o600


# -- the commands ------------------------------------------------------------------------------

def install(agent: str, *, env: Mapping[str, str] | None = None, launcher: list[str] | None = None) -> Outcome:
    path = settings_file(agent, env)
    launcher = launcher or hook_launcher()
    current = _read(path)
    if agent == "codex":
        text, _ = load_toml(str(path), current or b"")
        base = toml_without_ours(str(path), text)
        new = toml_with_ours(str(path), base, _codex(launcher)).encode("utf-8")
        had_ours, without = BEGIN in text, base.encode("utf-8")
    else:
        doc = load_json(str(path), current or b"")
        had_ours = json_has_ours(doc)
        stripped = json_without_ours(doc, None)
        new = dump_json(json_with_ours(stripped, _settings(agent, launcher)))
        without = dump_json(stripped)
    if current == new:
        return Outcome(agent, path, "unchanged", f"{agent}: panewatch's hooks already in {path}; nothing changed")
    recorded = _read_record(agent, path)
    # What uninstall gives back: the file as it was before panewatch (exactly, if it had none of ours).
    if not had_ours:
        original, created_dir = current, not path.parent.exists()
    elif recorded is not None and current is not None and _same_as_written(recorded[0], current):
        original, created_dir = recorded[1], bool(recorded[0].get("created_dir"))
    else:
        original, created_dir = without, False
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_record(agent, path, new, original, created_dir)  # first: the backup exists before the file changes
    target = _real(path)
    _atomic(target, new, _mode(target) if current is not None else 0o600)
    action = "updated" if had_ours else "installed"
    return Outcome(agent, path, action, f"{agent}: panewatch's hooks {action} in {path}"
                   + (" (a new file)" if current is None else ""))


def uninstall(agent: str, *, env: Mapping[str, str] | None = None) -> Outcome:
    path = settings_file(agent, env)
    current = _read(path)
    recorded = _read_record(agent, path)
    if current is None:
        _drop_record(agent, path)
        return Outcome(agent, path, "absent", f"{agent}: {path} does not exist; nothing to remove")
    if recorded is not None and _same_as_written(recorded[0], current):
        record, original = recorded
        if original is None:
            path.unlink()
            if record.get("created_dir"):
                with contextlib.suppress(OSError):
                    path.parent.rmdir()  # only if empty
            message = f"{agent}: removed {path} (panewatch had created it)"
        else:
            target = _real(path)
            _atomic(target, original, _mode(target))
            message = f"{agent}: {path} restored byte for byte (unchanged since install)"
        _drop_record(agent, path)
        return Outcome(agent, path, "restored", message)
    if agent == "codex":
        text, _ = load_toml(str(path), current)
        has = BEGIN in text or OURS.search(text) is not None
        new = toml_without_ours(str(path), text).encode("utf-8") if has else current
    else:
        doc = load_json(str(path), current)
        has = json_has_ours(doc)
        # what was there before install decides which emptied containers stay; unknown: the user's hooksConfig
        before = load_json(str(path), recorded[1] or b"") if recorded is not None \
            else {"hooksConfig": doc.get("hooksConfig")}
        new = dump_json(json_without_ours(doc, before)) if has else current
    _drop_record(agent, path)
    if not has:
        return Outcome(agent, path, "absent", f"{agent}: no panewatch hooks in {path}; nothing changed")
    if recorded is not None and recorded[1] is None and new.strip() in (b"", b"{}"):
        path.unlink()
        return Outcome(agent, path, "removed", f"{agent}: removed {path} (panewatch had created it)")
    target = _real(path)
    _atomic(target, new, _mode(target))
    return Outcome(agent, path, "cleaned", f"{agent}: removed panewatch's hooks from {path} and kept the changes "
                                           "made to it since install")


@dataclass(frozen=True, slots=True)
class Status:
    agent: str
    path: Path
    installed: bool
    current: bool  # the hooks there are the ones install would write now
    problem: str = ""


def status(agent: str, *, env: Mapping[str, str] | None = None, launcher: list[str] | None = None) -> Status:
    path = settings_file(agent, env)
    try:
        data = _read(path)
        if data is None:
            return Status(agent, path, False, False)
        if agent == "codex":
            text, _ = load_toml(str(path), data)
            installed = BEGIN in text
            fresh = installed and toml_with_ours(str(path), toml_without_ours(str(path), text),
                                                 _codex(launcher or hook_launcher())) == text
        else:
            doc = load_json(str(path), data)
            installed = json_has_ours(doc)
            fresh = installed and dump_json(json_with_ours(json_without_ours(doc, None),
                                                           _settings(agent, launcher or hook_launcher()))) == data
    except AgentSettingsError as exc:
        return Status(agent, path, False, False, str(exc))
    return Status(agent, path, installed, fresh)

