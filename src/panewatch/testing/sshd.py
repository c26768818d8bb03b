"""A real OpenSSH server on a loopback port, for tests and benchmarks of remote hosts. Nothing outside
its own directory is touched (the one exception: `/run/sshd`, sshd's privilege-separation directory,
is created if missing, as sshd requires).

    with Sshd(tmp_path) as sshd:          # or the `sshd` pytest fixture (tests/conftest.py)
        sshd.ssh("true")                  # `ssh -F sshd.ssh_config devbox true`
        sshd.tmux_env                     # an environment whose tmux is the "remote" host's private server

Its directory holds a throwaway host key, a client key in `authorized_keys`, `sshd_config` (no PAM, no
passwords, `StrictModes no`, `SetEnv TMUX_TMPDIR=…` so every session's tmux is a private server of
this sshd, not the user's) and `ssh_config` with these Host aliases:

    ALIAS            the working host
    ALIAS-badkey     a client key the server does not authorise (ssh: "Permission denied (publickey)")
    ALIAS-badhost    a known_hosts entry with another host key (ssh: "HOST IDENTIFICATION HAS CHANGED")
    ALIAS-down       a loopback port nobody listens on (ssh: "Connection refused")

`stop()` ends the server and every session it carries (the link drops); `kill_sessions()` ends the
sessions only (the server goes on accepting); `start()` again listens on the same port.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import psutil

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")
START_TIMEOUT = 10.0


def sshd_binary() -> str | None:
    """The OpenSSH server binary, or None when it is not installed."""
    found = shutil.which("sshd")
    if found:
        return found
    return next((path for path in SSHD_CANDIDATES if os.access(path, os.X_OK)), None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "panewatch-test", "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)


class Sshd:
    """One sshd in `root` (a fresh temp dir when None), reachable as `alias` through `ssh_config`."""

    def __init__(self, root: Path | None = None, *, alias: str = "devbox", max_sessions: int = 64) -> None:
        binary = sshd_binary()
        if binary is None:
            raise RuntimeError("OpenSSH's server is not installed (apt-get install openssh-server)")
        self.binary = binary
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="panewatch-sshd-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.alias = alias
        self.max_sessions = max_sessions
        self.port = free_port()
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.remote_tmux = self.root / "remote-tmux"
        self.ssh_config = self.root / "ssh_config"
        self.log = self.root / "sshd.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._prepared = False

    # -- files ---------------------------------------------------------------------------------

    def _prepare(self) -> None:
        if self._prepared:
            return
        r = self.root
        self.remote_tmux.mkdir(mode=0o700, exist_ok=True)
        for name in ("hostkey", "otherhostkey", "id_ed25519", "id_refused"):
            if not (r / name).exists():
                _keygen(r / name)
        shutil.copy(r / "id_ed25519.pub", r / "authorized_keys")
        os.chmod(r / "authorized_keys", 0o600)
        (r / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {r}/hostkey\n"
            f"AuthorizedKeysFile {r}/authorized_keys\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            f"PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nPidFile {r}/sshd.pid\n"
            f"MaxSessions {self.max_sessions}\nMaxStartups 64\nLogLevel VERBOSE\n"
            f"SetEnv TMUX_TMPDIR={self.remote_tmux}\n")
        host_pub = (r / "hostkey.pub").read_text().split()
        other_pub = (r / "otherhostkey.pub").read_text().split()
        (r / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {host_pub[0]} {host_pub[1]}\n")
        (r / "known_hosts_wrong").write_text(f"[127.0.0.1]:{self.port} {other_pub[0]} {other_pub[1]}\n")

        def host(alias: str, port: int, key: str, known: str) -> str:
            return (f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {self.user}\n"
                    f"  IdentityFile {r}/{key}\n  IdentitiesOnly yes\n  StrictHostKeyChecking yes\n"
                    f"  UserKnownHostsFile {r}/{known}\n  GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n")

        self.ssh_config.write_text(
            host(self.alias, self.port, "id_ed25519", "known_hosts")
            + host(f"{self.alias}-badkey", self.port, "id_refused", "known_hosts")
            + host(f"{self.alias}-badhost", self.port, "id_ed25519", "known_hosts_wrong")
            + host(f"{self.alias}-down", free_port(), "id_ed25519", "known_hosts"))
        os.chmod(self.ssh_config, 0o600)
        self._prepared = True

    # -- lifetime ------------------------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT) -> Sshd:
        """Listen (on the same port as before, after a stop); returns once sshd accepts connections."""
        if self.running:
            return self
        self._prepare()
        os.makedirs("/run/sshd", exist_ok=True)  # sshd refuses to start without its privsep directory
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([self.binary, "-D", "-e", "-f", str(self.root / "sshd_config")],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited {self.proc.returncode}: {self.log.read_text()[-500:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"sshd did not listen on 127.0.0.1:{self.port} within {timeout:g} s")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def sessions(self) -> list[psutil.Process]:
        """The per-connection sshd processes of this server that carry a logged-in client's link (their title
        is `sshd: USER@…`; a connection still authenticating, or a port probe, is not one yet)."""
        if self.proc is None:
            return []
        found: list[psutil.Process] = []
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.proc.pid).children(recursive=False):
                with contextlib.suppress(psutil.Error):
                    if "@" in " ".join(child.cmdline()):
                        found.append(child)
        return found

    def kill_sessions(self) -> int:
        """End every logged-in connection (their sshd processes), leaving the server listening: a dropped link."""
        procs = self.sessions()
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(procs, timeout=5)
        return len(procs)

    def stop(self) -> None:
        """End the server and every connection it carries."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        children: list[psutil.Process] = []
        with contextlib.suppress(psutil.Error):
            children = psutil.Process(proc.pid).children(recursive=False)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        psutil.wait_procs(children, timeout=5)

    def close(self) -> None:
        """Stop, and end the private tmux servers the sessions left behind."""
        self.stop()
        with contextlib.suppress(OSError):
            for sock in (self.remote_tmux / f"tmux-{os.getuid()}").iterdir():
                subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, timeout=10,
                               stdin=subprocess.DEVNULL)

    def __enter__(self) -> Sshd:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- using it ------------------------------------------------------------------------------

    @property
    def tmux_env(self) -> dict[str, str]:
        """This process's environment with the "remote" host's tmux: run `tmux` with it to set up panes."""
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        env["TMUX_TMPDIR"] = str(self.remote_tmux)
        return env

    def ssh_argv(self, *command: str, alias: str | None = None) -> list[str]:
        return ["ssh", "-F", str(self.ssh_config), "-o", "BatchMode=yes", alias or self.alias, *command]

    def ssh(self, *command: str, alias: str | None = None, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.ssh_argv(*command, alias=alias), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def tmux(self, *args: str | int, check: bool = True) -> str:
        """Run tmux on the "remote" host's server directly (no ssh hop): for setting a test up."""
        argv: Sequence[str] = ["tmux", *map(str, args)]
        done = subprocess.run(argv, env=self.tmux_env, capture_output=True, text=True, timeout=20,
                              stdin=subprocess.DEVNULL)
        if check and done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(argv[1:])}: {done.stderr.strip()}")
        return done.stdout
