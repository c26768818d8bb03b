"""PtySession on real PTYs: output, input, resize, exit status, no zombies, no leaked fds, group kill."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable

import psutil
import pytest

from panewatch.runtime.pty import PtySession, exit_status

TIMEOUT = 10.0


async def until(pred: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    """Poll `pred` (no fixed sleeps as waits); fail after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


class Capture:
    def __init__(self) -> None:
        self.data = bytearray()
        self.eof = False

    def out(self, data: bytes) -> None:
        self.data += data

    def done(self) -> None:
        self.eof = True

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def spawn(cmd: str, cap: Capture, cols: int = 80, rows: int = 24) -> PtySession:
    session = PtySession(["bash", "-c", cmd], cols=cols, rows=rows, on_output=cap.out, on_eof=cap.done,
                         env={**os.environ, "TERM": "xterm-256color"})
    session.start_reading()
    return session


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), 60))


def test_output_and_exit_status() -> None:
    async def main() -> None:
        cap = Capture()
        session = spawn("printf 'hello\\n'; exit 7", cap)
        assert await session.wait() == 7
        assert await session.wait_eof(TIMEOUT)
        assert "hello" in cap.text()
        assert cap.eof
        session.close()
        assert session.closed

    run(main)


def test_input_reaches_child() -> None:
    async def main() -> None:
        cap = Capture()
        session = spawn("read -r line; echo \"got:$line\"", cap)
        session.write(b"ping\r")
        await until(lambda: "got:ping" in cap.text())
        assert await session.wait() == 0
        session.close()

    run(main)


def test_large_write_does_not_block() -> None:
    async def main() -> None:
        cap = Capture()
        # The child reads slowly; 1 MB is far beyond the tty buffer, so most of it must be queued.
        session = spawn("stty raw -echo; echo ready; head -c 1000000 | wc -c", cap)
        await until(lambda: "ready" in cap.text())
        session.write(b"x" * 1_000_000)
        await until(lambda: "1000000" in cap.text())
        assert session.pending_input == 0
        await session.wait()
        session.close()

    run(main)


def test_resize_is_seen_by_child() -> None:
    async def main() -> None:
        cap = Capture()
        session = spawn("stty size; trap 'stty size' WINCH; echo ready; while :; do sleep 0.05; done", cap,
                        cols=80, rows=24)
        await until(lambda: "ready" in cap.text())
        assert "24 80" in cap.text()
        session.resize(100, 40)
        await until(lambda: "40 100" in cap.text())
        session.close()

    run(main)


def test_exit_by_signal_is_128_plus_n() -> None:
    async def main() -> None:
        cap = Capture()
        session = spawn("echo up; kill -TERM $$; sleep 5", cap)
        assert await session.wait() == 128 + signal.SIGTERM
        session.close()

    run(main)
    assert exit_status(-9) == 137 and exit_status(3) == 3


def test_foreground_pgid_is_the_session() -> None:
    async def main() -> None:
        cap = Capture()
        session = spawn("echo ready; sleep 30", cap)
        await until(lambda: "ready" in cap.text())
        assert session.foreground_pgid() == session.pid
        session.close()
        assert session.foreground_pgid() is None

    run(main)


def test_close_kills_the_whole_group_and_leaves_no_zombie() -> None:
    async def main() -> None:
        cap = Capture()
        # bash ignores SIGHUP here, so close() must escalate; the children are in the same group.
        session = spawn("trap '' HUP TERM; sleep 300 & sleep 301 & echo started; wait", cap)
        await until(lambda: "started" in cap.text())
        kids = psutil.Process(session.pid).children(recursive=True)
        assert len(kids) >= 2
        session.close()
        for kid in kids:
            assert not kid.is_running() or kid.status() == psutil.STATUS_ZOMBIE
        assert psutil.Process().children() == []
        assert session.returncode == 128 + signal.SIGKILL

    run(main)


def test_close_kills_background_jobs_of_an_interactive_shell() -> None:
    async def main() -> None:
        cap = Capture()
        session = PtySession(["bash", "--norc", "--noprofile", "-i"], on_output=cap.out,
                             env={**os.environ, "PS1": "$ ", "TERM": "xterm"})
        session.start_reading()
        session.write(b"sleep 300 &\rsleep 301\r")  # one job in the background, one in front
        await until(lambda: len(psutil.Process(session.pid).children()) >= 2)
        await until(lambda: session.foreground_pgid() not in (None, session.pid))
        kids = psutil.Process(session.pid).children(recursive=True)
        await session.aclose()
        for kid in kids:
            assert not kid.is_running() or kid.status() == psutil.STATUS_ZOMBIE
        assert psutil.Process().children() == []

    run(main)


def test_no_leaked_fds_over_many_sessions() -> None:
    me = psutil.Process()

    async def main() -> None:
        cap = Capture()
        first = spawn("exit 0", cap)  # let asyncio set up its own descriptors before counting
        await first.wait()
        first.close()
        before = me.num_fds()
        for index in range(30):
            session = spawn(f"echo {index}", cap)
            if index % 2:
                await session.wait()
                await session.wait_eof(TIMEOUT)
            session.close()
        assert me.num_fds() == before
        assert me.children() == []

    run(main)


def test_child_has_only_stdio_and_a_controlling_tty() -> None:
    async def main() -> None:
        cap = Capture()
        # exec: the shell becomes `cat`, which opens nothing itself; look at its fds from outside
        # (a shell listing its own fds races with the pipes it makes for the listing).
        session = spawn("tty; echo done; exec cat", cap)
        await until(lambda: "done" in cap.text())
        await until(lambda: psutil.Process(session.pid).name() == "cat")
        fds = sorted(os.listdir(f"/proc/{session.pid}/fd"), key=int)
        assert fds == ["0", "1", "2"]
        assert "/dev/pts/" in cap.text()
        session.close()

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc")
    run(main)


def test_write_after_exit_is_harmless() -> None:
    async def main() -> None:
        cap = Capture()
        session = spawn("exit 0", cap)
        await session.wait()
        await session.wait_eof(TIMEOUT)
        session.write(b"nobody reads this\r")
        session.close()
        session.write(b"closed")
        session.resize(10, 10)
        session.close()

    run(main)


def test_child_gets_default_signals_even_if_we_ignore_them() -> None:
    """Started from a background job, we inherit SIGINT ignored; the pane's program must not."""
    async def main() -> None:
        cap = Capture()
        session = spawn("echo done; exec cat", cap)
        await until(lambda: "done" in cap.text())
        await until(lambda: psutil.Process(session.pid).name() == "cat")
        with open(f"/proc/{session.pid}/status", encoding="ascii") as fh:
            ignored = int(next(line for line in fh if line.startswith("SigIgn:")).split()[1], 16)
        assert not ignored & (1 << (signal.SIGINT - 1)) and not ignored & (1 << (signal.SIGQUIT - 1))
        session.write(b"\x03")  # Ctrl-C through the pty's line discipline ends cat
        assert await session.wait() == 128 + signal.SIGINT
        session.close()

    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    old_int, old_quit = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    try:
        run(main)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGQUIT, old_quit)
