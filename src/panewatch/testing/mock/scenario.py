"""Scenarios: what a mock model says, step by step, independent of the wire format.

The user's prompt carries a control string such as ``SCN=bash DELAY=5``. A scenario is a list of
tool-call steps followed by one final text reply; the step to send next is chosen from how many
tool results the conversation already holds, so the mock keeps no per-session state.

A wire format (`Kind`) is spoken by several agents, each with its own tool names: the *dialect*
(Claude Code's `Bash`, OpenCode's `bash`, Copilot's `create`, ...) is recognised from the tool
names the request offers (`dialect_for`), so one mock serves every agent of its wire format.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Kind = str  # "anthropic" | "openai" (Responses) | "gemini" | "chat" (OpenAI Chat Completions)
KINDS: tuple[Kind, ...] = ("anthropic", "openai", "gemini", "chat")
Dialect = str  # the agent whose tool vocabulary a reply uses
NATIVE: dict[Kind, Dialect] = {"anthropic": "claude", "openai": "codex", "gemini": "gemini", "chat": "qwen"}

_SCN_RE = re.compile(r"\bSCN=([A-Za-z_][\w-]*)")
_DELAY_RE = re.compile(r"\bDELAY=(\d+(?:\.\d+)?)")
_FILE_RE = re.compile(r"\bFILE=(\S+)")

MARKER = "/tmp/panewatch_mock_x"


@dataclass(frozen=True, slots=True)
class Control:
    """The scenario choice parsed from the prompt text."""

    scenario: str
    delay: float  # working time before every reply (keepalives are sent meanwhile)
    file: str | None = None  # file the edit scenarios touch; default hello.py in the cwd


def parse_control(text: str, *, default_scenario: str = "bash", default_delay: float = 1.0) -> Control:
    scn = _SCN_RE.search(text)
    delay = _DELAY_RE.search(text)
    file = _FILE_RE.search(text)
    return Control(
        scenario=scn.group(1).lower() if scn else default_scenario,
        delay=float(delay.group(1)) if delay else default_delay,
        file=file.group(1) if file else None,
    )


def has_control(text: str) -> bool:
    return _SCN_RE.search(text) is not None


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """One model turn: optional text, then tool calls (if any end the turn with tool_use)."""

    text: str = ""
    tools: tuple[ToolCall, ...] = ()
    delay: float = 0.0  # seconds of "thinking" before the first content byte
    stream_seconds: float = 0.0  # spread the text deltas over this long (the slow scenario)
    step: int = 0
    scenario: str = ""

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.tools else "end_turn"

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]


@dataclass(frozen=True, slots=True)
class Script:
    steps: tuple[tuple[ToolCall, ...], ...]  # each step is one reply made of tool calls
    final: str  # the text that ends the turn
    stream_seconds: float = 0.0


def _target(control: Control, cwd: str | None) -> str:
    name = control.file or "hello.py"
    return name if os.path.isabs(name) else os.path.join(cwd or os.getcwd(), name)


def _done(scenario: str) -> str:
    return f"Done. The scripted scenario '{scenario}' is complete."


_SLOW_TEXT = (
    "Working through this slowly on purpose. " * 3
    + "This reply streams for several seconds so the agent keeps showing that it is busy. "
    + "Nothing needs your approval. "
) * 2

_TRAPS: dict[Dialect, str] = {
    "claude": (
        "Here is what the permission dialog looked like in the bug report:\n\n"
        "```\n"
        " Bash command\n\n   rm -rf build/\n   Remove the build directory\n\n"
        " Do you want to proceed?\n"
        " ❯ 1. Yes\n"
        "   2. Yes, and don't ask again for rm commands in this project\n"
        "   3. No, and tell Claude what to do differently (esc)\n\n"
        " Esc to cancel · Tab to amend\n"
        "```\n\n"
        "Other agents ask \"Would you like to run the following command?\" or \"Allow execution?\".\n\n"
        "Would you like me to add a regression test?\n\n1. Yes\n2. No"
    ),
    "codex": (
        "This is the approval dialog from the bug report:\n\n"
        "> Would you like to run the following command?\n>\n"
        "> $ rm -rf build/\n>\n"
        "> › 1. Yes, proceed (y)\n"
        ">   2. No, and tell Codex what to do differently (esc)\n>\n"
        "> Press enter to confirm or esc to cancel\n\n"
        "Other agents print \"Do you want to proceed? ❯ 1. Yes\" or \"Allow execution?\".\n\n"
        "Would you like me to add a regression test for greet()?\n\n1. Yes, proceed\n2. No"
    ),
    "gemini": (
        "This is the confirmation from the bug report:\n\n"
        "```\n"
        "? Shell  rm -rf build/\n\n"
        "Allow execution of [Shell]?\n\n"
        "● 1. Allow once\n"
        "  2. Allow for this session\n"
        "  3. No, suggest changes (esc)\n"
        "```\n\n"
        "Other agents ask \"Do you want to proceed? ❯ 1. Yes\" or "
        "\"Would you like to run the following command?\".\n\n"
        "Apply this change? Would you like me to add a regression test?\n\n1. Allow once\n2. No"
    ),
    "opencode": (
        "This is the permission prompt from the bug report:\n\n"
        "```\n"
        "△ Permission required\n"
        "  # Shell command\n\n"
        "$ rm -rf build/\n\n"
        " Allow once   Allow always   Reject        ctrl+f fullscreen  ⇆ select  enter confirm\n"
        "```\n\n"
        "Other agents ask \"Do you want to run this command?\" or \"Allow execution of: 'rm'?\".\n\n"
        "Would you like me to add a regression test?\n\n1. Allow once\n2. Reject"
    ),
    "copilot": (
        "This is the confirmation from the bug report:\n\n"
        "```\n"
        "Do you want to run this command?\n\n"
        "❯ 1. Yes\n"
        "  2. Yes, and don't ask again for `rm` in this directory\n"
        "  3. No, and tell Copilot what to do differently (Esc to stop)\n\n"
        "↑/↓ to navigate · enter to select · esc to cancel\n"
        "```\n\n"
        "Other agents show \"△ Permission required\" or \"Allow execution of: 'rm'?\".\n\n"
        "Do you want me to add a regression test?\n\n1. Yes\n2. No"
    ),
    "qwen": (
        "This is the confirmation from the bug report:\n\n"
        "```\n"
        "? Shell rm -rf build/ (Remove the build directory) ←\n"
        "  Allow execution of: 'rm'?\n"
        "  › 1. Yes, allow once\n"
        "    2. Always allow run 'rm *' commands in this project\n"
        "    4. No, suggest changes (esc)\n"
        "⠏ Waiting for user confirmation...\n"
        "```\n\n"
        "Other agents ask \"Do you want to run this command?\" or show \"△ Permission required\".\n\n"
        "Apply this change? Would you like me to add a regression test?\n\n1. Yes, allow once\n2. No"
    ),
    # No code fence: Aider offers to run every ```bash block and applies SEARCH/REPLACE blocks.
    "aider": (
        "This is the question from the bug report:\n\n"
        "> rm -rf build/\n"
        "> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:\n\n"
        "and for files: \"Add file to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:\".\n\n"
        "Other agents ask \"Do you want to run this command?\" or \"Allow execution of: 'rm'?\".\n\n"
        "Should I add a regression test? (Y)es/(N)o [Yes]:"
    ),
}


# The `quote` scenario: the reply ends with the agent's own dialog, its footer and, last of all, its busy
# line, each a paragraph of plain text (no fence, no quote mark), so they are the reply's bottom lines,
# right above where the agent draws the real ones. A copy stands still: the turn is over once it is out.
QUOTE_BUSY: dict[Dialect, str] = {
    "claude": "✶ Flambéing… (5s · esc to interrupt)",
    "codex": "• Working (5s • esc to interrupt)",
    "gemini": "⠼ Thinking... (esc to cancel, 4s)",
    "qwen": "⠙ Petting the cat... (1s · ↑ 39 tokens · esc to cancel)",
    "copilot": "● Working · 68 B esc esc interrupt",
    # A bar the real one never draws (its 8 cells hold at most 6 lit ones, contiguous): the capture tells the
    # quoted line, the end of the reply, from the agent's own.
    "opencode": "■■■■■■■■  esc interrupt",
    "aider": "░█  Waiting for openai/gpt-4o",
}
_QUOTE_REST: dict[Dialect, tuple[str, ...]] = {
    "claude": ("Do you want to proceed?", "❯ 1. Yes", "Esc to cancel · Tab to amend",
               "⏸ manual mode on · esc to interrupt"),
    "codex": ("Would you like to run the following command?", "› 1. Yes, proceed (y)",
              "Press enter to confirm or esc to cancel", "gpt-5.1-codex default · ~/ws"),
    "gemini": ("Allow execution of [Shell]?", "● 1. Allow once", "Waiting for user confirmation...",
               "Shift+Tab to accept edits"),
    "qwen": ("Allow execution of: 'rm'?", "› 1. Yes, allow once", "⠏ Waiting for user confirmation...",
             "Enter to steer · Ctrl+Q to queue"),
    "copilot": ("Do you want to run this command?", "❯ 1. Yes", "↑/↓ to navigate · enter to select · esc to cancel",
                "◎ Working esc esc edit prompt"),
    "opencode": ("△ Permission required", "Allow once   Allow always   Reject   enter confirm",
                 "tab agents  ctrl+p commands"),
    "aider": ("Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:",),
}


def _quote(dialect: Dialect) -> str:
    lines = ("While it worked, my screen showed this:", *_QUOTE_REST[dialect], QUOTE_BUSY[dialect])
    return "\n\n".join(lines)


# The `prose` scenario: markdown lists and rules, and every verified agent's dialog lines written as
# plain reply text (no code fence, no quote): only an agent's real dialog may be judged blocked.
_PROSE = (
    "A summary of the options, in markdown.\n\n"
    "---\n\n"
    "1. Yes\n2. No\n\n"
    "***\n\n"
    "Do you want to proceed?\n\n"
    "❯ 1. Yes\n   2. No, and tell Claude what to do differently (esc)\n\n"
    "Esc to cancel · Tab to amend\n\n"
    "Enter to select · ↑/↓ to navigate · Esc to cancel\n\n"
    "___\n\n"
    "- Would you like to run the following command?\n"
    "- › 1. Yes, proceed (y)\n"
    "- Press enter to confirm or esc to cancel\n\n"
    "Allow execution of [Shell]?\n\n"
    "● 1. Allow once\n  2. Allow for this session\n\n"
    "Waiting for user confirmation...\n\n"
    "1) Yes  2) No  (Y)es/(N)o [Yes]:\n\n"
)


def _anthropic(scn: str, control: Control, cwd: str | None) -> Script | None:
    path = _target(control, cwd)

    def bash(cmd: str, why: str) -> ToolCall:
        return ToolCall("Bash", {"command": cmd, "description": why})

    question = {
        "question": "Which colour should the button be?",
        "header": "Colour",
        "options": [
            {"label": "Red", "description": "A bold red button"},
            {"label": "Blue", "description": "A calm blue button"},
        ],
        "multiSelect": False,
    }
    steps: dict[str, tuple[tuple[ToolCall, ...], ...]] = {
        "bash": ((bash(f"touch {MARKER}", f"Create the marker file {MARKER}"),),),
        # Edit refuses a file that was not Read first in the session.
        "edit": (
            (ToolCall("Read", {"file_path": path}),),
            (ToolCall("Edit", {"file_path": path, "old_string": "print('hello')",
                               "new_string": "print('hello, world')", "replace_all": False}),),
        ),
        "write": ((ToolCall("Write", {"file_path": _target(Control("write", 0, control.file or "new_file.txt"),
                                                            cwd),
                                      "content": "created by the panewatch mock\n"}),),),
        # ExitPlanMode is deferred: it has to be loaded through ToolSearch before it can be called.
        "plan": (
            (ToolCall("ToolSearch", {"query": "select:ExitPlanMode", "max_results": 5}),),
            (ToolCall("ExitPlanMode", {}),),
        ),
        "ask": ((ToolCall("AskUserQuestion", {"questions": [question]}),),),
        "multi": ((bash(f"touch {MARKER}_a", "Create the first marker file"),
                   bash(f"touch {MARKER}_b", "Create the second marker file")),),
    }
    return Script(steps[scn], _done(scn)) if scn in steps else None


def _openai(scn: str, control: Control, cwd: str | None) -> Script | None:
    path = _target(control, cwd)

    def shell(cmd: str, why: str) -> ToolCall:
        # require_escalated asks to leave the read-only sandbox, which on-request turns into a prompt.
        return ToolCall("exec_command", {"cmd": cmd, "sandbox_permissions": "require_escalated",
                                         "justification": why})

    steps: dict[str, tuple[tuple[ToolCall, ...], ...]] = {
        "bash": ((shell(f"touch {MARKER}", f"Create the marker file {MARKER}"),),),
        "edit": ((shell(f"sed -i \"s/print('hello')/print('hello, world')/\" {path}",
                        f"Edit {os.path.basename(path)}"),),),
        "multi": ((shell(f"touch {MARKER}_a", "Create the first marker file"),
                   shell(f"touch {MARKER}_b", "Create the second marker file")),),
    }
    return Script(steps[scn], _done(scn)) if scn in steps else None


def _gemini(scn: str, control: Control, cwd: str | None) -> Script | None:
    path = _target(control, cwd)

    def shell(cmd: str, why: str) -> ToolCall:
        return ToolCall("run_shell_command", {"command": cmd, "description": why})

    steps: dict[str, tuple[tuple[ToolCall, ...], ...]] = {
        "bash": ((shell(f"touch {MARKER}", f"Create the marker file {MARKER}"),),),
        "edit": ((ToolCall("replace", {"file_path": path, "old_string": "print('hello')",
                                       "new_string": "print('hello, world')",
                                       "instruction": "Greet the world instead."}),),),
        "write": ((ToolCall("write_file", {"file_path": _target(Control("write", 0, control.file
                                                                        or "new_file.txt"), cwd),
                                           "content": "created by the panewatch mock\n"}),),),
        "multi": ((shell(f"touch {MARKER}_a", "Create the first marker file"),
                   shell(f"touch {MARKER}_b", "Create the second marker file")),),
        "ask": ((ToolCall("ask_user", {"questions": [{
            "question": "Which colour should the button be?", "header": "Colour", "type": "choice",
            "options": [{"label": "Red", "description": "A bold red button"},
                        {"label": "Blue", "description": "A calm blue button"}]}]}),),),
    }
    return Script(steps[scn], _done(scn)) if scn in steps else None


def _opencode(scn: str, control: Control, cwd: str | None) -> Script | None:
    """OpenCode 1.18 (Anthropic wire): lower-case tools with camelCase arguments."""
    path = _target(control, cwd)
    def bash(cmd: str, why: str) -> ToolCall:
        return ToolCall("bash", {"command": cmd, "description": why})

    steps: dict[str, tuple[tuple[ToolCall, ...], ...]] = {
        "bash": ((bash(f"touch {MARKER}", f"Create the marker file {MARKER}"),),),
        # edit refuses a file that was not read first in the session, as Claude Code's does.
        "edit": ((ToolCall("read", {"filePath": path}),),
                 (ToolCall("edit", {"filePath": path, "oldString": "print('hello')",
                                    "newString": "print('hello, world')"}),),),
        "write": ((ToolCall("write", {"filePath": _target(Control("write", 0, control.file or "new_file.txt"), cwd),
                                      "content": "created by the panewatch mock\n"}),),),
        "multi": ((bash(f"touch {MARKER}_a", "Create the first marker file"),
                   bash(f"touch {MARKER}_b", "Create the second marker file")),),
    }
    return Script(steps[scn], _done(scn)) if scn in steps else None


def _copilot(scn: str, control: Control, cwd: str | None) -> Script | None:
    """GitHub Copilot CLI 1.0 (BYOK, Anthropic or OpenAI wire): bash / view / edit / create."""
    path = _target(control, cwd)

    def bash(cmd: str, why: str) -> ToolCall:
        return ToolCall("bash", {"command": cmd, "description": why, "mode": "sync"})

    steps: dict[str, tuple[tuple[ToolCall, ...], ...]] = {
        "bash": ((bash(f"touch {MARKER}", f"Create the marker file {MARKER}"),),),
        "edit": ((ToolCall("view", {"path": path}),),
                 (ToolCall("edit", {"path": path, "old_str": "print('hello')", "new_str": "print('hello, world')"}),),),
        "write": ((ToolCall("create", {"path": _target(Control("write", 0, control.file or "new_file.txt"), cwd),
                                       "file_text": "created by the panewatch mock\n"}),),),
        "multi": ((bash(f"touch {MARKER}_a", "Create the first marker file"),
                   bash(f"touch {MARKER}_b", "Create the second marker file")),),
    }
    return Script(steps[scn], _done(scn)) if scn in steps else None


def _qwen(scn: str, control: Control, cwd: str | None) -> Script | None:
    """Qwen Code 0.24 (Chat Completions wire): Gemini CLI's shell tool, Claude-style edit arguments."""
    path = _target(control, cwd)

    def shell(cmd: str, why: str) -> ToolCall:
        return ToolCall("run_shell_command", {"command": cmd, "description": why})

    steps: dict[str, tuple[tuple[ToolCall, ...], ...]] = {
        "bash": ((shell(f"touch {MARKER}", f"Create the marker file {MARKER}"),),),
        "edit": ((ToolCall("read_file", {"file_path": path}),),
                 (ToolCall("edit", {"file_path": path, "old_string": "print('hello')",
                                    "new_string": "print('hello, world')"}),),),
        "write": ((ToolCall("write_file", {"file_path": _target(Control("write", 0, control.file or "new_file.txt"),
                                                                cwd),
                                           "content": "created by the panewatch mock\n"}),),),
        "multi": ((shell(f"touch {MARKER}_a", "Create the first marker file"),
                   shell(f"touch {MARKER}_b", "Create the second marker file")),),
    }
    return Script(steps[scn], _done(scn)) if scn in steps else None


