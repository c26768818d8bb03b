"""`panewatch new` in tmux (real daemon, real tmux): the window's name and directory reach tmux as text, never
as formats (`#(…)` would run a command, `#S` would change the directory); the command is exec'd word for
word, never through a shell (tmux runs a one-word command with `sh -c`); the caller's environment reaches
the pane without ever being on a command line another user can read (/proc/PID/cmdline), and the
variables tmux sets for its own pane (`TMUX`, `TMUX_PANE`, `TERM`) are tmux's, not the caller's."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from boardutil import ServeProcess, cli, start_serve, wait_for
from panewatch.board.tmux import dedicated_server

pytestmark = pytest.mark.needs("tmux")  # tests/components.py: fails without it unless PANEWATCH_SKIP=tmux

FAKE_KEY = "sk-ant-fake-0123456789abcdef"


@pytest.fixture
def argv_log(tmp_path: Path) -> Path:
    """Where every tmux command line the daemon runs is written (a `tmux` first on its PATH that notes its
    argv and execs the real one): what any local user could read from /proc/PID/cmdline meanwhile."""
    real = shutil.which("tmux")
    assert real is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "tmux-argv.log"
    wrapper = folder / "tmux"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(log))}\nexec {shlex.quote(real)} "$@"\n')
    wrapper.chmod(0o755)
    return log


@pytest.fixture
def daemon(argv_log: Path) -> Iterator[ServeProcess]:
    """A daemon whose `new` runs in tmux, its tmux command lines noted in `argv_log`."""
    path = f"{argv_log.parent / 'bin'}{os.pathsep}{os.environ['PATH']}"
    serve = start_serve(env={"PANEWATCH_TMUX_NEW": "auto", "PATH": path})
    try:
        yield serve
    finally:
        serve.stop()
        subprocess.run(["tmux", *dedicated_server().args(), "kill-server"], capture_output=True, timeout=20)


def tmux(*args: str) -> str:
    out = subprocess.run(["tmux", *dedicated_server().args(), *args], capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    return out.stdout


def new(*args: str) -> dict[str, Any]:
    pane_id = cli("new", *args, check=True).stdout.strip()
    out = cli("ls", "--json", check=True)
    card: dict[str, Any] = next(c for c in json.loads(out.stdout)["panes"] if c["id"] == pane_id)
    return card


def test_name_and_directory_are_text_not_tmux_formats(daemon: ServeProcess, tmp_path: Path) -> None:
    """Before: the name's `#(touch …)` ran (3 of 6), the directory's `#S` started the agent elsewhere."""
    ran = tmp_path / "format-ran"
    name = f"#(touch {ran}) #S #{{pane_id}} ##"
    folders = [tmp_path / "proj-C#Sharp", tmp_path / "repo-#(id)" / "x #{session_name};"]
    for folder in folders:
        folder.mkdir(parents=True)
    for folder in folders:  # the first `new` makes the session (new-session), the next one adds a window
        where = tmp_path / f"pwd-{folders.index(folder)}"
        card = new("--name", name, "--cwd", str(folder), "--", "sh", "-c", 'pwd > "$0"; exec sleep 600', str(where))
        wait_for(where.exists, f"the pane in {folder} wrote its directory", 20)
        assert where.read_text().strip() == str(folder)
        assert tmux("display-message", "-p", "-t", card["tmux_pane"], "#{window_name}").rstrip("\n") == name
        assert card["name"] == name
    assert not ran.exists(), "a format in the window's name ran a command"


def test_a_one_word_command_is_execd_not_run_by_a_shell(daemon: ServeProcess, tmp_path: Path) -> None:
    """Before: tmux ran `…/a;touch X` with `sh -c`: `touch X` ran; a headless pane execs the file `a;touch X`."""
    here = tmp_path / "work"
    here.mkdir()
    exact = here / "a;touch X"
    exact.write_text(f"#!/bin/sh\necho exact > {shlex.quote(str(tmp_path / 'ran'))}\nexec sleep 600\n")
    exact.chmod(0o755)
    new("--cwd", str(here), "--", str(exact))
    wait_for(lambda: (tmp_path / "ran").exists() or (here / "X").exists(), "the command started", 20)
    assert (tmp_path / "ran").exists() and not (here / "X").exists(), os.listdir(here)


def test_the_callers_environment_is_never_on_a_command_line(daemon: ServeProcess, argv_log: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `-e PW_KEY=sk-…` was on tmux's command line (another user read it from /proc/PID/cmdline 3 of
    5 times), a newline in a value dropped the variable, and the caller's `TMUX` (another server's)
    reached the pane, so its installed hooks reported to a pane of that other server."""
    monkeypatch.setenv("PW_KEY", FAKE_KEY)
    monkeypatch.setenv("PW_LINES", "first line\nsecond 'line' $HOME ~ \"#{pane_id}\" \\ \\' ;\n%if 1\n{ }\r\tend\\")
    monkeypatch.setenv("TMUX", "/tmp/another-server/default,4242,0")  # `new` run inside another tmux
    monkeypatch.setenv("TMUX_PANE", "%42")
    monkeypatch.setenv("TERM", "xterm-kitty")  # the caller's terminal: the pane's terminal is tmux
    dump = ("import json, os, sys, time; names = ('PW_KEY', 'PW_LINES', 'TMUX', 'TMUX_PANE', 'TERM'); "
            "open(sys.argv[1] + '.tmp', 'w').write(json.dumps({n: os.environ.get(n) for n in names})); "
            "os.rename(sys.argv[1] + '.tmp', sys.argv[1]); time.sleep(600)")
    for launch in ("new-session", "new-window"):  # the first `new` makes the session, the second adds a window
        seen = tmp_path / f"{launch}.json"
        card = new("--", sys.executable, "-c", dump, str(seen))
        env = wait_for(lambda path=seen: path.exists() and json.loads(path.read_text()), "the pane's environment", 20)
        assert env["PW_KEY"] == FAKE_KEY, "the caller's variable reached the pane"
        assert env["PW_LINES"] == os.environ["PW_LINES"], "a value holding newlines arrived whole"
        socket = tmux("display-message", "-p", "#{socket_path}").strip()
        assert env["TMUX"].split(",")[0] == socket and env["TMUX_PANE"] == card["tmux_pane"], (launch, env)
        assert env["TERM"] != "xterm-kitty", f"{launch}: TERM is the terminal tmux gives its pane"

    lines_run = argv_log.read_text()
    assert "new-" in lines_run or "source-file" in lines_run, "the tmux command lines were noted"
    assert FAKE_KEY not in lines_run, "the secret was on a tmux command line"
    assert "second 'line'" not in lines_run
