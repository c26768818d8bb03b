"""Every row of combine()'s priority table, and the staleness rules, on hand-made timelines."""

from __future__ import annotations

import json

import pytest

from panewatch.core.cast import read_cast
from panewatch.core.classify import Verdict, classify
from panewatch.core.combine import (
    REPORT_MAX_AGE,
    REPORT_SETTLE,
    PaneState,
    Report,
    combine,
    report_is_fresh,
    screen_key,
)
from panewatch.core.manifest import load_all
from panewatch.core.screen import Screen, Snapshot
from panewatch.golden.cases import bundled_root

BLOCKED = Verdict("blocked", "permission-question", matched="Do you want to proceed?", row=25, agent="claude")
WORKING = Verdict("working", "title-spinner", agent="claude")
IDLE = Verdict("idle", "shortcuts-footer", agent="claude")
NO_RULE = Verdict("idle", None, agent="claude")


def hook(state: str, t: float, detail: str = "") -> Report:
    return Report(state, t, "hook", detail)


def test_screen_alone_passes_through() -> None:
    assert combine(WORKING, 0.0, None, None, 5.0) == PaneState("working", "screen", "title-spinner", "")
    assert combine(IDLE, 0.0, None, True, 5.0).state == "idle"
    assert combine(NO_RULE, 0.0, None, True, 5.0) == PaneState("idle", "screen", None, "")
    assert combine(BLOCKED, 0.0, None, True, 5.0) == PaneState(
        "blocked", "screen", "permission-question", "Do you want to proceed?")


def test_user_grants_permission_no_hook_fires_pane_leaves_blocked_with_the_screen() -> None:
    # Real full_bash timing: PreToolUse 9.01, prompt drawn 9.11, Notification 15.12, answered 17.71.
    pre = hook("working", 9.01, "PreToolUse Bash")
    assert combine(WORKING, 8.9, pre, True, 9.05).state == "working"
    assert combine(BLOCKED, 9.11, pre, True, 9.2).state == "blocked"
    notification = hook("blocked", 15.12, "Notification permission_prompt")
    assert combine(BLOCKED, 9.11, notification, True, 16.0).source == "screen"
    # "1" pressed: the dialog is erased, the spinner runs; no hook fires for the grant.
    after = combine(WORKING, 17.71, notification, True, 17.72)
    assert after == PaneState("working", "screen", "title-spinner", "")


def test_hook_blocked_while_screen_says_working_holds_until_the_screen_changes() -> None:
    # A dialog the manifest does not know: the screen's rules still say working.
    note = hook("blocked", 20.0, "Notification permission_prompt")
    assert combine(WORKING, 14.0, note, True, 20.0) == PaneState(
        "blocked", "hook", None, "Notification permission_prompt")
    assert combine(WORKING, 14.0, note, True, 20.0 + 3600.0).state == "blocked"  # waits for hours
    assert combine(WORKING, 22.0, note, True, 22.0).state == "working"  # screen moved


def test_permission_request_hook_is_blocked_before_the_dialog_is_drawn() -> None:
    request = hook("blocked", 9.05, "PermissionRequest Bash")
    assert combine(WORKING, 9.0, request, True, 9.06).state == "blocked"
    # Once drawn, the screen itself says blocked.
    assert combine(BLOCKED, 9.11, request, True, 9.2).source == "screen"


def test_blocked_and_done_reports_outlast_the_redraws_right_after_them() -> None:
    # Gemini CLI: Notification(ToolPermission) 9.32, a redraw 9.36, the dialog drawn 9.71, answered 10.86.
    note = hook("blocked", 9.32, "Notification (Tool Confirm Shell Command requires execution)")
    assert combine(WORKING, 9.36, note, True, 9.36).state == "blocked"
    settled = 9.32 + REPORT_SETTLE["blocked"]
    assert combine(WORKING, 9.36, note, True, settled + 0.01).state == "working"  # then the screen speaks
    assert combine(WORKING, 9.0, note, True, settled + 3600).state == "blocked"  # unless it never moved
    # AfterAgent 13.41, the last redraw 13.49: idle throughout.
    done = hook("done", 13.41, "AfterAgent")
    assert combine(WORKING, 13.49, done, True, 13.49) == PaneState("idle", "hook", None, "AfterAgent")
    # Once the screen has shown the dialog, the settling is over: an answer ends the report at once.
    assert combine(WORKING, 9.9, note, True, 9.9, screen_agreed=True).state == "working"
    # 'working' settles at once: a turn that fails right away shows the screen's idle.
    assert combine(IDLE, 5.1, hook("working", 5.0), True, 5.1).state == "idle"


def test_screen_blocked_beats_a_fresh_hook_working() -> None:
    fresh = hook("working", 30.0, "PostToolUse")
    assert combine(BLOCKED, 29.0, fresh, True, 30.0).state == "blocked"
    assert combine(BLOCKED, 29.0, Report("idle", 30.0, "acp"), None, 30.0).state == "blocked"


def test_newer_report_supersedes_older() -> None:
    # The caller keeps the latest report; combine speaks with whichever it is given.
    first = hook("blocked", 10.0, "PermissionRequest")
    second = hook("working", 10.5, "PostToolUse")
    assert combine(IDLE, 9.0, first, True, 10.6).state == "blocked"
    assert combine(IDLE, 9.0, second, True, 10.6) == PaneState("working", "hook", None, "PostToolUse")