def _aider(scn: str, control: Control, cwd: str | None) -> Script | None:
    """Aider 0.86 (no tools): a shell block it offers to run, a SEARCH/REPLACE block on a file that
    is not in the chat (it asks before editing it). One text reply ends the turn."""
    name = control.file or "hello.py"
    texts = {
        "bash": f"Run this to create the marker file:\n\n```bash\ntouch {MARKER}\n```\n\n",
        "edit": (f"{name}\n```python\n<<<<<<< SEARCH\nprint('hello')\n=======\nprint('hello, world')\n"
                 ">>>>>>> REPLACE\n```\n\n"),
        "multi": f"Run these:\n\n```bash\ntouch {MARKER}_a\n```\n\n```bash\ntouch {MARKER}_b\n```\n\n",
    }
    return Script((), texts[scn] + _done(scn)) if scn in texts else None


_BUILDERS: dict[Dialect, Callable[[str, Control, str | None], Script | None]] = {
    "claude": _anthropic,
    "codex": _openai,
    "gemini": _gemini,
    "opencode": _opencode,
    "copilot": _copilot,
    "qwen": _qwen,
    "aider": _aider,
}

COMMON_SCENARIOS = ("bash", "edit", "slow", "multi", "trap", "text", "prose", "quote")
SCENARIOS: dict[Dialect, tuple[str, ...]] = {
    "claude": (*COMMON_SCENARIOS, "write", "plan", "ask"),
    "codex": COMMON_SCENARIOS,
    "gemini": (*COMMON_SCENARIOS, "write", "ask"),
    "opencode": (*COMMON_SCENARIOS, "write"),
    "copilot": (*COMMON_SCENARIOS, "write"),
    "qwen": (*COMMON_SCENARIOS, "write"),
    "aider": COMMON_SCENARIOS,
}


