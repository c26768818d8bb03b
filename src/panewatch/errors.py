"""panewatch's exceptions, in one tree:

    PanewatchError
     ├── GuardError                  refused or unanswerable input to a pane (guard.py)
     │    ├── PaneBlockedError       send()/keys() while the pane waits for a permission answer; .prompt
     │    ├── AgentExitedError       send()/keys() after the agent exited: a shell would run the text
     │    ├── PaneBusyError          any write: what the pane's last input caused did not settle within
     │    │                          the guard's bound (it kept changing); nothing typed; .waited
     │    ├── NotBlockedError        answer() but no prompt is waiting; .state
     │    ├── PromptChangedError     answer() but the prompt on screen is not the one the user saw;
     │    │                          .expected (fingerprint), .prompt (the one now on screen)
     │    └── UnknownOptionError     answer() names an option the prompt does not offer; .prompt
     └── SettingsError (ValueError)  config.toml problems, each naming the file and key; .problems

ManifestError (manifest.py) and CastError (cast.py) are ValueErrors raised while loading data files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from panewatch.prompt import Prompt


class PanewatchError(Exception):
    """Base of every error panewatch raises on purpose."""


class GuardError(PanewatchError):
    """The input guard refused to write, or could not do what was asked."""


def _describe(prompt: Prompt) -> str:
    lines = [f"  {prompt.question or '(question not on screen)'}"]
    lines += [f"    {o.number}. {o.label}  [{o.kind}, key {o.key!r}]" for o in prompt.options]
    lines.append(f"  fingerprint {prompt.fingerprint}")
    return "\n".join(lines)


class PaneBlockedError(GuardError):
    """The pane waits for a permission answer; plain text would land in the dialog."""

    def __init__(self, prompt: Prompt, pane: str = "") -> None:
        self.prompt = prompt
        where = f"pane {pane} " if pane else "the pane "
        super().__init__(f"{where}is blocked on a prompt; not sending text into it:\n{_describe(prompt)}\n"
                         "answer it with answer(option, fingerprint)")


class AgentExitedError(GuardError):
    """The agent is gone and a shell holds the pane: typed text would run as a shell command."""

    def __init__(self, pane: str = "") -> None:
        where = f"pane {pane}" if pane else "the pane"
        super().__init__(f"the agent in {where} has exited and a shell is in front; not typing into it")


class PaneBusyError(GuardError):
    """The pane's output did not settle in time after its last input, so it could not be checked."""

    def __init__(self, pane: str = "", waited: float = 0.0) -> None:
        self.waited = waited
        where = f"pane {pane}" if pane else "the pane"
        super().__init__(f"{where} is busy changing: its screen did not settle within {waited:g} s (it kept "
                         "drawing, or other input to it was queued ahead); nothing was typed: try again")


class NotBlockedError(GuardError):
    """answer() was called but the pane is not waiting on a prompt."""

    def __init__(self, state: str) -> None:
        self.state = state
        super().__init__(f"the pane is {state}, not blocked: there is no prompt to answer")


class PromptChangedError(GuardError):
    """The prompt on screen is not the one the user confirmed an answer for."""

    def __init__(self, expected: str, prompt: Prompt) -> None:
        self.expected = expected
        self.prompt = prompt
        super().__init__(f"the prompt changed (expected fingerprint {expected}); now on screen:\n{_describe(prompt)}")


class UnknownOptionError(GuardError):
    """The answer names no option of the prompt."""

    def __init__(self, option: int | str, prompt: Prompt) -> None:
        self.option = option
        self.prompt = prompt
        super().__init__(f"no option {option!r} in this prompt:\n{_describe(prompt)}")


class SettingsError(PanewatchError, ValueError):
    """Unusable settings. `problems` lists each one as 'FILE: key: problem'."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__("; ".join(problems))
