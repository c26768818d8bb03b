"""Where panewatch keeps things: the user's config (manifests, settings) and a private runtime dir."""

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


def user_corpus_dir() -> Path:
    """Golden cases the user recorded (`agents verify --save`): `agents check` runs manifests over them too."""
    if env := os.environ.get("PANEWATCH_USER_CORPUS"):
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "panewatch" / "corpus"
