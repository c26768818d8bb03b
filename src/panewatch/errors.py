"""panewatch's exceptions, in one tree (`wire_name`: the error's name on the board's wire):

    PanewatchError                            base of every error panewatch raises on purpose
     ├── GuardError               refused     refused or unanswerable input to a pane (runtime/guard.py)
     │    ├── PaneBlockedError    pane_blocked     send()/keys() while the pane waits for a permission answer;
     │    │                                        .prompt
     │    ├── AgentExitedError    agent_exited     send()/keys() after the agent exited: a shell would run the text
     │    ├── PaneBusyError       pane_busy        any write: what the pane's last input caused did not settle
     │    │                                        within the guard's bound (it kept changing); nothing typed;
     │    │                                        .waited
     │    ├── NotBlockedError     not_blocked      answer() but no prompt is waiting; .state
     │    ├── PromptChangedError  prompt_changed   answer() but the prompt on screen is not the one the user
     │    │                                        saw; .expected (fingerprint), .prompt (the one now on screen)
     │    ├── UnknownOptionError  unknown_option   answer() names an option the prompt does not offer; .prompt
     │    ├── SelectionUnseenError selection_unseen  answer() by arrows on an option row whose selected option
     │    │                                        could not be read from the screen; nothing typed; .prompt
     │    ├── PaneInModeError     pane_in_mode     any write to a tmux pane showing a tmux mode (copy mode): keys
     │    │                                        would drive the mode, not the program; .mode
     │    ├── PaneSynchronizedError pane_synchronized  any write to a tmux pane with synchronize-panes on: tmux
     │    │                                        would copy the keys into the window's other panes; .panes
     │    ├── PaneNotResyncedError pane_not_resynced  any write to a pane whose screen is not known to be current:
     │    │                                        a remote host unreachable, or back but the pane not redrawn
     │    │                                        yet, or tmux did not answer the check before the write
     │    ├── NotAnAgentError     not_an_agent     send()/answer() into a pane whose foreground is not an agent (a
     │    │                                        shell, a pager, a view of another pane: core/panekind.py); .what
     │    ├── NotSubmittedError   not_submitted    send(): the text was typed and Enter pressed, but the agent did
     │    │                                        not start its turn within the bound; .line (its input row now)
     │    └── NoScreenError       no_screen        any input to a hook-only pane (an agent known by its installed
     │                                             hooks alone, board/hookonly.py): panewatch has no screen of it
     │                                             and no way in; .where (terminal, tty, cwd)
     ├── SettingsError (ValueError)           config.toml problems, each naming the file and key; .problems
     ├── ManifestError (ValueError)           core/manifest.py: an unusable manifest; .path, .problems
     ├── PatternError (ValueError)            core/pattern.py: a rule pattern RE2 cannot run with re's meaning
     ├── CastError (ValueError)               core/cast.py: not a readable asciicast v2 file
     ├── UpdateError (RuntimeError)           runtime/agents_update.py: the update source cannot be read
     ├── StoreError                           runtime/waitstore.py: the waits database cannot be used
     ├── HooksUnavailable (OSError)           runtime/hookinject.py: this launch cannot take panewatch's
     │                                        hooks (Gemini CLI's per-launch settings need root); says why
     ├── AgentSettingsError (ValueError)      runtime/hooksinstall.py: an agent's own settings file cannot
     │                                        take or give back panewatch's hooks; .path, nothing written
     ├── RemoteError              .kind       board/rpc.py: the other side of the daemon's socket refused a
     │    │                                   request; .kind is the wire name it sent, .data the reply
     │    ├── ConnectionLost      connection_lost
     │    └── DaemonNotRunning    no_daemon   board/client.py
     ├── TmuxError                tmux        runtime/tmux.py: tmux is missing, or a server or command failed
     │    ├── TmuxVersionError    tmux_too_old     the tmux found is older than control mode panewatch needs
     │    └── TmuxUnsafeError     tmux_unsafe      a tmux socket directory or socket another user controls
     │                                             (tmux's own rule): not watched, no agent started there; .path
     ├── SshError                 ssh         runtime/ssh.py: ssh could not carry tmux to a remote host; .host,
     │    │                                   .detail (ssh's own words)
     │    ├── HostUnreachableError host_unreachable  no connection (refused, timed out, unknown name, link lost)
     │    ├── KeyRefusedError     key_refused      the host refused every key ssh offered (BatchMode: no password)
     │    └── HostKeyError        host_key         the host's key is not the one known_hosts has (or none is known)
     ├── CannotGoThere            cannot_go_there  runtime/goto.py: the terminal a pane runs in cannot be told to
     │                                        show it (no remote control); .where says where it is
     ├── SocketPathTooLong (OSError) socket_path_too_long  runtime/system.py: a unix socket path over the
     │                                        platform's limit (108 bytes on Linux, 104 on macOS); .path
     ├── AlreadyRunning                       board/daemon.py: a daemon already serves this user
     ├── CaptureError (RuntimeError)          testing/capture.py: the run did not follow its scenario
     ├── TruthError (ValueError)              testing/capture_truth.py: no truth derivable from the recording
     └── ClientGone                           testing/mock/exchange.py: the agent hung up on a mock

An error that crosses the wire (the daemon's socket, the board's websocket) travels as its class's
`wire_name` plus its message (board/model.py `wire_error`); the receiving side raises a RemoteError
whose `kind` is that name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol


# What a refusal shows of the prompt on screen (core/prompt.py's Prompt and Option). Described here,
# not imported: this module sits below every layer, core included.
class _Option(Protocol):
    @property
    def number(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def key(self) -> str: ...


class Prompt(Protocol):
    @property
    def question(self) -> str: ...
    @property
    def options(self) -> Sequence[_Option]: ...
    @property
    def fingerprint(self) -> str: ...


class PanewatchError(Exception):
    """Base of every error panewatch raises on purpose."""

    wire_name: ClassVar[str] = "error"


class GuardError(PanewatchError):
    """The input guard refused to write, or could not do what was asked."""

    wire_name = "refused"


def _describe(prompt: Prompt) -> str:
    lines = [f"  {prompt.question or '(question not on screen)'}"]
    lines += [f"    {o.number}. {o.label}  [{o.kind}, key {o.key!r}]" for o in prompt.options]
    lines.append(f"  fingerprint {prompt.fingerprint}")
    return "\n".join(lines)


class PaneBlockedError(GuardError):
    """The pane waits for a permission answer; plain text would land in the dialog."""

    wire_name = "pane_blocked"

    def __init__(self, prompt: Prompt, pane: str = "") -> None:
        self.prompt = prompt
        where = f"pane {pane} " if pane else "the pane "
        super().__init__(f"{where}is blocked on a prompt; not sending text into it:\n{_describe(prompt)}\n"
                         "answer it with answer(option, fingerprint)")


class AgentExitedError(GuardError):
    """The agent is gone and a shell holds the pane: typed text would run as a shell command."""

    wire_name = "agent_exited"

    def __init__(self, pane: str = "") -> None:
        where = f"pane {pane}" if pane else "the pane"
        super().__init__(f"the agent in {where} has exited and a shell is in front; not typing into it")


class PaneBusyError(GuardError):
    """The pane's output did not settle in time after its last input, so it could not be checked."""

    wire_name = "pane_busy"

    def __init__(self, pane: str = "", waited: float = 0.0) -> None:
        self.waited = waited
        where = f"pane {pane}" if pane else "the pane"
        super().__init__(f"{where} is busy changing: its screen did not settle within {waited:g} s (it kept "
                         "drawing, or other input to it was queued ahead); nothing was typed: try again")