def dialect_for(kind: Kind, tool_names: Iterable[str]) -> Dialect:
    """Whose tool vocabulary to answer in, from the names of the tools the request offers."""
    names = set(tool_names)
    if "Bash" in names:
        return "claude"
    if {"bash", "create", "view"} <= names:
        return "copilot"
    if {"bash", "write", "read"} <= names:
        return "opencode"
    if "exec_command" in names:
        return "codex"
    if "run_shell_command" in names:
        return "qwen" if kind == "chat" else "gemini"
    if kind == "chat" and not names:
        return "aider"  # the one agent that edits through text blocks, not tools
    return NATIVE[kind]


def script_for(kind: Kind, control: Control, cwd: str | None = None, dialect: Dialect | None = None) -> Script:
    """The scripted turn; an unknown scenario name answers with plain text saying so."""
    dialect = dialect or NATIVE[kind]
    scn = control.scenario
    if scn == "slow":
        return Script((), _SLOW_TEXT + _done(scn), stream_seconds=6.0)
    if scn == "trap":
        return Script((), _TRAPS.get(dialect) or _TRAPS[NATIVE[kind]])
    if scn == "text":
        return Script((), _done(scn))
    if scn == "quote":
        return Script((), _quote(dialect if dialect in QUOTE_BUSY else NATIVE[kind]))
    if scn == "prose":
        # Gemini's busy literal (capture.py) is "esc to cancel": Codex's footer is spelled differently for it.
        prose = _PROSE.replace("or esc to cancel", "or Esc to cancel") if dialect == "gemini" else _PROSE
        return Script((), prose + _done(scn))
    script = _BUILDERS[dialect](scn, control, cwd)
    if script is None:
        return Script((), f"Unknown scenario {scn!r} for {dialect}; known: {', '.join(SCENARIOS[dialect])}.")
    return script


def next_reply(kind: Kind, control: Control, tool_results: int, cwd: str | None = None,
               dialect: Dialect | None = None) -> Reply:
    """The reply for a conversation that already holds `tool_results` results since the prompt."""
    script = script_for(kind, control, cwd, dialect)
    done = 0
    for step, calls in enumerate(script.steps):
        if tool_results < done + len(calls):
            return Reply(tools=calls, delay=control.delay, step=step, scenario=control.scenario)
        done += len(calls)
    return Reply(text=script.final, delay=control.delay, stream_seconds=script.stream_seconds,
                 step=len(script.steps), scenario=control.scenario)


def pieces(text: str, stream_seconds: float) -> list[str]:
    """Split text into stream deltas: word-sized when streaming slowly, else a few large chunks."""
    if not text:
        return [""]
    size = 12 if stream_seconds > 0 else 64
    return [text[i:i + size] for i in range(0, len(text), size)]
