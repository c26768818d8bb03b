"""Blocked screens of the real Claude Code, Codex, Gemini CLI, Qwen Code, Aider and OpenCode captures parse into
question + options."""

from __future__ import annotations

import dataclasses
from functools import cache

import pytest

from panewatch.core.cast import read_cast
from panewatch.core.classify import Verdict, classify
from panewatch.core.manifest import load_all
from panewatch.core.prompt import ESC, LEFT, RIGHT, Prompt, parse_prompt
from panewatch.core.screen import Screen, Snapshot
from panewatch.golden.cases import bundled_root

AGENTS = {"claude-code": "claude", "codex": "codex", "gemini-cli": "gemini", "qwen-code": "qwen", "aider": "aider",
          "opencode": "opencode"}


@cache
def blocked_frames(case: str) -> tuple[tuple[Snapshot, Verdict], ...]:
    """Every distinct screen the capture shows while the classifier says blocked, in order."""
    manifest = load_all().get(AGENTS[case.split("/")[0]])
    assert manifest is not None
    cast = read_cast(bundled_root() / case / "session.cast")
    screen = Screen(cast.header.width, cast.header.height)
    frames: list[tuple[Snapshot, Verdict]] = []
    for event in cast.events:
        if event.kind == "o":
            screen.feed(event.data.encode("utf-8", "surrogateescape"))
        elif event.kind == "r" and event.size:
            screen.resize(*event.size)
        else:
            continue
        snap = screen.snapshot()
        verdict = classify(snap, manifest)
        if verdict.state == "blocked" and (not frames or frames[-1][0] != snap):
            frames.append((snap, verdict))
    assert frames, case
    return tuple(frames)


def last_prompt(case: str) -> Prompt:
    snap, verdict = blocked_frames(case)[-1]
    return parse_prompt(snap, verdict)


def summary(prompt: Prompt) -> list[tuple[int, str, str, str]]:
    return [(o.number, o.label, o.kind, o.key) for o in prompt.options]


def test_claude_bash_permission() -> None:
    prompt = last_prompt("claude-code/2.1.332/full_bash")
    assert prompt.question == "Do you want to proceed?"
    assert summary(prompt) == [
        (1, "Yes", "allow_once", "1"),
        (2, "Yes, and always allow access to /tmp from this project", "allow_always", "2"),
        (3, "Yes, and switch to auto mode · auto mode handles these prompts for you", "allow_always", "3"),
        (4, "No", "reject", "4"),
    ]
    assert prompt.options[0].selected and not prompt.options[1].selected
    assert "touch /tmp/claude_lab_x" in prompt.body and "Bash command" in prompt.body


def test_claude_edit_and_plan_and_ask() -> None:
    edit = last_prompt("claude-code/2.1.332/edit")
    assert edit.question == "Do you want to make this edit to hello.py?"
    assert [o.kind for o in edit.options] == ["allow_once", "allow_always", "reject"]
    assert edit.options[1].key == "2"  # "(shift+tab)" in the label is not a one-key hint
    assert "+print('hello, world')" in edit.body

    plan = last_prompt("claude-code/2.1.332/plan")
    assert plan.question == "Exit plan mode?"
    assert summary(plan) == [(1, "Yes, and switch to default (ask each time) for this session", "allow_once", "1"),
                             (2, "No", "reject", "2")]

    ask = last_prompt("claude-code/2.1.332/ask")
    assert ask.question == "Which colour should the button be?"
    assert [(o.label, o.kind) for o in ask.options] == [("Red", "other"), ("Blue", "other"),
                                                         ("Type something.", "other"), ("Chat about this", "other")]


def test_codex_approval() -> None:
    prompt = last_prompt("codex/0.171.0/altscreen")
    assert prompt.question == "Would you like to run the following command?"
    assert summary(prompt) == [
        (1, "Yes, proceed", "allow_once", "y"),
        (2, "Yes, and don't ask again for commands that start with `touch /tmp/codex_mock_x`", "allow_always", "p"),
        (3, "No, and tell Codex what to do differently", "reject", ESC),
    ]
    assert "Reason: Create the marker file" in prompt.body and "$ touch /tmp/codex_mock_x" in prompt.body


def test_gemini_confirmation_in_a_box() -> None:
    prompt = last_prompt("gemini-cli/0.61.0/default")
    assert prompt.question == "Allow execution of [Shell]?"
    assert summary(prompt) == [(1, "Allow once", "allow_once", "1"), (2, "Allow for this session", "allow_always", "2"),
                               (3, "No, suggest changes", "reject", ESC)]
    assert "touch /tmp/gemini_mock_x" in prompt.body and "│" not in prompt.body