class NotBlockedError(GuardError):
    """answer() was called but the pane is not waiting on a prompt."""

    wire_name = "not_blocked"

    def __init__(self, state: str) -> None:
        self.state = state
        super().__init__(f"the pane is {state}, not blocked: there is no prompt to answer")


class PromptChangedError(GuardError):
    """The prompt on screen is not the one the user confirmed an answer for."""

    wire_name = "prompt_changed"

    def __init__(self, expected: str, prompt: Prompt) -> None:
        self.expected = expected
        self.prompt = prompt
        super().__init__(f"the prompt changed (expected fingerprint {expected}); now on screen:\n{_describe(prompt)}")


class UnknownOptionError(GuardError):
    """The answer names no option of the prompt."""

    wire_name = "unknown_option"

    def __init__(self, option: int | str, prompt: Prompt) -> None:
        self.option = option
        self.prompt = prompt
        super().__init__(f"no option {option!r} in this prompt:\n{_describe(prompt)}")


class SelectionUnseenError(GuardError):
    """An option row (OpenCode) chooses by arrows from the selected option, and the screen did not show which one
    that is: typing would choose blindly."""

    wire_name = "selection_unseen"

    def __init__(self, prompt: Prompt) -> None:
        self.prompt = prompt
        super().__init__("the dialog does not show here which option is selected, so the arrows could land on "
                         f"another one; nothing was typed: answer in the pane\n{_describe(prompt)}")


