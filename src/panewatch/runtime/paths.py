"""Where panewatch keeps things: the user's config (manifests, settings), data (the user's own golden
cases, from `report-wrong`), state (the waits database of `stats`) and a private runtime dir.

Each follows the XDG base directories, and a PANEWATCH_*_DIR variable overrides it (tests, one-off runs).
"""

from __future__ import annotations

import contextlib
import os
import stat
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


TMP = Path("/tmp")  # where the runtime dir goes without XDG_RUNTIME_DIR: shared, anyone may plant a name there


def runtime_dir() -> Path:
    """A private (0700) directory for sockets and secrets, created on first use.

    In /tmp anyone can create `panewatch-UID` first. A directory of another user's is refused, and so
    is a symbolic link, whoever made it: followed, it gave the link's target (the victim's home) to
    the chmod below (755 → 700) and our sockets. The check is on the name itself (lstat), as
    runtime/ssh.py does for its control dir; /tmp's sticky bit keeps others from swapping it after."""
    if env := os.environ.get("PANEWATCH_RUNTIME_DIR"):
        path = Path(env)
    elif xdg := os.environ.get("XDG_RUNTIME_DIR"):
        path = Path(xdg) / "panewatch"
    else:
        path = TMP / f"panewatch-{os.getuid()}"
    with contextlib.suppress(FileExistsError):  # a link or a file there: refused just below
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} is a symbolic link or not a directory: refusing it as panewatch's private "
                              "runtime directory (remove it, or set XDG_RUNTIME_DIR)")
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user")
    if st.st_mode & 0o077:
        path.chmod(0o700)  # the name is our directory, not a link: nothing else is changed
    return path


def cache_dir() -> Path:
    """What can be recomputed (agent versions by binary): $PANEWATCH_CACHE_DIR, else XDG's cache dir."""
    if env := os.environ.get("PANEWATCH_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "panewatch"
