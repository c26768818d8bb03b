from __future__ import annotations

import pytest

from panewatch.core.classify import classify, classify_unidentified, explain, identify, region_rows
from panewatch.core.manifest import Region, load_all, load_manifest_text
from panewatch.core.screen import Screen, Snapshot

MANIFESTS = load_all()
CLAUDE = MANIFESTS.manifests["claude"]
RULE = "─" * 60


def snap(text: str, title: str = "", height: int = 12) -> Snapshot:
    return Snapshot.from_text(text.strip("\n"), title=title, height=height)


def test_published_example_is_blocked(example: bytes) -> None:
    screen = Screen(120, 32)
    screen.feed(example)
    verdict = classify(screen.snapshot(), CLAUDE)
    assert (verdict.state, verdict.rule, verdict.row) == ("blocked", "permission-question", 1)
    assert verdict.matched == "Do you want to proceed?"


def test_dialog_below_the_input_rule_is_blocked() -> None:
    screen = snap(f"""
● I'll use the Bash tool now.
{RULE}
 Bash command
 Do you want to proceed?
 ❯ 1. Yes
   2. No
 Esc to cancel · Tab to amend
""")
    assert classify(screen, CLAUDE).state == "blocked"


def test_quoted_dialog_in_prose_above_the_input_box_stays_idle() -> None:
    screen = snap(f"""
● This is what the dialog looks like:
   Do you want to proceed?
   ❯ 1. Yes
     2. No
   Esc to cancel · Tab to amend
  Would you like me to add a regression test?
{RULE}
❯
{RULE}
  ⏸ manual mode on · ? for shortcuts
""")
    verdict = classify(screen, CLAUDE)
    assert (verdict.state, verdict.rule) == ("idle", "shortcuts-footer")


def test_working_footer_and_title() -> None:
    footer = snap(f"✶ Flambéing…\n{RULE}\n❯\n{RULE}\n  ⏸ manual mode on · esc to interrupt")
    assert classify(footer, CLAUDE).rule == "esc-to-interrupt"
    title = snap(f"{RULE}\n❯\n{RULE}", title="◐ Claude Code")
    verdict = classify(title, CLAUDE)
    assert (verdict.state, verdict.region, verdict.row) == ("working", "title", None)


def test_no_match_means_idle_with_no_rule() -> None:
    verdict = classify(snap("nothing to see"), CLAUDE)
    assert (verdict.state, verdict.rule) == ("idle", None)


@pytest.mark.parametrize(("spec", "expected"), [
    ("screen", (0, ["a", "", "b", "", ""])),
    ("bottom:2", (1, ["", "b"])),
    ("top:1", (0, ["a"])),
])
def test_regions(spec: str, expected: tuple[int, list[str]]) -> None:
    snapshot = Snapshot(rows=("a", "", "b", "", ""))
    assert region_rows(snapshot, Region.parse(spec)) == expected


def test_below_rule_uses_the_last_rule_and_box_edges() -> None:
    snapshot = Snapshot(rows=("x", RULE, "y", "  ╭" + "─" * 20 + "╮", "z"))
    assert region_rows(snapshot, Region.parse("below_rule")) == (4, ["z"])


def test_first_match_wins_and_none_excludes() -> None:
    manifest = load_manifest_text("""
[agent]
id = "toy"
[[rules]]
id = "ask"
state = "blocked"
all = ['^Proceed\\?', '^1\\. Yes']
none = ['quoted']
note = "n"
[[rules]]
id = "any-yes"
state = "working"
any = ['Yes']
note = "n"
""", "toy.toml")
    assert classify(snap("Proceed?\n1. Yes"), manifest).rule == "ask"
    assert classify(snap("Proceed?\n1. Yes\nquoted"), manifest).rule == "any-yes"
    _verdict, trace = explain(snap("Proceed?\n1. Yes\nquoted"), manifest)
    assert [t.matched for t in trace] == [False, True] and "excluded by none" in trace[0].why


def test_identify_from_title_and_screen() -> None:
    manifests = MANIFESTS.list()
    assert (m := identify(snap("", title="✳ Claude Code"), manifests)) and m.id == "claude"
    assert (m := identify(snap("  >_ OpenAI Codex (v0.171.0)"), manifests)) and m.id == "codex"
    assert (m := identify(snap("", title="✋  Action Required (ws)"), manifests)) and m.id == "gemini"
    assert identify(snap("$ ls"), manifests) is None


