"""`panewatch run -- CMD` driven inside a real outer PTY that the test owns, as a user's terminal would."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from fake_claude import write_fake
from panewatch.runtime.fd import set_winsize
from panewatch.runtime.terminal import OutputGate, _utf8_incomplete

TIMEOUT = 15.0
ROOT = Path(__file__).resolve().parents[1]
# The board link has its own tests; here it would start a daemon per test that outlives the test.
NO_BOARD = {"PANEWATCH_BOARD": "off"}


def _ctty() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Outer:
    """A terminal emulator's side of a pty, running `panewatch run ...` as its session leader."""

    def __init__(self, args: list[str], cols: int = 80, rows: int = 24, env: dict[str, str] | None = None) -> None:
        self.master, self.slave = os.openpty()
        set_winsize(self.master, cols, rows)
        self.modes_before = termios.tcgetattr(self.slave)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "panewatch", "run", *args], stdin=self.slave, stdout=self.slave,
            stderr=self.slave, start_new_session=True, preexec_fn=_ctty, cwd=ROOT,
            env={**os.environ, "TERM": "xterm-256color", **NO_BOARD, **(env or {})})
        os.set_blocking(self.master, False)
        self.out = bytearray()

    def pump(self) -> None:
        while select.select([self.master], [], [], 0.02)[0]:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.out += data

    def text(self) -> str:
        return self.out.decode("utf-8", "replace")

    def until(self, pred: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not reached; output so far: {self.text()[-600:]!r}")
            self.pump()

    def see(self, needle: str) -> None:
        self.until(lambda: needle in self.text(), repr(needle))

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def modes(self) -> list[object]:
        return termios.tcgetattr(self.slave)

    def wait(self) -> int:
        self.until(lambda: self.proc.poll() is not None, "panewatch exit")
        self.pump()
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def outer_factory() -> Iterator[Callable[..., Outer]]:
    made: list[Outer] = []

    def make(*args: str, cols: int = 80, rows: int = 24, env: dict[str, str] | None = None) -> Outer:
        outer = Outer(list(args), cols=cols, rows=rows, env=env)
        made.append(outer)
        return outer

    yield make
    for outer in made:
        outer.close()


def test_exit_code_and_terminal_modes(outer_factory: Callable[..., Outer]) -> None:
    outer = outer_factory("--", "bash", "-c", "echo ready; read -r line; echo \"got:$line\"; exit 7")
    outer.see("ready")
    assert outer.modes() != outer.modes_before  # raw while running: the test below means something
    outer.type(b"hello\r")
    outer.see("got:hello")
    assert outer.wait() == 7
    assert outer.modes() == outer.modes_before


def test_keys_pass_through_byte_for_byte(outer_factory: Callable[..., Outer]) -> None:
    outer = outer_factory("--", "bash", "-c", "stty raw -echo; echo ready; head -c 10 | od -An -tx1; stty sane")
    outer.see("ready")
    outer.type(b"\x1b[A\x03\x1a\x04\xc3\xa9\x7f")  # arrow, ^C, ^Z, ^D, é, DEL: nothing eaten by us
    outer.type(b"z")
    outer.see("1b 5b 41 03 1a 04 c3 a9 7f 7a")
    assert outer.wait() == 0


def test_resize_reaches_the_child(outer_factory: Callable[..., Outer]) -> None:
    # `trap … INT`: without it bash ignores a ^C that lands as its `sleep` exits normally (bash's
    # wait-and-cooperative-exit rule), a race this loop would hit now and then.
    outer = outer_factory("--", "bash", "-c", "stty size; trap 'stty size' WINCH; trap 'exit 130' INT; "
                          "echo ready; while :; do sleep 0.05; done", cols=80, rows=24)
    outer.see("ready")
    assert "24 80" in outer.text()
    set_winsize(outer.master, 101, 33)  # the kernel sends SIGWINCH to panewatch, the outer foreground
    outer.see("33 101")
    outer.type(b"\x03")  # ^C as a byte, to the child's pty
    assert outer.wait() == 130
    assert outer.modes() == outer.modes_before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_restores_the_terminal_and_ends_the_child(outer_factory: Callable[..., Outer], sig: int,
                                                         tmp_path: Path) -> None:
    marker = f"{300 + sig}.123"
    events = tmp_path / "events.jsonl"
    outer = outer_factory("--events", str(events), "--", "bash", "-c", f"echo ready; sleep {marker}; echo never")
    outer.see("ready")
    outer.until(lambda: any(marker in p.info["cmdline"] for p in psutil.process_iter(["cmdline"])
                            if p.info["cmdline"]), "the child's sleep")
    outer.proc.send_signal(sig)
    assert outer.wait() == -sig  # panewatch dies of the same signal, as a shell job should
    assert outer.modes() == outer.modes_before
    outer.until(lambda: not any(marker in (p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])),
                "the child gone")
    assert "never" not in outer.text()
    last = json.loads(events.read_text(encoding="utf-8").splitlines()[-1])
    assert last["state"] == "exited" and last["source"] == "process"


