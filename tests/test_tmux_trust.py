"""tmux's trust rule for its socket directory, which naming a socket with `-S` skips: the directory is the
user's own with no access for others, each socket in it the user's own (tmux.c `make_label`). A directory
another local user made first (with a server there that lets the victim in) must not have the victim's
daemon watch that user's panes, start `panewatch new` agents AS that user, or type into their panes.

The two-user case is real: a second local user (`useradd`, as root here and on CI) makes the directory and
runs the server; the ownership rule on its own is also tested on files `os.chown`ed to that user."""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardutil import cards, cli, start_serve, wait_for
from panewatch.board.panes import Hub
from panewatch.board.rpc import RemoteError
from panewatch.board.tmux import TmuxBoard
from panewatch.errors import TmuxUnsafeError
from panewatch.runtime.live import ManifestWatcher
from panewatch.runtime.tmux import TmuxServer, check_server, check_socket, check_socket_dir, socket_dir, user_servers

pytestmark = pytest.mark.needs("tmux")  # tests/components.py: fails without it unless PANEWATCH_SKIP=tmux

OTHER = "pwattacker"  # the second local user the tests make (kept between runs: a system user, no home)


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("this test makes a second local user (useradd) and chowns files to it: run it as root "
                    "(CI and the dev box do)")


@pytest.fixture(scope="session")
def other_user() -> pwd.struct_passwd:
    """Another local user: made once with useradd (tests running side by side may race to make it)."""
    needs_root()
    for _ in range(50):
        with_user = _user(OTHER)
        if with_user is not None:
            return with_user
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER],
                       capture_output=True, timeout=30)  # exit 9: made meanwhile; 10: /etc/passwd locked
        time.sleep(0.1)
    raise AssertionError(f"could not make the local user {OTHER} with useradd")


