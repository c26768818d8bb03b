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
renamed over, the file's mode kept; a symlinked file is written where it points); an error names the
user's file, never the temp file.

Another writer (the agent itself rewriting its settings, another `hooks install`): the edit runs under
the file's lock as the agents' Node tools take it (proper-lockfile: a directory `FILE.lock`, stale
after LOCK_STALE s), so a writer that takes it waits for us and we for it (`on_wait` says so); and a
writer that takes no lock is not overwritten: the file is read again just before the rename, and if it
changed, the edit is done again on its new bytes (ATTEMPTS times).

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
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

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
LOCK_STALE = 10.0  # seconds: a FILE.lock older than this was left by a writer that died (proper-lockfile's default)
LOCK_WAIT = 30.0  # seconds we wait for another writer's lock before giving up (naming it)
ATTEMPTS = 5  # edits done again on a file another writer changed under us
T = TypeVar("T")
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


class _Changed(Exception):
    """The settings file changed since it was read: the edit is done again on its new bytes."""


def _atomic(path: Path, data: bytes, mode: int, unchanged: Callable[[], bool] | None = None) -> None:
    """`data` into `path` by a temp file in its folder renamed over it (never half a settings file).
    `unchanged`, asked just before the rename: False leaves the file as it is (_Changed). An OSError
    names `path`, not the temp file (the user knows the one, never saw the other)."""
    temp = path.with_name(f".{path.name}.panewatch-{os.getpid()}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            if unchanged is not None and not unchanged():
                raise _Changed()
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


def _write_settings(path: Path, before: bytes | None, data: bytes, mode: int) -> None:
    """The settings file `path` (where it points, if a link) gets `data`, if it still holds `before`."""
    try:
        _atomic(_real(path), data, mode, lambda: _read(path) == before)
    except OSError as exc:
        raise AgentSettingsError(str(path), f"cannot write it ({exc.strerror or exc})") from None


@contextlib.contextmanager
def _locked(path: Path, on_wait: Callable[[str], None] | None) -> Iterator[None]:
    """The settings file's lock as the agents' Node tools take it (a directory `FILE.lock`, made or not
    at once by mkdir; one older than LOCK_STALE seconds is a dead writer's)."""
    lock = path.with_name(path.name + ".lock")
    deadline, said = time.monotonic() + LOCK_WAIT, False
    while True:
        try:
            os.mkdir(lock, 0o700)
            break
        except FileExistsError:
            try:
                stale = time.time() - lock.lstat().st_mtime > LOCK_STALE
            except FileNotFoundError:
                continue  # let go meanwhile
            if stale:
                try:
                    os.rmdir(lock)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    raise AgentSettingsError(str(path), f"its lock {lock} was left by a writer that is gone and "
                                                        f"cannot be removed ({exc.strerror or exc})") from None
                continue
        except OSError as exc:
            raise AgentSettingsError(str(path), f"cannot lock it ({exc.strerror or exc})") from None
        if time.monotonic() > deadline:
            raise AgentSettingsError(str(path), f"another program is writing it (its lock {lock} is held); "
                                                "try again when it is done")
        if not said and on_wait is not None:
            on_wait(f"waiting for {lock}: another program is writing {path}")
            said = True
        time.sleep(0.05)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(lock)


def _edit(path: Path, on_wait: Callable[[str], None] | None, attempt: Callable[[], T]) -> T:
    """`attempt` (read, edit, write) under the file's lock, again while another writer changes the file."""
    with _locked(path, on_wait):
        for _ in range(ATTEMPTS):
            with contextlib.suppress(_Changed):
                return attempt()
    raise AgentSettingsError(str(path), "it kept changing while panewatch wrote it (another program writes it "
                                        "without a lock); try again")


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

def install(agent: str, *, env: Mapping[str, str] | None = None, launcher: list[str] | None = None,
            on_wait: Callable[[str], None] | None = None) -> Outcome:
    path = settings_file(agent, env)
    hooks = launcher or hook_launcher()
    created_dir = not path.parent.exists()
    path.parent.mkdir(parents=True, exist_ok=True)  # where the lock goes
    return _edit(path, on_wait, lambda: _install(agent, path, hooks, created_dir))


def _install(agent: str, path: Path, launcher: list[str], created_dir: bool) -> Outcome:
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
        original = current
    elif recorded is not None and current is not None and _same_as_written(recorded[0], current):
        original, created_dir = recorded[1], bool(recorded[0].get("created_dir"))
    else:
        original, created_dir = without, False
    _write_record(agent, path, new, original, created_dir)  # first: the backup exists before the file changes
    _write_settings(path, current, new, _mode(_real(path)) if current is not None else 0o600)
    action = "updated" if had_ours else "installed"
    return Outcome(agent, path, action, f"{agent}: panewatch's hooks {action} in {path}"
                   + (" (a new file)" if current is None else ""))


def uninstall(agent: str, *, env: Mapping[str, str] | None = None,
              on_wait: Callable[[str], None] | None = None) -> Outcome:
    path = settings_file(agent, env)
    if not path.parent.is_dir():
        return _uninstall(agent, path)[0]  # no file: nothing to lock
    outcome, created_dir = _edit(path, on_wait, lambda: _uninstall(agent, path))
    if created_dir:
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only if empty (and the lock, in it, is let go)
    return outcome


def _uninstall(agent: str, path: Path) -> tuple[Outcome, bool]:
    """The outcome, and whether the file's folder is panewatch's to remove (install made it)."""
    current = _read(path)
    recorded = _read_record(agent, path)
    if current is None:
        _drop_record(agent, path)
        return Outcome(agent, path, "absent", f"{agent}: {path} does not exist; nothing to remove"), False
    if recorded is not None and _same_as_written(recorded[0], current):
        record, original = recorded
        if original is None:
            path.unlink()
            message = f"{agent}: removed {path} (panewatch had created it)"
        else:
            _write_settings(path, current, original, _mode(_real(path)))
            message = f"{agent}: {path} restored byte for byte (unchanged since install)"
        _drop_record(agent, path)
        return Outcome(agent, path, "restored", message), original is None and bool(record.get("created_dir"))
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
    if not has:
        _drop_record(agent, path)
        return Outcome(agent, path, "absent", f"{agent}: no panewatch hooks in {path}; nothing changed"), False
    if recorded is not None and recorded[1] is None and new.strip() in (b"", b"{}"):
        path.unlink()
        _drop_record(agent, path)
        return Outcome(agent, path, "removed", f"{agent}: removed {path} (panewatch had created it)"), False
    _write_settings(path, current, new, _mode(_real(path)))
    _drop_record(agent, path)
    return Outcome(agent, path, "cleaned", f"{agent}: removed panewatch's hooks from {path} and kept the changes "
                                           "made to it since install"), False


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

