"""Process identity: names and command lines → agent manifests; the foreground group of a real pty."""

from __future__ import annotations

import asyncio
import os

from panewatch.core.identity import candidate_names, match_agent
from panewatch.core.manifest import load_all
from panewatch.runtime.process import ForegroundTracker, foreground
from panewatch.runtime.pty import PtySession

MANIFESTS = load_all(None).list()


def test_match_by_name_and_script() -> None:
    assert match_agent("claude", ["claude", "--settings", "{}"], MANIFESTS) == "claude"
    assert match_agent("node", ["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"],
                       MANIFESTS) == "claude"
    assert match_agent("node", ["node", "/home/u/.npm/bin/gemini", "-y"], MANIFESTS) == "gemini"
    assert match_agent("node", ["node", "--max-old-space-size=8192", "/x/@google/gemini-cli/dist/index.js"],
                       MANIFESTS) == "gemini"
    assert match_agent("codex", ["/x/codex-x86_64-unknown-linux-musl"], MANIFESTS) == "codex"
    assert match_agent("python3", ["python3", "-m", "aider"], MANIFESTS) == "aider"
    assert match_agent("python3", ["/usr/bin/python3", "/tmp/bin/claude"], MANIFESTS) == "claude"


def test_no_false_matches() -> None:
    assert match_agent("bash", ["-bash"], MANIFESTS) is None
    assert match_agent("vim", ["vim", "claude.md"], MANIFESTS) is None  # an argument of a non-interpreter
    assert match_agent("python3", ["python3", "-c", "import claude"], MANIFESTS) is None
    assert match_agent("node", ["node", "/srv/app/dist/index.js"], MANIFESTS) is None
    assert candidate_names("-zsh", ["-zsh"]) == ["zsh"]