def test_qwen_confirmation_without_its_scrollbar() -> None:
    prompt = last_prompt("qwen-code/0.24.4/bash_120x32")
    assert prompt.question == "Allow execution of: 'touch'?"
    assert summary(prompt) == [(1, "Yes, allow once", "allow_once", "1"),
                               (2, "Always allow run 'touch *' commands in this project", "allow_always", "2"),
                               (3, "Always allow run 'touch *' commands for this user", "allow_always", "3"),
                               (4, "No, suggest changes", "reject", ESC)]
    # 80x24: the history overflows and a scrollbar thumb (█) takes the last column of the dialog's rows.
    edit = last_prompt("qwen-code/0.24.4/edit_80x24")
    assert edit.question == "Apply this change?"
    assert [(o.label, o.kind) for o in edit.options] == [("Yes, allow once", "allow_once"),
                                                         ("Yes, allow always", "allow_always"),
                                                         ("No, suggest changes", "reject")]


def test_aider_one_row_question_with_lettered_options() -> None:
    prompt = last_prompt("aider/0.86.2/bash_120x32")
    assert prompt.question == "Run shell command?"
    assert summary(prompt) == [(1, "Yes", "allow_once", "y\r"), (2, "No", "reject", "n\r"),
                               (3, "Don't ask again", "reject", "d\r")]
    assert prompt.options[0].selected and "touch /tmp/panewatch_mock_x" in prompt.body
    assert last_prompt("aider/0.86.2/edit_120x32").question == "Add file to the chat?"
    # Not blocked, nor a question: an answered one in the history does not parse from the prompt row.
    answered = Snapshot(rows=("Run shell command? (Y)es/(N)o [Yes]: y", "Running touch x", ">"), cursor=(2, 2))
    assert parse_prompt(answered).options == []


OPENCODE_OPTIONS = [(1, "Allow once", "allow_once", "\r"), (2, "Allow always", "allow_always", RIGHT + "\r"),
                    (3, "Reject", "reject", RIGHT * 2 + "\r")]


@pytest.mark.parametrize("size", ["120x32", "80x24", "200x50"])
def test_opencode_options_on_one_row(size: str) -> None:
    """'┃   Allow once   Allow always   Reject      ctrl+f fullscreen  ⇆ select  enter confirm': at 80x24 the
    hints follow the options after two spaces only, at 200x50 a sidebar shares the dialog's rows."""
    prompt = last_prompt(f"opencode/1.18.33/bash_{size}")
    assert prompt.question == "△ Permission required"
    assert summary(prompt) == OPENCODE_OPTIONS
    # The selection is a colour, not in the text: nothing is marked, the keys start from the first option.
    assert not any(o.selected for o in prompt.options)
    assert "$ touch /tmp/panewatch_mock_x" in prompt.body and "┃" not in prompt.body
    assert "enter confirm" not in prompt.body and "Allow once" not in prompt.body


def test_opencode_edit_write_and_two_dialogs_in_a_row() -> None:
    for case, detail in (("edit_120x32", "→ Edit hello.py"), ("write_120x32", "→ Edit new_file.txt")):
        prompts = [parse_prompt(s, v) for s, v in blocked_frames(f"opencode/1.18.33/{case}")]
        assert summary(prompts[0]) == OPENCODE_OPTIONS and detail in prompts[0].body
        full = [p for p in prompts if p.question == "△ Permission required"]
        assert len({p.fingerprint for p in full}) == 1  # stable across the dialog's redraws
    multi = {p.fingerprint: p for p in (parse_prompt(s, v) for s, v in blocked_frames("opencode/1.18.33/multi_120x32"))}
    assert len(multi) == 2  # the second command's dialog is another prompt
    assert all(summary(p) == OPENCODE_OPTIONS for p in multi.values())
    assert {p.body.split("$ ")[-1] for p in multi.values()} == {"touch /tmp/panewatch_mock_x_a",
                                                                  "touch /tmp/panewatch_mock_x_b"}


def _row_dialog(option_row: str) -> Prompt:
    text = "\n".join(["─" * 60, " Run this command?", "   rm -rf build/", "", option_row, ""])
    return parse_prompt(Snapshot.from_text(text, height=12))


def test_one_row_options_follow_the_selection_marker_and_own_hints() -> None:
    marked = _row_dialog("   Yes   › Yes, always   No, cancel        ←/→ move  enter select")
    assert marked.question == "Run this command?" and marked.body == "rm -rf build/"
    assert [(o.label, o.kind, o.key, o.selected) for o in marked.options] == [
        ("Yes", "allow_once", LEFT + "\r", False), ("Yes, always", "allow_always", "\r", True),
        ("No, cancel", "reject", RIGHT + "\r", False)]
    bracketed = _row_dialog("  [ Allow ]   Deny")
    assert [(o.label, o.key, o.selected) for o in bracketed.options] == [("Allow", "\r", True),
                                                                         ("Deny", RIGHT + "\r", False)]
    hinted = _row_dialog("  Yes (y)   No (n)   Esc to cancel")
    assert [(o.label, o.key) for o in hinted.options] == [("Yes", "y"), ("No", "n")]
    # The same fingerprint wherever the selection is.
    moved = _row_dialog("   › Yes   Yes, always   No, cancel        ←/→ move  enter select")
    assert moved.options[0].selected and moved.fingerprint == marked.fingerprint