class PaneInModeError(GuardError):
    """The tmux pane shows a tmux mode (copy mode, a chooser): typed keys would drive that, not the program."""

    wire_name = "pane_in_mode"

    def __init__(self, pane: str = "", mode: str = "copy-mode") -> None:
        self.mode = mode
        where = f"tmux pane {pane}" if pane else "the tmux pane"
        super().__init__(f"{where} is in {mode or 'a tmux mode'}: keys would go to tmux, not the program; nothing "
                         "was typed (leave the mode, e.g. press q in it, then try again)")


class NotAnAgentError(GuardError):
    """The pane's foreground is not an agent: a shell that printed an agent's words, a pager, a view of another
    pane. Nothing there waits on the user; typed text would go to that program."""

    wire_name = "not_an_agent"

    def __init__(self, pane: str = "", what: str = "", view_of: str | None = None) -> None:
        self.what = what
        where = f"pane {pane}" if pane else "the pane"
        holder = f"{what}" if what else "a program that is not an agent"
        there = f"; it shows pane {view_of}: answer there" if view_of else ""
        super().__init__(f"{where} runs {holder}, not an agent{there}; nothing was typed")


class NotSubmittedError(GuardError):
    """send() typed the text and pressed Enter as a key of its own, but the agent did not start its turn in time:
    the text is still in its input box (or the agent ignores Enter there)."""

    wire_name = "not_submitted"

    def __init__(self, pane: str = "", waited: float = 0.0, line: str = "") -> None:
        self.line = line
        where = f"pane {pane}" if pane else "the pane"
        shown = f"; its input row shows {line!r}" if line else ""
        super().__init__(f"typed into {where}, but its agent did not start a turn within {waited:g} s{shown}")


class TmuxError(PanewatchError):
    """tmux is not installed, its server is gone, or a command to it failed."""

    wire_name = "tmux"


class TmuxVersionError(TmuxError):
    """The tmux found is older than panewatch's control-mode client needs."""

    wire_name = "tmux_too_old"

    def __init__(self, found: str, minimum: str) -> None:
        self.found = found
        super().__init__(f"panewatch needs tmux {minimum} or newer (control-mode flow control, client flags); "
                         f"found {found or 'an unknown version'}")


class TmuxUnsafeError(TmuxError):
    """A tmux socket directory (or a socket in it) that another user owns or may enter. tmux refuses such a
    directory itself (tmux.c: the user's own, no access for others); naming a socket with -S skips that
    check, so panewatch makes it: a server there may be another user's, running what we start as them."""

    wire_name = "tmux_unsafe"

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        super().__init__(f"refusing tmux at {path}: {problem} (tmux's rule, and panewatch's: the socket directory "
                         "is the user's own with no access for others, each socket in it the user's own); nothing "
                         "there is watched or started. Another user may have made it first: point TMUX_TMPDIR at "
                         "a private directory (e.g. $XDG_RUNTIME_DIR) for tmux and panewatch alike")


