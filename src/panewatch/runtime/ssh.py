"""The user's own ssh, as the transport to a remote host's tmux. Nothing of ours runs on the other side.

`ssh_argv(host, remote)` is the one place the ssh command line is made:

    ssh -T -o BatchMode=yes -o ConnectTimeout=N -o ServerAliveInterval=N -o ServerAliveCountMax=N
        -o ControlMaster=auto -o ControlPath=<private dir>/%C -o ControlPersist=N [-F FILE] -- HOST 'REMOTE ARGV'

* the user's ssh client, config, keys and agent do everything else (no password is ever asked for:
  BatchMode; no key or password is ever read or stored by panewatch);
* a dead link is noticed after ServerAliveInterval * ServerAliveCountMax seconds (`SshOptions.dead_after`,
  9 s by default), a host that does not answer after ConnectTimeout;
* one TCP connection per host (ssh's connection sharing, `ControlMaster=auto`): every control client to
  that host's sessions, and every one-off command, is a session multiplexed over it. The master socket
  lives in a private 0700 directory (`control_dir()`), named by the host as the user wrote it AND by
  ssh's %C (host, port, user): two aliases of one machine with different keys must not share a login
  (a refused key would ride on the other alias's connection); `close_master()` ends it when we are done.
* `-F $HOME/.ssh/config` when $HOME is not the passwd entry's home: OpenSSH reads the passwd home's
  config, but the user's `~` is $HOME (a private home in a test, a sudo'd shell).

`classify(host, code, stderr)` turns ssh's failure into the error tree (errors.py): KeyRefusedError,
HostKeyError, HostUnreachableError or SshError, each naming the host and quoting ssh's own line.
ssh exits 255 for its own errors; any other code is the remote command's.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import pwd
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from panewatch.errors import HostKeyError, HostUnreachableError, KeyRefusedError, SshError
from panewatch.runtime.paths import runtime_dir

SSH_FAILED = 255  # ssh's own exit status for a failure of its own (anything else is the remote command's)
_SUN_PATH = 104  # bytes a unix socket path may have (macOS; Linux allows 108)
_MASTER_SUFFIX = 17  # ssh binds its master at ControlPath + ".XXXXXXXXXXXXXXXX" before renaming it
_TAG = 12  # hex digits of the host's own name in the socket's name


@dataclass(frozen=True, slots=True)
class SshOptions:
    """How ssh is asked to behave; every value is a whole number of seconds (ssh takes no fractions)."""

    connect_timeout: int = 5  # a host that does not answer: unreachable after this
    alive_interval: int = 3  # keepalives through the encrypted channel this often ...
    alive_count: int = 3  # ... and this many unanswered means the link is dead
    control_persist: int = 30  # the shared connection outlives its last session by this long
    config_file: str | None = None  # ssh -F; None: the user's own (see `user_config`)
    binary: str = "ssh"

    @property
    def dead_after(self) -> int:
        """Seconds after which ssh gives up on a silent link (a link that closes is noticed at once)."""
        return self.alive_interval * self.alive_count


def user_config() -> str | None:
    """`$HOME/.ssh/config` when $HOME is not the passwd home (ssh would not read it), else None."""
    home = os.environ.get("HOME")
    if not home:
        return None
    try:
        passwd_home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        passwd_home = ""
    path = Path(home) / ".ssh" / "config"
    if os.path.realpath(home) != os.path.realpath(passwd_home or "/") and path.is_file():
        return str(path)
    return None


def control_dir() -> Path:
    """A private (0700) directory for ssh's shared-connection sockets: under the runtime dir when a socket
    path there fits, else a short one in /tmp that is ours alone (named after the runtime dir)."""
    base = runtime_dir() / "ssh"
    if len(str(base)) + 1 + _TAG + 1 + 40 + _MASTER_SUFFIX >= _SUN_PATH:  # %C is 40 hex digits
        tag = hashlib.sha256(str(runtime_dir()).encode()).hexdigest()[:8]
        base = Path("/tmp") / f"panewatch-ssh-{os.getuid()}-{tag}"
    base.mkdir(mode=0o700, exist_ok=True)
    st = base.lstat()
    if st.st_uid != os.getuid() or not base.is_dir() or base.is_symlink():
        raise PermissionError(f"{base} is not a directory of this user's")
    if st.st_mode & 0o077:
        base.chmod(0o700)
    return base


def control_path(host: str) -> str:
    """The shared connection's socket for `host` (ssh expands %C)."""
    return f"{control_dir()}/{hashlib.sha256(host.encode()).hexdigest()[:_TAG]}-%C"


