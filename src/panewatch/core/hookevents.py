"""What an agent's hook events say about its pane: data, shared by the hook settings panewatch adds
to a launch (hooks.py), the hook client (paneclient.py) and replays of recorded hook reports.

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

# Claude Code's Notification hook: notification_type -> state. Types not listed (auth_success,
# elicitation_complete, ...) say nothing about the pane's state and are not reported.
NOTIFICATION_STATES: dict[str, ReportState] = {
    "permission_prompt": "blocked",
    "elicitation_dialog": "blocked",  # an MCP server asks the user a question
    "elicitation_url_dialog": "blocked",
    "idle_prompt": "idle",  # "Claude is waiting for your input" after a quiet minute
}


def claude_hook_state(event: str, notification_type: str | None = None) -> ReportState | None:
    """The state panewatch's hook reports for one Claude Code hook event; None: it reports nothing."""
    if event not in CLAUDE_HOOK_STATES:
        return None
    state = CLAUDE_HOOK_STATES[event]
    return state if state is not None else NOTIFICATION_STATES.get(notification_type or "")


def hook_detail(event: object, payload: object) -> str:
    """A report's detail from the hook's event name and payload: 'PermissionRequest Bash',
    'Notification (Claude needs your permission)', ..."""
    parts = [event] if isinstance(event, str) and event else []
    if isinstance(payload, dict):
        if isinstance(tool := payload.get("tool_name"), str):
            parts.append(tool)
        if isinstance(message := payload.get("message"), str):
            parts.append(f"({message})")
    return " ".join(parts)[:200]