class PaneSynchronizedError(GuardError):
    """tmux's `synchronize-panes` is on for the pane: tmux copies every key sent to it into the other panes of
    its window, whose screens (a dialog, a shell) the guard did not check."""

    wire_name = "pane_synchronized"

    def __init__(self, pane: str = "", target: str = "", panes: int = 0) -> None:
        self.panes = panes
        where = f"tmux pane {pane}" if pane else "the tmux pane"
        others = f"the {panes - 1} other pane{'s' if panes != 2 else ''}" if panes > 1 else "the other panes"
        super().__init__(f"{where} has synchronize-panes on: tmux would copy these keys into {others} of its window, "
                         "whose screens were not checked; nothing was typed (turn it off with "
                         f"`tmux set-window-option -t {target or pane or 'PANE'} synchronize-panes off`, or type "
                         "in the pane yourself)")


class PaneNotResyncedError(GuardError):
    """A pane's screen is not known to be current: a remote host's link is down, or came back and the pane's
    screen was not yet redrawn from tmux, or tmux did not answer the round trip before a write (a hung link).
    Typing now would answer a screen nobody has seen."""

    wire_name = "pane_not_resynced"

    def __init__(self, pane: str = "", why: str = "") -> None:
        where = f"pane {pane}" if pane else "the pane"
        super().__init__(f"{where}: {why or 'its screen was not resynchronised since the link came back'}; "
                         "nothing was typed")


class SshError(PanewatchError):
    """ssh could not carry tmux to a remote host. `host` as the user named it; `detail`: ssh's own words."""

    wire_name = "ssh"

    def __init__(self, host: str, message: str, detail: str = "") -> None:
        self.host = host
        self.detail = detail = detail.removeprefix("ssh: ")
        super().__init__(f"{host}: {message}" + (f" (ssh: {detail})" if detail else ""))


class HostUnreachableError(SshError):
    """No connection to the host: refused, timed out, unknown name, or the link went down."""

    wire_name = "host_unreachable"


class KeyRefusedError(SshError):
    """The host refused every key ssh offered; with BatchMode ssh asks for no password (nor do we)."""

    wire_name = "key_refused"


class HostKeyError(SshError):
    """The host's key does not match known_hosts (or none is known and ssh may not ask): not connecting."""

    wire_name = "host_key"


class HooksUnavailable(PanewatchError, OSError):
    """This launch cannot take panewatch's hooks; the message says why (the screen still detects).
    An OSError, as a report socket that cannot be made: callers say "hooks disabled" for both."""


class AgentSettingsError(PanewatchError, ValueError):
    """An agent's own settings file (`hooks install`/`uninstall`) is unreadable, malformed or in a shape
    panewatch will not edit; the message names the file and the problem. Nothing was written."""

    wire_name = "bad_agent_settings"

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        super().__init__(f"{path}: {problem}")


class SettingsError(PanewatchError, ValueError):
    """Unusable settings. `problems` lists each one as 'FILE: key: problem'."""

    wire_name = "bad_settings"

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__("; ".join(problems))


class NoScreenError(GuardError):
    """Input to a pane panewatch knows only from its agent's installed hooks: there is no screen to check and
    no way to type into it; `where` says where the agent runs (its terminal, tty and directory)."""

    wire_name = "no_screen"

    def __init__(self, where: str) -> None:
        self.where = where
        super().__init__(f"panewatch knows this agent from its hooks only (no screen, no input): go to it in {where}")


class CannotGoThere(PanewatchError):
    """The terminal a pane runs in cannot be told to show it; `where` says where it is for a person to go."""

    wire_name = "cannot_go_there"

    def __init__(self, where: str, why: str) -> None:
        self.where = where
        super().__init__(f"{why}; it runs in {where}")


class SocketPathTooLong(PanewatchError, OSError):
    """A unix socket's path is longer than the platform takes (sun_path: 108 bytes on Linux, 104 on macOS)."""

    wire_name = "socket_path_too_long"

    def __init__(self, path: str, limit: int) -> None:
        self.path = path
        super().__init__(f"{path}: {len(path.encode('utf-8', 'surrogateescape'))} bytes, over this system's "
                         f"{limit}-byte limit for a unix socket path (set PANEWATCH_RUNTIME_DIR to a shorter one)")