def ssh_options(options: SshOptions, host: str, *, terminal: bool = False) -> list[str]:
    """The options part of the command line for `host` (everything before `-- HOST`); `terminal`: the
    remote command gets a tty (the user's own terminal attached to it), else none."""
    argv = [options.binary, "-t" if terminal else "-T",
            "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={options.connect_timeout}",
            "-o", f"ServerAliveInterval={options.alive_interval}",
            "-o", f"ServerAliveCountMax={options.alive_count}",
            "-o", "ControlMaster=auto",
            "-o", f"ControlPath={control_path(host)}",
            "-o", f"ControlPersist={options.control_persist}"]
    config = options.config_file or user_config()
    if config:
        argv += ["-F", config]
    return argv


def ssh_argv(host: str, remote: Sequence[str], options: SshOptions | None = None, *,
             terminal: bool = False) -> list[str]:
    """ssh to `host` running `remote` there (quoted for the remote shell, which parses what ssh sends)."""
    return [*ssh_options(options or SshOptions(), host, terminal=terminal), "--", host, shlex.join(remote)]


def classify(host: str, code: int | None, stderr: str) -> SshError:
    """ssh's failure (exit status, stderr) as an error naming the host."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = "\n".join(lines)
    lower = text.lower()

    def said(*needles: str) -> str:
        for line in lines:
            if any(needle in line.lower() for needle in needles):
                return line
        return lines[-1] if lines else ""

    if "identification has changed" in lower or ("host key for" in lower and "has changed" in lower):
        return HostKeyError(host, "its host key does not match the one in known_hosts: not connecting "
                                  "(if the host was reinstalled, update known_hosts with ssh-keygen -R)",
                            said("identification has changed", "has changed"))
    if "host key verification failed" in lower or "host key is known" in lower:
        return HostKeyError(host, "its host key is not known and ssh may not ask here (BatchMode): "
                                  "connect once with plain `ssh` to accept it", said("host key"))
    if "permission denied" in lower or "too many authentication failures" in lower:
        return KeyRefusedError(host, "it refused every key ssh offered (panewatch asks for no password: "
                                     "load the key into your ssh agent or name it as IdentityFile)",
                               said("permission denied", "authentication failures"))
    for needle, why in (("could not resolve hostname", "its name does not resolve"),
                        ("connection refused", "it refused the connection (is sshd running there?)"),
                        ("timed out", "it did not answer in time"),
                        ("no route to host", "no route to it"),
                        ("network is unreachable", "the network is unreachable"),
                        ("connection reset", "the connection was reset"),
                        ("connection closed", "the connection was closed"),
                        ("broken pipe", "the link broke"),
                        ("not responding", "it stopped answering keepalives (the link is dead)"),
                        ("kex_exchange_identification", "the connection was closed before ssh could log in")):
        if needle in lower:
            return HostUnreachableError(host, f"unreachable: {why}", said(needle))
    if code == SSH_FAILED or code is None:
        return HostUnreachableError(host, "unreachable: ssh failed", said())
    return SshError(host, f"the remote command failed (exit status {code})", said())


async def communicate(proc: asyncio.subprocess.Process, limit: float) -> tuple[bytes, bytes]:
    """`proc.communicate()` within `limit` seconds (TimeoutError); timed out or cancelled (a watcher closing
    mid-probe), the ssh is killed and reaped, never left running with its pipes open."""
    try:
        return await asyncio.wait_for(proc.communicate(), limit)
    except BaseException:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(BaseException):
                await asyncio.shield(proc.wait())
        raise


async def run_remote(host: str, remote: Sequence[str], options: SshOptions | None = None,
                     timeout: float | None = None, name: str = "") -> list[str]:
    """Run `remote` on `host`; its stdout lines. SshError (classified, naming the host as `name`, else as
    `host`) if ssh or the command failed."""
    options = options or SshOptions()
    label = name or host
    limit = timeout if timeout is not None else options.connect_timeout + 10.0
    proc = await asyncio.create_subprocess_exec(*ssh_argv(host, remote, options), stdin=subprocess.DEVNULL,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                start_new_session=True)
    try:
        out, err = await communicate(proc, limit)
    except TimeoutError:
        raise HostUnreachableError(label, f"unreachable: no answer within {limit:g} s") from None
    if proc.returncode != 0:
        raise classify(label, proc.returncode, err.decode("utf-8", "replace"))
    return out.decode("utf-8", "replace").splitlines()


def close_master(host: str, options: SshOptions | None = None) -> None:
    """End the shared connection to `host` if one is up (`ssh -O exit`); quiet when there is none."""
    argv = [*ssh_options(options or SshOptions(), host), "-O", "exit", "--", host]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=5)