def test_events_file_gets_the_state_changes(outer_factory: Callable[..., Outer], tmp_path: Path) -> None:
    script = write_fake(tmp_path)
    events = tmp_path / "events.jsonl"
    record = tmp_path / "rec.cast"
    config = Path(os.environ["PANEWATCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[notify]\nbackends = ["terminal"]\nterminal = "osc9"\n', encoding="utf-8")
    outer = outer_factory("--events", str(events), "--record", str(record), "--pane-id", "t1", "--",
                          sys.executable, str(script), cols=80, rows=32)

    def states() -> list[str]:
        if not events.exists():
            return []
        return [json.loads(line)["state"] for line in events.read_text(encoding="utf-8").splitlines()]

    outer.until(lambda: states()[-1:] == ["working"], "working")
    outer.type(b"x")
    outer.until(lambda: states()[-1:] == ["blocked"], "blocked")
    outer.see("\x1b]9;")  # the terminal notification reached the outer terminal
    outer.type(b"1")
    outer.until(lambda: states()[-1:] == ["idle"], "idle")
    outer.type(b"x")
    assert outer.wait() == 0
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    assert [e["state"] for e in lines] == ["idle", "working", "blocked", "idle", "exited"]
    assert [e["source"] for e in lines] == ["screen", "screen", "screen", "screen", "process"]
    assert {e["pane"] for e in lines} == {"t1"}
    assert all(isinstance(e["t"], float) and e["t"] > 1e9 for e in lines)
    notification = outer.text().split("\x1b]9;", 1)[1].split("\x07", 1)[0]
    assert "needs your answer" in notification and "Do you want to proceed?" in notification
    header, *rest = record.read_text(encoding="utf-8").splitlines()
    assert json.loads(header)["width"] == 80
    assert {json.loads(line)[1] for line in rest} == {"o", "i"}


FULL = Path("/dev/full")  # every write fails with ENOSPC: a full disk, deterministically


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("full", ["--record", "--events"])
def test_a_full_disk_stops_that_file_and_changes_nothing_else(outer_factory: Callable[..., Outer], tmp_path: Path,
                                                              full: str) -> None:
    script = write_fake(tmp_path)
    config = Path(os.environ["PANEWATCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)  # a second probe of detection: the blocked notification
    (config / "config.toml").write_text('[notify]\nbackends = ["terminal"]\nterminal = "osc9"\n', encoding="utf-8")
    events, record = tmp_path / "events.jsonl", tmp_path / "rec.cast"
    files = {"--events": str(events), "--record": str(record), full: str(FULL)}
    outer = outer_factory(*(a for item in files.items() for a in item), "--", sys.executable, str(script),
                          cols=80, rows=32)
    outer.see("esc to interrupt")
    outer.until(lambda: "working" in (events.read_text(encoding="utf-8") if full != "--events" else "working"),
                "working")
    outer.type(b"x")  # typed input reaches the agent although the file failed: it opens its dialog
    outer.see("Do you want to proceed?")
    outer.see("\x1b]9;")  # the detector saw the dialog
    outer.type(b"1")
    outer.see("? for shortcuts")
    outer.type(b"x")
    assert outer.wait() == 0
    text = outer.text()
    assert "Traceback" not in text and "Errno" not in text
    what = "the recording" if full == "--record" else "the events log"
    assert text.count("No space left on device") == 1, text[-800:]
    tail = text.rsplit("\x1b[?1049l", 1)[1].strip()  # after the last thing CMD drew: the terminal is restored
    assert tail.startswith(f"panewatch: {what} (/dev/full) stopped: No space left on device"), tail
    if full == "--record":
        states = [json.loads(line)["state"] for line in events.read_text(encoding="utf-8").splitlines()]
        assert states == ["idle", "working", "blocked", "idle", "exited"]
    else:
        _header, *rest = record.read_text(encoding="utf-8").splitlines()
        assert [json.loads(line)[2] for line in rest if json.loads(line)[1] == "i"] == ["x", "1", "x"]


# A `claude` that runs the hooks it was given with --settings, as Claude Code does, on a screen that
# never changes: whatever the pane says comes from the hooks.
HOOKED_CLAUDE = r'''
import json, os, subprocess, sys, tty
args = sys.argv[1:]
hooks = json.loads(args[args.index("--settings") + 1])["hooks"]
assert os.environ["PANEWATCH_TOKEN"] and os.environ["PANEWATCH_PANE_ID"] == "h1"

def fire(event, **payload):
    for entry in hooks.get(event, []):
        for hook in entry["hooks"]:
            subprocess.run(hook["command"], shell=True, check=True,
                           input=json.dumps({"hook_event_name": event, **payload}).encode())

tty.setcbreak(0)
sys.stdout.write("\x1b]0;✳ Claude Code\x07 Claude Code v2.1.332\r\n> ready\r\n")
sys.stdout.flush()
for event, payload in [("UserPromptSubmit", {}), ("PermissionRequest", {"tool_name": "Bash"}), ("Stop", {})]:
    os.read(0, 1)
    fire(event, **payload)
    sys.stdout.write("\x1b]0;✳ Claude Code\x07")  # a title rewrite with no change: the screen stays the same
    sys.stdout.flush()
os.read(0, 1)
'''


def test_claude_gets_hooks_that_report_through_the_socket(outer_factory: Callable[..., Outer],
                                                          tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    claude = bindir / "claude"
    claude.write_text(f"#!{sys.executable}\n" + HOOKED_CLAUDE, encoding="utf-8")
    claude.chmod(0o755)
    events = tmp_path / "events.jsonl"
    outer = outer_factory("--events", str(events), "--pane-id", "h1", "--", "claude",
                          env={"PATH": f"{bindir}:{os.environ['PATH']}"})

    def last() -> dict[str, str]:
        lines = events.read_text(encoding="utf-8").splitlines() if events.exists() else []
        return json.loads(lines[-1]) if lines else {}

    outer.see("ready")
    for key, state in ((b"a", "working"), (b"b", "blocked"), (b"c", "idle")):
        outer.type(key)
        outer.until(lambda state=state: last().get("state") == state, state)
        assert last()["source"] == "hook"
    assert "PermissionRequest" in (json.loads(events.read_text(encoding="utf-8").splitlines()[2])["detail"])
    outer.type(b"d")
    assert outer.wait() == 0


def test_stdin_and_stdout_not_a_terminal() -> None:
    out = subprocess.run([sys.executable, "-m", "panewatch", "run", "--", "cat"], input=b"one\ntwo\n",
                         capture_output=True, cwd=ROOT, timeout=60,
                         env={**os.environ, **NO_BOARD})
    assert (out.returncode, out.stdout) == (0, b"one\ntwo\n")
    out = subprocess.run([sys.executable, "-m", "panewatch", "run", "--", "sh", "-c", "exit 4"],
                         stdin=subprocess.DEVNULL, capture_output=True, cwd=ROOT, timeout=60,
                         env={**os.environ, **NO_BOARD})
    assert out.returncode == 4
    out = subprocess.run([sys.executable, "-m", "panewatch", "run", "--", "no-such-command-xyz"],
                         stdin=subprocess.DEVNULL, capture_output=True, cwd=ROOT, timeout=60,
                         env={**os.environ, **NO_BOARD})
    assert out.returncode == 127 and b"no-such-command-xyz" in out.stderr
    out = subprocess.run([sys.executable, "-m", "panewatch", "run", "--record", "/no/such/dir/x.cast", "--", "true"],
                         stdin=subprocess.DEVNULL, capture_output=True, cwd=ROOT, timeout=60,
                         env={**os.environ, **NO_BOARD})
    assert out.returncode == 2 and out.stderr == b"panewatch run: cannot open /no/such/dir/x.cast: " \
                                                 b"No such file or directory\n"


def test_output_gate_waits_for_sequences_to_end() -> None:
    read_fd, write_fd = os.pipe()
    try:
        gate = OutputGate(write_fd, lambda exc: None)
        gate.child(b"text \x1b]0;half a ti")
        assert not gate.clean
        gate._queued += b"<OWN>"  # what own() queues while CMD is inside a sequence
        gate.child(b"tle\x07 more \x1b[3")
        assert not gate.clean
        gate.child(b"1mred \xe2\x9c")
        assert not gate.clean  # inside a UTF-8 character
        gate.child(b"\xb3 done")
        assert gate.clean
        assert os.read(read_fd, 1000) == b"text \x1b]0;half a title\x07 more \x1b[31mred \xe2\x9c\xb3 done<OWN>"
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert _utf8_incomplete(b"a\xc3") and not _utf8_incomplete(b"a\xc3\xa9") and not _utf8_incomplete(b"")