def test_unidentified_screen_still_surfaces_a_dialog(example: bytes) -> None:
    screen = Screen(120, 32)
    screen.feed(example)
    verdict = classify_unidentified(screen.snapshot(), MANIFESTS.list())
    assert verdict.state == "blocked" and verdict.rule == "claude/permission-question" and verdict.agent == ""


def test_cursor_region_is_what_is_left_of_the_cursor() -> None:
    """Aider's question is live only with the cursor right after it: a reply streaming the same words leaves
    the cursor at the row's far end (seen live: rich writes the row, then moves on)."""
    aider = load_all().get("aider")
    assert aider is not None
    question = "Should I add a regression test? (Y)es/(N)o [Yes]:"
    waiting = Snapshot(rows=("> explain", question, ""), cursor=(len(question) + 1, 1), width=120)
    streamed = Snapshot(rows=("> explain", question, ""), cursor=(119, 1), width=120)
    typed = Snapshot(rows=("> explain", question + " n", ""), cursor=(len(question) + 2, 1), width=120)
    assert classify(waiting, aider).state == "blocked"
    assert classify(typed, aider).state == "blocked"  # a key typed, not yet sent
    assert classify(streamed, aider).rule == "not-at-the-prompt"
    prompt = Snapshot(rows=("Tokens: 1k sent", "> fix it", ""), cursor=(8, 1), width=120)
    sent = Snapshot(rows=("Tokens: 1k sent", "> fix it", ""), cursor=(0, 2), width=120)
    assert classify(prompt, aider).rule == "prompt" and classify(sent, aider).rule == "not-at-the-prompt"


def test_rules_read_logical_lines_and_name_the_first_row() -> None:
    """A question the terminal wrapped at 40 columns is one line to the rules (Aider's, soft-wrapped by the
    terminal): the `cursor` region holds the whole line left of the cursor, a screen region the line whole,
    and the verdict names the row the line starts on."""
    aider = MANIFESTS.manifests["aider"]
    screen = Screen(40, 8)
    screen.feed(b"Aider v0.86.2\r\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: ")
    verdict = classify(screen.snapshot(), aider)
    assert (verdict.state, verdict.rule, verdict.row) == ("blocked", "yes-no-question", 1)
    screen.feed(b"y\r\n")  # answered: the cursor left the question, it stays in the history
    assert classify(screen.snapshot(), aider).state != "blocked"


def test_a_line_editor_breaking_its_own_line_at_the_edge_is_read_on_into_the_next_row() -> None:
    """prompt_toolkit (Aider) draws a long question itself, cut at the pane's edge inside a word ('[Y' then
    'es]: ' with no terminal wrap): the cursor's line takes the rows above it that reach the last column,
    never a horizontal rule (full width too: Aider draws one above its prompt)."""
    aider = MANIFESTS.manifests["aider"]
    question = "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: "
    rows = ["touch /tmp/x", question[:50], question[50:]]
    blocked = Snapshot(rows=(*rows, "", ""), cursor=(len(question) - 50, 2), width=50)
    verdict = classify(blocked, aider)
    assert (verdict.state, verdict.row) == ("blocked", 1)
    prompt = Snapshot(rows=("x" * 10, "─" * 50, "> ", "", ""), cursor=(2, 2), width=50)
    assert classify(prompt, aider).rule == "prompt"
    cut = Snapshot(rows=("> " + "y" * 48, "> ab", "", ""), cursor=(4, 1), width=50)  # typed text, continued
    assert classify(cut, aider).rule == "prompt"


def test_a_rule_that_wraps_reads_its_words_across_the_rows_a_narrow_pane_breaks_them_over() -> None:
    """Codex at 40 columns draws its approval question over two rows, and its key hint too: the rules with
    `wraps = true` see the words however the rows fall; the question alone, without its options, is not a
    dialog."""
    codex = MANIFESTS.manifests["codex"]
    narrow = snap("""
  Would you like to run the following
  command?

  $ touch /tmp/x

› 1. Yes, proceed (y)
  2. No, and tell Codex what to do
     differently (esc)

  Press enter to confirm or esc to
  cancel""")
    verdict = classify(narrow, codex)
    assert (verdict.state, verdict.rule) == ("blocked", "confirm-footer")
    trace = explain(snap("\n".join(narrow.rows[:-3])), codex)[1]
    assert next(t for t in trace if t.rule.id == "approval-question").matched