def test_foreground_of_a_real_pty() -> None:
    async def main() -> None:
        out = bytearray()
        session = PtySession(["bash", "--norc", "--noprofile", "-i"], on_output=out.extend,
                             env={**os.environ, "PS1": "$ ", "TERM": "xterm"})
        session.start_reading()
        fd = session.master_fd
        assert fd is not None
        tracker = ForegroundTracker()
        loop = asyncio.get_running_loop()

        async def until_fg(pred: object) -> None:
            deadline = loop.time() + 10
            while True:
                tracker.poll(loop.time(), session.foreground_pgid(), session.pid, MANIFESTS)
                if callable(pred) and pred(tracker.current):
                    return
                assert loop.time() < deadline, tracker.current
                await asyncio.sleep(0.02)

        await until_fg(lambda fg: fg is not None and fg.is_shell)
        first = foreground(fd, session.pid, MANIFESTS)
        assert first is not None and first.pgid == session.pid and first.agent_id is None
        session.write(b"exec -a claude sleep 30 | cat\r")  # argv[0] 'claude', a pipeline job
        await until_fg(lambda fg: fg is not None and fg.agent_id == "claude")
        assert tracker.current is not None and not tracker.current.is_shell
        assert tracker.current.pgid != session.pid
        await session.aclose()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_tracker_sees_an_agent_that_appears_later_in_the_same_group() -> None:
    async def main() -> None:
        # The group never changes (the session leader itself execs the agent later, as a wrapper may).
        session = PtySession(["bash", "-c", "read -r x; exec -a claude sleep 30"], env={**os.environ})
        session.start_reading()
        tracker = ForegroundTracker(settle=0.0, refresh=0.05)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while tracker.current is None:
            tracker.poll(loop.time(), session.foreground_pgid(), session.pid, MANIFESTS)
            await asyncio.sleep(0.01)
        assert tracker.current.agent_id is None
        session.write(b"go\r")
        while tracker.current is None or tracker.current.agent_id != "claude":
            assert loop.time() < deadline, tracker.current
            tracker.poll(loop.time(), session.foreground_pgid(), session.pid, MANIFESTS)
            await asyncio.sleep(0.01)
        assert tracker.current.pgid == session.pid
        await session.aclose()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_plain_program_is_described_from_its_leader_without_walking_processes(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`cat` cannot wrap an agent: describing its group must not list every process on the machine."""
    import subprocess

    import psutil

    from panewatch.runtime import process as procinfo

    def forbidden(*_args: object, **_kwargs: object) -> list[psutil.Process]:
        raise AssertionError("walked the process table")

    proc = subprocess.Popen(["cat"], stdin=subprocess.PIPE, start_new_session=True)
    try:
        monkeypatch.setattr(procinfo, "group_members", forbidden)
        fg = procinfo.describe_group(proc.pid, proc.pid, [])
        assert (fg.name, fg.agent_id, fg.is_shell) == ("cat", None, False)
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdin is not None
        proc.stdin.close()


def test_unchanged_group_is_described_ever_less_often() -> None:
    from panewatch.runtime.process import ForegroundTracker

    tracker = ForegroundTracker(settle=0.0, refresh=1.0, max_refresh=8.0)
    pid = __import__("os").getpid()
    times = [t / 10 for t in range(0, 400)]
    for now in times:
        tracker.poll(now, pid, pid, [])
    # 1 + re-descriptions at ~1, 3, 7, 15, 23, 31, 39 s: doubling up to the cap, not every second.
    assert 6 <= tracker.describes <= 9


def test_unchanged_leader_is_re_described_from_its_fingerprint_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`cat` holds the pane: after the first description, polls read only its /proc stat and cmdline
    (psutil is not asked again) until something the description depends on changes."""
    import subprocess

    from panewatch.runtime import process as procinfo

    proc = subprocess.Popen(["cat"], stdin=subprocess.PIPE, start_new_session=True)
    try:
        tracker = procinfo.ForegroundTracker(settle=0.0, refresh=0.1, max_refresh=0.1)
        assert tracker.poll(0.0, proc.pid, proc.pid, MANIFESTS)
        first = tracker.current

        def forbidden(*_args: object, **_kwargs: object) -> object:
            raise AssertionError("described in full")

        monkeypatch.setattr(procinfo, "_describe", forbidden)
        for i in range(1, 6):
            assert not tracker.poll(i * 0.2, proc.pid, proc.pid, MANIFESTS)
        assert (tracker.describes, tracker.skipped, tracker.current) == (1, 5, first)
        monkeypatch.undo()
        # Other manifests (a reload): described again.
        assert not tracker.poll(2.0, proc.pid, proc.pid, [])
        assert tracker.describes == 2
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdin is not None
        proc.stdin.close()


def test_a_group_gone_before_it_is_read_keeps_the_last_description() -> None:
    """A `cat` of a dialog that ended between tcgetpgrp and its description: its group is empty. Taken as "a
    program we cannot read", the pane's screen (the dialog's words in a shell) was judged by agent rules: a shell
    notified as blocked (bench day). The shell's description stands; the next look describes again."""
    import subprocess

    from panewatch.core.manifest import load_all
    from panewatch.runtime.process import ForegroundTracker

    manifests = load_all().list()
    shell = subprocess.Popen(["sleep", "30"], start_new_session=True)
    gone = subprocess.Popen(["true"], start_new_session=True)
    gone.wait()
    try:
        tracker = ForegroundTracker()
        assert tracker.poll(0.0, shell.pid, shell.pid, manifests) and tracker.current is not None and tracker.read
        described = tracker.current
        assert tracker.poll(0.5, gone.pid, gone.pid, manifests) is False  # read too late: nothing there
        assert tracker.current == described and not tracker.read  # not a look that saw who holds it
        assert tracker.poll(0.7, shell.pid, shell.pid, manifests) is False and tracker.current == described
        assert tracker.read  # the same group, read again: the machine may keep the screen as this program's
        assert tracker.poll(0.75, shell.pid, shell.pid, manifests) is False and not tracker.read  # too soon: not read
    finally:
        shell.kill()
        shell.wait()


def test_what_a_script_runs_names_its_pane_and_an_unnamed_program_is_unknown(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Real process groups on a real pty: `sh -c 'cat f; sleep 600'` (what tmux runs for a command) is described
    by its shell, with the `sleep` as a member, and is another program; a script no list names is unknown."""
    from panewatch.core.panekind import pane_kind

    player = tmp_path / "castplay.py"
    player.write_text("import time\nprint('Do you want to proceed?')\ntime.sleep(30)\n")
    cases = [(["sh", "-c", "cat /dev/null; sleep 30; true"], ("other", "sleep")),
             (["python3", str(player)], ("unknown", "python3"))]
    for argv, want in cases:
        async def main(argv: list[str] = argv, want: tuple[str, str] = want) -> None:
            session = PtySession(argv, on_output=lambda data: None, env={**os.environ, "TERM": "xterm"})
            session.start_reading()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            try:
                while True:
                    fd = session.master_fd
                    fg = foreground(fd, session.pid, MANIFESTS) if fd is not None else None
                    kind = pane_kind(fg)
                    if (kind.kind, kind.what) == want:
                        return
                    assert loop.time() < deadline, (argv, fg, kind)
                    await asyncio.sleep(0.02)
            finally:
                session.close()

        asyncio.run(main())