def _user(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def as_user(user: pwd.struct_passwd, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": "/", "SHELL": "/bin/sh", "LANG": "C.UTF-8"}  # its shell: nologin
    out = subprocess.run(argv, user=user.pw_uid, group=user.pw_gid, extra_groups=[], cwd="/", capture_output=True,
                         text=True, timeout=20, env=env)
    assert out.returncode == 0, f"{' '.join(argv)} as {user.pw_name}: {out.stderr}"
    return out


@pytest.fixture
def tmpdir_base() -> Path:
    """The test's private TMUX_TMPDIR (tests/conftest.py), resolved as tmux resolves it."""
    return Path(os.path.realpath(os.environ["TMUX_TMPDIR"]))


@pytest.fixture
def planted(other_user: pwd.struct_passwd, tmpdir_base: Path) -> Iterator[Path]:
    """`$TMUX_TMPDIR/tmux-UID` made first by the other user (TMUX_TMPDIR world-writable, as /tmp is), mode
    0777, with that user's tmux server on its `default` socket (root may use any server; a non-root victim
    is let in by the other user's `server-access -a VICTIM`)."""
    tmpdir_base.chmod(0o1777)
    folder = tmpdir_base / f"tmux-{os.getuid()}"
    as_user(other_user, "mkdir", "-m", "0777", str(folder))
    socket = folder / "default"
    as_user(other_user, "tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", "evil", "sleep 600")
    try:
        yield folder
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=20)


def their_panes(folder: Path) -> list[str]:
    out = subprocess.run(["tmux", "-S", str(folder / "default"), "list-panes", "-a", "-F", "#{session_name}"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_socket_directory_another_user_made_first_is_refused_everywhere(planted: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the daemon listed the other user's pane as a card (so `send` typed into it), `panewatch new`
    started the agent in their server as them, and `panewatch tmux` waited for a server forever."""
    shown = cli("tmux", timeout=20)  # the default server: lives in the refused directory
    assert shown.returncode == 1, shown
    assert "refusing tmux at" in shown.stderr and str(planted) in shown.stderr, shown.stderr
    assert f"{OTHER} (uid" in shown.stderr and "0777" in shown.stderr, shown.stderr

    log = tmp_path / "serve.log"
    serve = start_serve("--log-file", str(log), env={"PANEWATCH_TMUX_NEW": "auto"})
    try:
        def decided() -> bool:  # the daemon's first scan either refused the directory or watched the server
            said = log.read_text() if log.exists() else ""
            return "refusing tmux at" in said or any(c.get("origin") == "tmux" for c in cards())

        wait_for(decided, "the daemon's first look at the planted directory", 20)
        assert [c["target"] for c in cards() if c.get("origin") == "tmux"] == [], "another user's pane on the board"
        said = log.read_text()
        assert str(planted) in said and f"{OTHER} (uid" in said, said

        marker = tmp_path / "ran-as"
        new = cli("new", "--name", "victim", "--", "sh", "-c", f"id -un > {marker}; sleep 600")
        assert new.returncode == 1, f"`new` started an agent in the other user's server: {new.stdout}"
        assert "refusing tmux at" in new.stderr and str(planted) in new.stderr, new.stderr
        assert their_panes(planted) == ["evil"] and not marker.exists()
    finally:
        serve.stop()


def test_tmux_rule_for_the_directory(tmpdir_base: Path) -> None:
    """tmux's own rule: the user's directory, not a link, no access for others (group access allowed)."""
    folder = tmpdir_base / "dirs"
    folder.mkdir()
    for mode, refused in ((0o700, False), (0o750, False), (0o770, False), (0o755, True), (0o701, True),
                          (0o777, True)):
        path = folder / f"m{mode:o}"
        path.mkdir()
        path.chmod(mode)
        if refused:
            with pytest.raises(TmuxUnsafeError, match=f"mode {mode:04o} lets other users in"):
                check_socket_dir(path)
        else:
            check_socket_dir(path)
    link = folder / "link"
    link.symlink_to(folder / "m700")
    with pytest.raises(TmuxUnsafeError, match="a symbolic link"):
        check_socket_dir(link)
    check_socket_dir(folder / "missing")  # nothing there yet: nothing to refuse
    made = folder / "made"
    check_socket_dir(made, create=True)
    assert made.stat().st_mode & 0o777 == 0o700


def test_tmux_rule_for_owners(other_user: pwd.struct_passwd, tmpdir_base: Path) -> None:
    folder = tmpdir_base / f"tmux-{os.getuid()}"
    folder.mkdir(mode=0o700)
    os.chown(folder, other_user.pw_uid, other_user.pw_gid)
    with pytest.raises(TmuxUnsafeError) as refused:
        check_socket_dir(folder)
    assert f"owned by {OTHER} (uid {other_user.pw_uid}), not by you" in str(refused.value)
    assert refused.value.path == str(folder)
    with pytest.raises(TmuxUnsafeError):
        check_server(TmuxServer())  # the default server lives there (as does `-L NAME`'s)
    os.chown(folder, os.getuid(), os.getgid())
    check_server(TmuxServer())


def test_user_servers_leaves_out_what_the_rule_refuses(other_user: pwd.struct_passwd, tmpdir_base: Path) -> None:
    """Real servers in the user's own directory: one socket is chowned to the other user (as if it were
    theirs); it is not listed and is reported. A directory others may enter lists nothing."""
    folder = socket_dir()
    folder.mkdir(mode=0o700)
    servers = {name: folder / name for name in ("mine", "theirs")}
    for socket in servers.values():
        subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "sleep 600"], check=True,
                       timeout=20)
    try:
        os.chown(servers["theirs"], other_user.pw_uid, other_user.pw_gid)
        (folder / "a-link").symlink_to(servers["mine"])  # a link to a socket is not a socket of this directory
        refused: list[TmuxUnsafeError] = []
        assert [s.socket_path for s in user_servers(refused=refused.append)] == [str(servers["mine"])]
        assert [r.path for r in refused] == [str(servers["theirs"])]
        assert f"the socket is owned by {OTHER}" in str(refused[0])
        with pytest.raises(TmuxUnsafeError, match="the socket is owned by"):
            check_socket(servers["theirs"])

        folder.chmod(0o755)
        refused.clear()
        assert user_servers(refused=refused.append) == []
        assert [r.path for r in refused] == [str(folder)]
    finally:
        folder.chmod(0o700)
        for socket in servers.values():
            subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=20)


def test_the_daemon_says_it_once_and_new_refuses(other_user: pwd.struct_passwd, tmpdir_base: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """TmuxBoard (the daemon's tmux side): scans log the refusal once; `new_window` refuses a `default`
    socket another user owns inside the user's own directory, starting nothing."""
    folder = socket_dir()
    folder.mkdir(mode=0o700)
    socket = folder / "default"
    subprocess.run(["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", "theirs", "sleep 600"],
                   check=True, timeout=20)
    caplog.set_level(logging.WARNING, logger="panewatch.board")
    try:
        os.chown(socket, other_user.pw_uid, other_user.pw_gid)

        async def main() -> None:
            board = TmuxBoard(Hub(), ManifestWatcher())
            try:
                for _ in range(3):
                    await board.scan()
                assert board.watchers == {}
                with pytest.raises(RemoteError) as refused:
                    await board.new_window(["sleep", "600"], name="agent", cwd=str(tmpdir_base), env={}, cols=80,
                                           rows=24)
                assert refused.value.kind == "tmux_unsafe" and str(socket) in str(refused.value)
            finally:
                await board.close()

        asyncio.run(main())
        said = [r.getMessage() for r in caplog.records if "refusing tmux at" in r.getMessage()]
        assert len(said) == 1 and str(socket) in said[0], said
        listed = subprocess.run(["tmux", "-S", str(socket), "list-sessions", "-F", "#{session_name}"],
                                capture_output=True, text=True, timeout=20).stdout.split()
        assert listed == ["theirs"]  # no `panewatch` session made there
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=20)


def test_tmux_itself_refuses_the_same_directories(tmpdir_base: Path) -> None:
    """The rule is tmux's: tmux refuses a directory of mode 0755 for -L/default and accepts 0750."""
    folder = socket_dir()
    for mode, ok in ((0o755, False), (0o750, True)):
        folder.mkdir(mode=0o700, exist_ok=True)
        folder.chmod(mode)
        out = subprocess.run(["tmux", "-L", "probe", "-f", "/dev/null", "new-session", "-d", "sleep 60"],
                             capture_output=True, text=True, timeout=20)
        assert (out.returncode == 0) == ok, out.stderr
        if ok:
            check_socket_dir(folder)
            subprocess.run(["tmux", "-L", "probe", "kill-server"], capture_output=True, timeout=20)
        else:
            assert "unsafe permissions" in out.stderr
            with pytest.raises(TmuxUnsafeError):
                check_socket_dir(folder)
