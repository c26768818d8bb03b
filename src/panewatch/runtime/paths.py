"""Where panewatch keeps things: the user's config (manifests, settings), data (the user's own golden
cases, from `report-wrong`), state (the waits database of `stats`) and a private runtime dir.

Each follows the XDG base directories, and a PANEWATCH_*_DIR variable overrides it (tests, one-off runs).
"""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    if env := os.environ.get("PANEWATCH_CONFIG_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "panewatch"


def user_agents_dir() -> Path:
    """Manifests here replace the bundled ones with the same agent id."""
    return config_dir() / "agents"


def data_dir() -> Path:
    """$PANEWATCH_DATA_DIR, else $XDG_DATA_HOME/panewatch (~/.local/share/panewatch)."""
    if env := os.environ.get("PANEWATCH_DATA_DIR"):
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "panewatch"


def user_corpus_dir() -> Path:
    """The user's own golden cases (`report-wrong` and `agents verify --save` write here; `agents check`
    runs them too):
    <agent>/<version>/<case>/ as in the bundled corpus."""
    return data_dir() / "corpus"


def state_dir() -> Path:
    """$PANEWATCH_STATE_DIR, else $XDG_STATE_HOME/panewatch (~/.local/state/panewatch): what
    panewatch learns while it runs and keeps across restarts (the waits of `panewatch stats`)."""
    if env := os.environ.get("PANEWATCH_STATE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "panewatch"


def runtime_dir() -> Path:
    """A private (0700) directory for sockets and secrets, created on first use."""
    if env := os.environ.get("PANEWATCH_RUNTIME_DIR"):
        path = Path(env)
    elif xdg := os.environ.get("XDG_RUNTIME_DIR"):
        path = Path(xdg) / "panewatch"
    else:
        path = Path("/tmp") / f"panewatch-{os.getuid()}"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.stat()
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user")
    if st.st_mode & 0o077:
        path.chmod(0o700)
    return path


def cache_dir() -> Path:
    """What can be recomputed (agent versions by binary): $PANEWATCH_CACHE_DIR, else XDG's cache dir."""
    if env := os.environ.get("PANEWATCH_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "panewatch"
