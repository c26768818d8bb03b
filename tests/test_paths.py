"""runtime/paths.py: the private runtime dir in a shared /tmp (no XDG_RUNTIME_DIR) is refused when
another user made the name first: a link (issue 23, item 9a: the victim's home went 755 → 700), a
directory of theirs, a file; our own is made private."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from panewatch.runtime import paths

OTHER_UID = 65534  # nobody: the attacker, owner of what they plant (root can give files away)


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A /tmp of our own (sticky, world-writable) and no XDG_RUNTIME_DIR: runtime_dir() falls back there."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    monkeypatch.setattr(paths, "TMP", tmp)
    monkeypatch.delenv("PANEWATCH_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return tmp


def plant(path: Path) -> None:
    """Give what was planted to another user, as if they had made it (root only; else it stays ours,
    which the checks refuse just the same for a link or a file)."""
    if os.geteuid() == 0:
        os.lchown(path, OTHER_UID, OTHER_UID)


def test_a_link_planted_in_tmp_is_refused_and_its_target_left_alone(shared_tmp: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    link = shared_tmp / f"panewatch-{os.getuid()}"
    link.symlink_to(home)
    plant(link)
    with pytest.raises(PermissionError, match="symbolic link or not a directory"):
        paths.runtime_dir()
    assert home.stat().st_mode & 0o777 == 0o755  # before: chmod'ed to 0700 through the link
    assert link.is_symlink()


def test_a_dangling_link_or_a_file_is_refused(shared_tmp: Path, tmp_path: Path) -> None:
    name = shared_tmp / f"panewatch-{os.getuid()}"
    name.symlink_to(tmp_path / "nothing-yet")  # mkdir would make the target through it
    with pytest.raises(PermissionError, match="symbolic link"):
        paths.runtime_dir()
    assert not (tmp_path / "nothing-yet").exists()
    name.unlink()
    name.write_text("")
    with pytest.raises(PermissionError, match="not a directory"):
        paths.runtime_dir()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a directory another user's")
def test_a_directory_another_user_made_first_is_refused(shared_tmp: Path) -> None:
    theirs = shared_tmp / f"panewatch-{os.getuid()}"
    theirs.mkdir()
    theirs.chmod(0o777)
    plant(theirs)
    with pytest.raises(PermissionError, match="belongs to another user"):
        paths.runtime_dir()
    assert theirs.stat().st_mode & 0o777 == 0o777


def test_our_own_directory_is_made_private(shared_tmp: Path) -> None:
    ours = paths.runtime_dir()
    assert ours == shared_tmp / f"panewatch-{os.getuid()}" and ours.stat().st_mode & 0o777 == 0o700
    ours.chmod(0o755)
    assert paths.runtime_dir() == ours and ours.stat().st_mode & 0o777 == 0o700