def test_a_row_of_words_is_not_an_option_row() -> None:
    for row in ("  Build   Plan   General", "  Allow once   Allow always", "  Yes   No.  ",
                "  tab agents  ctrl+p commands", "  Do you allow this?   Yes   No"):
        assert _row_dialog(row).options == [], row


def test_the_verdict_row_is_optional() -> None:
    for case in ("claude-code/2.1.332/full_bash", "codex/0.171.0/altscreen", "gemini-cli/0.61.0/default"):
        snap, verdict = blocked_frames(case)[-1]
        assert parse_prompt(snap) == parse_prompt(snap, verdict)


@pytest.mark.parametrize("case", ["claude-code/2.1.332/full_bash", "claude-code/2.1.332/plan",
                                  "codex/0.171.0/altscreen", "gemini-cli/0.61.0/default"])
def test_fingerprint_is_stable_across_redraws_of_the_same_prompt(case: str) -> None:
    # Claude blinks the tool's bullet above the dialog; Codex flips its title: same prompt each time.
    prompts = [parse_prompt(s, v) for s, v in blocked_frames(case) if parse_prompt(s, v).options]
    assert len(prompts) >= 2
    assert len({p.fingerprint for p in prompts}) == 1


def test_fingerprint_ignores_the_cursor_marker_and_the_position_on_screen() -> None:
    snap, verdict = blocked_frames("claude-code/2.1.332/full_bash")[-1]
    rows = list(snap.rows)
    first = next(i for i, r in enumerate(rows) if "❯ 1. Yes" in r)
    rows[first] = rows[first].replace("❯ 1.", "  1.")
    rows[first + 1] = rows[first + 1].replace("  2.", "❯ 2.")
    moved = parse_prompt(dataclasses.replace(snap, rows=tuple(rows)))
    assert moved.options[1].selected and not moved.options[0].selected
    scrolled = parse_prompt(dataclasses.replace(snap, rows=(*snap.rows[3:], "", "", "")))
    original = parse_prompt(snap, verdict)
    assert moved.fingerprint == scrolled.fingerprint == original.fingerprint


def test_fingerprint_differs_for_another_prompt_or_another_command() -> None:
    prints = {last_prompt(c).fingerprint for c in ("claude-code/2.1.332/full_bash", "claude-code/2.1.332/edit",
                                                   "claude-code/2.1.332/plan", "claude-code/2.1.332/ask",
                                                   "codex/0.171.0/altscreen", "gemini-cli/0.61.0/default")}
    assert len(prints) == 6
    snap, _ = blocked_frames("claude-code/2.1.332/full_bash")[-1]
    other = tuple(r.replace("touch /tmp/claude_lab_x", "rm -rf ~/work") for r in snap.rows)
    changed = parse_prompt(dataclasses.replace(snap, rows=other))
    assert changed.question == "Do you want to proceed?"
    assert changed.fingerprint != parse_prompt(snap).fingerprint


def test_title_only_blocked_before_the_overlay_is_drawn_has_no_options() -> None:
    snap, verdict = blocked_frames("codex/0.171.0/altscreen")[0]
    assert verdict.rule == "title-action-required"
    prompt = parse_prompt(snap, verdict)
    assert (prompt.question, prompt.options) == ("", [])


def test_option_lookup_by_number_kind_key_and_label() -> None:
    prompt = last_prompt("codex/0.171.0/altscreen")

    def number(choice: int | str) -> int | None:
        option = prompt.option(choice)
        return option.number if option else None

    assert [number(x) for x in (2, "2", "allow_always", "p", "yes, proceed", "reject", ESC)] == [2, 2, 2, 2, 1, 3, 3]
    assert prompt.option(9) is None and prompt.option("maybe") is None
    assert prompt.text().splitlines()[0] == "Would you like to run the following command?"


def test_numbered_prose_above_a_dialog_is_not_taken_for_its_options() -> None:
    text = "\n".join([
        "● Here is the plan:", "  1. Read the file", "  2. Edit it", "", "─" * 60,
        " Do you want to proceed?", " ❯ 1. Yes", "   2. No", "", " Esc to cancel · Tab to amend"])
    prompt = parse_prompt(Snapshot.from_text(text, height=20))
    assert prompt.question == "Do you want to proceed?"
    assert [o.label for o in prompt.options] == ["Yes", "No"]
