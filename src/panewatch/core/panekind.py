"""What a pane IS, decided here and nowhere else. Pure: it reads a described foreground process group
(core/machine.py `Foreground`, filled by runtime/process.py from the tty, or from tmux's formats for a
remote pane), never a process itself.

    agent    the foreground group runs a manifest's process, directly or through a wrapper or an
             interpreter (identity.match_agent): judged by that agent's rules, counted, notified,
             answered, put in stats.
    view     the pane shows another pane: a tmux client (attached to a session, nested or not), the
             pane hosting a `panewatch run` or `panewatch attach`, ssh to a watched [[remote]] host. Its
             screen repeats a pane watched for itself, so it is never judged, counted, notified, answered
             or put in stats: one card line, "view of …".
    other    a program known not to be an agent: a shell, panewatch itself (`panewatch ls` prints the
             dialogs it lists), or one of core/programs.toml (pagers, editors, `cat`, `sleep`, `git`,
             `watch`, test runners…), with every other member of its group known too. Never judged
             by agent rules: a shell that printed an agent's words is still a shell.
    unknown  we cannot tell what runs behind the screen: the group could not be read (a process gone, a
             pane seen before its first look), a program named by no manifest and no list (a renamed
             agent binary, an agent under `sudo` or a recorder in a pty of its own, a replay script), an
             interpreter whose script tmux does not say (a remote pane's `node`), or a transport into
             processes we cannot read (ssh to a host that is not watched, a container, another
             multiplexer). Only then does the screen identify the agent (core/classify.py `identify`).

Why the screen never overrides a known foreground: on a new user's afternoon in tmux a bash pane that ran
`panewatch ls` while an agent waited showed the dialog's words, turned blocked, notified, and was typed
into. A wrong "needs you" costs more than a late one. Why a program named nowhere is still judged: a
"needs you" never said is not late but lost; an agent's process name missing from its manifest is fixed
in `processes` (or a user override), a program that only shows text in programs.toml.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Literal, Protocol

from panewatch.core.identity import WRAPPERS, base_name, candidate_names, is_interpreter, is_shell_name, script_of


class Foreground(Protocol):
    """What this module reads of a described foreground group (core/machine.py `Foreground`)."""

    @property
    def name(self) -> str: ...
    @property
    def cmdline(self) -> tuple[str, ...]: ...
    @property
    def is_shell(self) -> bool: ...
    @property
    def agent_id(self) -> str | None: ...
    @property
    def members(self) -> tuple[tuple[str, tuple[str, ...]], ...]: ...

Kind = Literal["agent", "view", "other", "unknown"]
# A pane of these kinds holds no agent: nothing on its screen is judged by an agent's rules.
NOT_AGENT: frozenset[Kind] = frozenset({"view", "other"})

MULTIPLEXERS = frozenset({"tmux"})  # a client of one shows a session panewatch watches (or could)
# Programs that show processes we cannot read from here: what is on their screen may be an agent's.
TRANSPORTS = frozenset({"ssh", "autossh", "mosh", "mosh-client", "et", "telnet", "docker", "podman", "nerdctl",
                        "kubectl", "distrobox", "toolbox", "lxc", "incus", "vagrant", "limactl", "screen",
                        "zellij", "dtach", "abduco", "byobu", "multipass", "orb", "gcloud", "az", "aws"})
SSH_NAMES = frozenset({"ssh", "autossh", "mosh", "mosh-client", "et"})
# ssh options that take a value (`ssh -p 22 -i key host cmd`): the destination is the first other word.
_SSH_VALUED = frozenset("BbcDEeFIiJLlmOoPpQRSWw")
PANEWATCH_VIEWS = frozenset({"run", "attach"})  # panewatch subcommands that show a pane watched for itself


def load_known_programs(text: str) -> dict[str, str]:
    """programs.toml → {program name: its group's id}. A malformed file is a bug in the package: it raises."""
    known: dict[str, str] = {}
    for group in tomllib.loads(text)["group"]:
        if not (group.get("id") and group.get("note")):
            raise ValueError(f"programs.toml: every group needs an id and a note: {group}")
        for name in group["programs"]:
            known[name] = group["id"]
    return known


KNOWN_PROGRAMS: Mapping[str, str] = load_known_programs(
    (resources.files("panewatch.core") / "programs.toml").read_text(encoding="utf-8"))


@dataclass(frozen=True, slots=True)
class PaneKind:
    """A pane's kind, what holds it (for people: "bash", "tmux client", "panewatch run", "ssh devbox"),
    and for a view what it shows as far as its command line says (`panewatch attach 5` → "5", an ssh
    destination); the runtime names a tmux client's session from tmux itself."""

    kind: Kind
    what: str = ""
    shows: str | None = None

    @property
    def judged(self) -> bool:
        """Whether agent rules judge this pane's screen (an agent's, or one we cannot read)."""
        return self.kind not in NOT_AGENT


UNKNOWN = PaneKind("unknown")


def pane_kind(fg: Foreground | None, *, watched_hosts: Collection[str] = ()) -> PaneKind:
    """The kind of a pane whose foreground group is described by `fg` (None: not known).
    `watched_hosts`: the [[remote]] hosts (as typed after ssh, and their names), whose panes are watched."""
    if fg is None:
        return UNKNOWN
    if fg.agent_id is not None:
        return PaneKind("agent", fg.agent_id)
    name = base_name(fg.name) or base_name(fg.cmdline[0] if fg.cmdline else "")
    if not name:
        return UNKNOWN  # the group could not be read
    if fg.is_shell:
        return PaneKind("other", name)
    leader = program_kind(fg.name, fg.cmdline or (fg.name,), watched_hosts)
    if not (is_shell_name(name) or name in WRAPPERS):
        return leader  # the leader names the job: `claude | tee log` is claude's, `less` with its filter a pager
    # A script or a launcher: what it runs holds the screen (`sh -c 'cat f; sleep 600'` is a sleep).
    members = [program_kind(n, argv or (n,), watched_hosts) for n, argv in fg.members if not is_shell_name(n)]
    if (view := next((k for k in members if k.kind == "view"), None)) is not None:
        return view
    if name in WRAPPERS and (unknown := next((k for k in members if k.kind == "unknown"), None)) is not None:
        return unknown  # `npx some-agent`, `timeout 3600 ./my-agent`: it may be an agent
    # A shell's unknown member does not make its pane unknown: an interactive shell runs its prompt's helpers
    # (starship, a PROMPT_COMMAND) in its own group, under whatever the last command printed.
    return members[0] if members else leader


def program_kind(name: str, argv: tuple[str, ...], watched_hosts: Collection[str] = ()) -> PaneKind:
    """The kind one process (not an agent's) gives its pane."""
    base = base_name(name) or base_name(argv[0] if argv else "")
    if is_shell_name(base):
        return PaneKind("other", base)
    names = candidate_names(name, argv)
    if "panewatch" in names:  # `panewatch …`, `python -m panewatch …`
        return _panewatch(argv)
    if any(n.split(":")[0] in MULTIPLEXERS for n in (name, base, *names)):  # a client titles itself "tmux: client"
        return PaneKind("view", "tmux client")
    transport = next((n for n in (base, *names) if n in TRANSPORTS), None)
    if transport is not None:
        if transport in SSH_NAMES:
            host = ssh_destination(argv)
            if host is not None and _watched(host, watched_hosts):
                return PaneKind("view", f"ssh {host}", shows=host)
            return PaneKind("unknown", f"ssh {host}" if host else "ssh")
        return PaneKind("unknown", transport)
    if is_interpreter(base) and script_of(argv) is None and len(argv) <= 1:
        return PaneKind("unknown", base)  # `node` as tmux names a remote pane's command: its script is unsaid
    if (known := next((n for n in (base, *names) if n in KNOWN_PROGRAMS), None)) is not None:
        return PaneKind("other", known)  # `python -m pytest` is pytest
    return PaneKind("unknown", base)  # named by no manifest and no list: it may be an agent


def _panewatch(argv: tuple[str, ...]) -> PaneKind:
    """panewatch itself: `run` and `attach` show a pane watched for itself (a view); anything else
    (`ls`, `top`, `tmux status`) is another program, whose output quotes other panes' dialogs."""
    words = [a for a in argv[1:] if not a.startswith("-") and a != "panewatch" and base_name(a) != "panewatch"]
    sub = words[0] if words else ""
    if sub in PANEWATCH_VIEWS:
        shows = words[1] if sub == "attach" and len(words) > 1 else None
        return PaneKind("view", f"panewatch {sub}", shows=shows)
    return PaneKind("other", f"panewatch {sub}".strip())


def ssh_destination(argv: tuple[str, ...]) -> str | None:
    """The host an ssh command line connects to (`ssh -p 2222 me@box tmux a` → "me@box")."""
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg == "--":
            return args[0] if args else None
        if arg.startswith("-") and len(arg) > 1:
            for i, flag in enumerate(arg[1:], 1):
                if flag in _SSH_VALUED:
                    if i == len(arg) - 1 and args:
                        args.pop(0)  # `-p 22`, `-Ap 22`: the value is the next word (`-p22`: this one)
                    break
            continue
        return arg
    return None


def _watched(host: str, watched: Collection[str]) -> bool:
    """`me@box` is watched when `me@box` or `box` is a [[remote]] host (or its name)."""
    bare = host.rsplit("@", 1)[-1]
    return host in watched or bare in watched or any(w.rsplit("@", 1)[-1] == bare for w in watched)
