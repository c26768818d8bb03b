"""What an agent's hook events say about its pane: data, shared by the hook settings panewatch adds
to a launch (runtime/hookinject.py), the hook client (paneclient.py) and replays of recorded hook reports.

Claude Code 2.1.332 hook events used (checked against the pinned CLI's bundle and DESIGN.md):

    UserPromptSubmit, PreToolUse, PostToolUse,        → working   (a turn or a tool is running)
    PostToolUseFailure, PermissionDenied, ElicitationResult
    PermissionRequest                                 → blocked   (fires as the dialog is displayed:
                                                                   fast and certain, unlike
                                                                   Notification's 6 s delay)
    Elicitation                                       → blocked   (an MCP server asks the user)
    Notification                                      → by its notification_type (NOTIFICATION_STATES:
                                                        permission_prompt → blocked, idle_prompt → idle)
    Stop, StopFailure                                 → done      (turn over, or ended by an API error)

Not used: SessionStart/SessionEnd (the process signal knows about exits; SessionStart also fires
after an auto-compaction mid-turn), SubagentStart/SubagentStop, Pre/PostCompact, Setup, config and
worktree events: none says whether the user is needed.

Codex CLI 0.171.0 (config `[hooks]`, Claude-shaped payloads; observed with the pinned binary against
the mock, tests/e2e/test_agent_hooks_real.py):

    UserPromptSubmit, PreToolUse, PostToolUse         → working   (PreToolUse fires ~50 ms before
                                                                   PermissionRequest for a call that asks)
    PermissionRequest                                 → blocked   (fires as the approval overlay opens;
                                                                   Codex draws nothing else while it
                                                                   waits, only its title blinks)
    Stop                                              → done      (the turn's last message is out)
    Interrupt                                         → done      (Esc ended the turn: Stop does not fire
                                                                   then, and the composer is back)

Not used: SessionStart (lazy: it fires at the first prompt, and again after /clear), SessionEnd (the
process signal), PreModelRequest (every model call, says nothing new), Pre/PostCompact, Subagent*.
Nor `notify`: it is one program for the whole config (ours would replace the user's own), and its
only event, agent-turn-complete, is what Stop already reports.

Gemini CLI 0.61.0 (settings.json `hooks`; observed the same way):

    BeforeAgent, BeforeTool, AfterTool                → working   (BeforeTool fires before the
                                                                   confirmation: the dialog is not up yet)
    Notification                                      → by its notification_type: ToolPermission →
                                                        blocked (fires ~0.1 s after BeforeTool, as
                                                        "Allow execution of …?" is drawn)
    AfterAgent                                        → done      (the turn's final response is out)

Not used: BeforeModel/AfterModel (AfterModel fires for every streamed chunk: a process per chunk),
BeforeToolSelection, SessionStart/SessionEnd, PreCompress: none says whether the user is needed.

Qwen Code 0.24.4 (a Gemini CLI fork with Claude-style hooks: settings.json `hooks`, Claude's event
names, payloads and notification types; observed the same way):

    UserPromptSubmit, PreToolUse, PostToolUse,        → working   (a turn or a tool is running)
    PostToolUseFailure, PermissionDenied
    PermissionRequest                                 → blocked   (awaited just before the dialog is
                                                                   drawn: Qwen shows it after the hook)
    Stop, StopFailure                                 → done      (turn over, or ended by an API error)

Not used: Notification (fired without being awaited: its permission_prompt can land after the grant,
a false second 'blocked'; PermissionRequest says it first), SessionStart/SessionEnd (the process
signal), MessageDisplay (every streamed chunk),
UserPromptExpansion, PostToolBatch, Subagent*, Pre/PostCompact, Todo*, InstructionsLoaded,
SessionDelete: none says whether the user is needed.

GitHub Copilot CLI 1.0.102 (hooks.json `{"version": 1, "hooks": {EVENT: [{"type": "command", "bash": …}]}}`:
per launch from a plugin dir, `--plugin-dir`; installed in $COPILOT_HOME/hooks/; camelCase event names,
payloads with `toolName`/`toolArgs`; observed with the pinned binary against the mock):

    userPromptSubmitted, preToolUse, postToolUse,     → working   (preToolUse fires for every tool, asked
    postToolUseFailure                                             about or not: a read-only `view` is not)
    notification                                      → by its notification_type: permission_prompt →
                                                        blocked (the runtime fires it once the prompt is on
                                                        screen, `notifyPromptShown`, ~10 ms after
                                                        permissionRequest; not awaited), elicitation_dialog →
                                                        blocked (the agent asks the user a question)
    agentStop                                         → done      (the main agent's turn is over)

Not used: permissionRequest (it runs BEFORE Copilot's own rules, session approvals and allow-all: a call
that will be approved by itself fires it too, so it cannot say the user is needed), sessionStart (fires
at the first prompt), sessionEnd (the process signal), subagentStop (a sub-agent, not the pane's turn),
errorOccurred, the notification types agent_completed, agent_idle and shell_completed (background
agents and shells, not the pane's own turn).

A notification that is not a permission request (or an MCP question) is never `blocked`: the types
not listed in NOTIFICATION_STATES report nothing.

Kept free of imports that cost at run time: the hook client imports this module on every hook call.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `from typing import ...`: typing costs the hook client ~10 ms
if TYPE_CHECKING:
    from panewatch.core.states import ReportState

# event -> the state it reports; None: the payload's notification_type decides (NOTIFICATION_STATES).
CLAUDE_HOOK_STATES: dict[str, ReportState | None] = {
    "UserPromptSubmit": "working",
    "PreToolUse": "working",
    "PermissionRequest": "blocked",
    "PostToolUse": "working",
    "PostToolUseFailure": "working",
    "PermissionDenied": "working",
    "Elicitation": "blocked",
    "ElicitationResult": "working",
    "Notification": None,
    "Stop": "done",
    "StopFailure": "done",
}
# Events about one tool call: their hook settings take a matcher ("*": every tool).
CLAUDE_TOOL_EVENTS = frozenset({"PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure",
                                "PermissionDenied"})

CODEX_HOOK_STATES: dict[str, ReportState | None] = {
    "UserPromptSubmit": "working",
    "PreToolUse": "working",
    "PermissionRequest": "blocked",
    "PostToolUse": "working",
    "Stop": "done",
    "Interrupt": "done",
}

GEMINI_HOOK_STATES: dict[str, ReportState | None] = {
    "BeforeAgent": "working",
    "BeforeTool": "working",
    "AfterTool": "working",
    "Notification": None,
    "AfterAgent": "done",
}

QWEN_HOOK_STATES: dict[str, ReportState | None] = {
    "UserPromptSubmit": "working",
    "PreToolUse": "working",
    "PermissionRequest": "blocked",
    "PostToolUse": "working",
    "PostToolUseFailure": "working",
    "PermissionDenied": "working",  # an AUTO-mode classifier denied the call: the turn goes on
    # Not Notification: Qwen fires it without awaiting it, and under load its permission_prompt came after
    # the user's grant (a second, false 'blocked' in a stressed suite run); PermissionRequest is awaited
    # before the dialog is drawn, and Stop ends the turn, so it adds nothing.
    "Stop": "done",
    "StopFailure": "done",
}

COPILOT_HOOK_STATES: dict[str, ReportState | None] = {
    "userPromptSubmitted": "working",
    "preToolUse": "working",
    "postToolUse": "working",
    "postToolUseFailure": "working",
    # Not permissionRequest: it fires before Copilot's own approval rules, for calls they approve too.
    "notification": None,  # permission_prompt: the prompt is on screen
    "agentStop": "done",
}

# The agents panewatch adds hooks to at launch, and the events it subscribes to for each.
HOOK_STATES: dict[str, dict[str, ReportState | None]] = {
    "claude": CLAUDE_HOOK_STATES,
    "codex": CODEX_HOOK_STATES,
    "gemini": GEMINI_HOOK_STATES,
    "qwen": QWEN_HOOK_STATES,
    "copilot": COPILOT_HOOK_STATES,
}

# A Notification hook's notification_type -> state. Types not listed (Claude's auth_success,
# elicitation_complete, ...) say nothing about the pane's state and are not reported.
NOTIFICATION_STATES: dict[str, ReportState] = {
    "permission_prompt": "blocked",  # Claude Code, Copilot CLI (its prompt is on screen)
    "elicitation_dialog": "blocked",  # Claude Code: an MCP server asks the user a question; Copilot CLI too
    "elicitation_url_dialog": "blocked",
    "idle_prompt": "idle",  # Claude Code: "Claude is waiting for your input" after a quiet minute
    "ToolPermission": "blocked",  # Gemini CLI: a tool call waits for the user's confirmation
}


def hook_state(agent: str, event: str, notification_type: str | None = None) -> ReportState | None:
    """The state panewatch's hook reports for one hook event of `agent`; None: it reports nothing."""
    states = HOOK_STATES.get(agent, {})
    if event not in states:
        return None
    state = states[event]
    return state if state is not None else NOTIFICATION_STATES.get(notification_type or "")


def claude_hook_state(event: str, notification_type: str | None = None) -> ReportState | None:
    """hook_state() for Claude Code (the agent whose golden cases record hooks)."""
    return hook_state("claude", event, notification_type)


def hook_detail(event: object, payload: object) -> str:
    """A report's detail from the hook's event name and payload: 'PermissionRequest Bash',
    'Notification (Claude needs your permission)', ..."""
    parts = [event] if isinstance(event, str) and event else []
    if isinstance(payload, dict):
        if isinstance(tool := payload.get("tool_name", payload.get("toolName")), str):  # Copilot: camelCase
            parts.append(tool)
        if isinstance(message := payload.get("message"), str):
            parts.append(f"({message})")
    return " ".join(parts)[:200]