def test_report_done_maps_to_idle_and_acp_keeps_its_source() -> None:
    assert combine(WORKING, 1.0, hook("done", 2.0, "Stop"), True, 2.0) == PaneState("idle", "hook", None, "Stop")
    assert combine(IDLE, 1.0, Report("blocked", 2.0, "acp", "session/request_permission"), True, 2.5) == PaneState(
        "blocked", "acp", None, "session/request_permission")


def test_report_at_the_same_instant_as_the_screen_change_still_counts() -> None:
    assert combine(IDLE, 5.0, hook("working", 5.0), True, 5.0).state == "working"


def test_report_older_than_the_last_screen_change_is_ignored() -> None:
    assert combine(IDLE, 5.0, hook("working", 4.9), True, 6.0) == PaneState("idle", "screen", "shortcuts-footer", "")


def test_working_report_expires_on_a_frozen_screen_blocked_and_idle_do_not() -> None:
    limit = REPORT_MAX_AGE["working"]
    assert limit is not None
    working = hook("working", 100.0)
    assert combine(IDLE, 50.0, working, True, 100.0 + limit).state == "working"
    assert combine(IDLE, 50.0, working, True, 100.0 + limit + 1).state == "idle"
    for state in ("blocked", "idle", "done"):
        assert report_is_fresh(hook(state, 100.0), 50.0, 1e9)


def test_shell_in_foreground_clears_stale_blocked() -> None:
    # The agent exited with its dialog still drawn; the shell prompt is below it.
    assert combine(BLOCKED, 10.0, None, False, 11.0) == PaneState(
        "exited", "process", None, "shell back in the foreground")


@pytest.mark.parametrize("state", ["blocked", "working", "idle", "done"])
def test_shell_in_foreground_beats_reports_from_the_gone_agent(state: str) -> None:
    assert combine(WORKING, 1.0, hook(state, 2.0), False, 2.0).state == "exited"


def test_unknown_process_leaves_the_screen_and_reports_in_charge() -> None:
    assert combine(BLOCKED, 1.0, None, None, 2.0).state == "blocked"
    assert combine(IDLE, 1.0, hook("working", 2.0), None, 2.0).state == "working"
    assert combine(IDLE, 1.0, None, True, 2.0).state == "idle"


def test_unknown_report_state_is_ignored() -> None:
    assert combine(IDLE, 1.0, hook("exploded", 2.0), True, 2.0).source == "screen"


# -- against a real capture: Claude Code 2.1.332 full_bash, its recorded hook times -------------

HOOK_STATES = {"UserPromptSubmit": "working", "PreToolUse": "working", "Notification": "blocked", "Stop": "done"}


def _timeline(use_key: bool, settled: bool = False) -> list[tuple[float, str, str]]:
    """(t, combined state, source) after each output event, as a live loop would compute them,
    with a manifest that does NOT know the dialog (its screen verdict says working). `settled`: as if
    each report's settling time were over (a dialog waiting for minutes, not 2.5 s as here)."""
    case = bundled_root() / "claude-code" / "2.1.332" / "full_bash"
    truth = json.loads((case / "truth.json").read_text())
    hooks = sorted((h["t"], HOOK_STATES[h["hook"]]) for h in truth["hooks"])
    manifest = load_all().get("claude")
    assert manifest is not None
    cast = read_cast(case / "session.cast")
    screen = Screen(cast.header.width, cast.header.height)
    last: object = None
    changed_at = 0.0
    out = []
    for event in cast.events:
        if event.kind != "o":
            continue
        screen.feed(event.data.encode("utf-8", "surrogateescape"))
        snap = screen.snapshot()
        key: object = screen_key(snap) if use_key else snap
        if key != last:
            changed_at, last = event.t, key
        verdict = classify(snap, manifest)
        if verdict.state == "blocked":
            verdict = Verdict("working", "unknown-dialog")
        past = [Report(state, t, "hook") for t, state in hooks if t <= event.t]
        state = combine(verdict, changed_at, past[-1] if past else None, True, event.t, screen_agreed=settled)
        out.append((event.t, state.state, state.source))
    return out


def test_hook_blocked_survives_claudes_blinking_bullet_until_the_answer() -> None:
    notification, answered = 15.1191, 17.62  # truth.json hooks; the driver typed "1" at 17.62
    timeline = _timeline(use_key=True, settled=True)
    waiting = [(t, s) for t, s, _ in timeline if notification <= t < answered]
    assert len(waiting) >= 3  # the bullet blinked meanwhile
    assert all(s == "blocked" for _, s in waiting)
    # Cast time, not wall time: the dialog is erased 0.09 s after the key, and blocked ends there.
    cleared = next(t for t, s, _ in timeline if t > answered and s != "blocked")
    assert cleared - answered < 0.2
    assert all(s != "blocked" for t, s, _ in timeline if t >= cleared)


def test_without_screen_key_the_blink_would_drop_the_hook_report() -> None:
    timeline = _timeline(use_key=False, settled=True)
    waiting = [s for t, s, _ in timeline if 15.1191 <= t < 17.62]
    assert "working" in waiting


def test_screen_key_ignores_animation_not_content() -> None:
    a = Snapshot(rows=("● Creating the marker file", "✶ Flambéing… (5s · ↓ 20 tokens)", "⠋ Thinking"))
    b = Snapshot(rows=("  Creating the marker file", "✻ Flambéing… (5s · ↓ 20 tokens)", "⠙ Thinking"),
                 title="[ ! ] Action Required")
    c = Snapshot(rows=("  Creating the marker file", "✻ Flambéing… (6s · ↓ 20 tokens)", "⠙ Thinking"))
    assert screen_key(a) == screen_key(b) != screen_key(c)
