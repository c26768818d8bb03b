"""Rule patterns on RE2 mean what they mean under `re`: same spans on the whole golden corpus and on
random screen text, exact Unicode classes and case folding, clear refusals for what RE2 lacks."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panewatch.core.classify import region_rows
from panewatch.core.manifest import ManifestError, load_all, load_manifest_text
from panewatch.core.pattern import _ASCII_CASE_EXTRAS, MAX_PROGRAM, Pattern, PatternError
from panewatch.core.screen import Screen
from panewatch.golden.cases import find_cases

MANIFESTS = load_all().list()
SHIPPED = sorted({p.pattern for m in MANIFESTS for p in (*m.detect_title, *m.detect_screen)}
                 | {p.pattern for m in MANIFESTS for r in m.rules for p in (*r.any, *r.all, *r.none)})
# Shipped patterns that used \b, which RE2 cannot run with re's meaning, spell the boundary out; the
# reference for them is what shipped before, under re. (Claude's and Codex's question patterns were two
# more; they have changed since, and mean under re what they mean under RE2.)
BEFORE = {
    r"(?i)^\s*opencode[^\w\n].*v\d": r"(?i)^\s*opencode\b.*v\d",
}
PAIRS = [(re.compile(BEFORE.get(p, p), re.MULTILINE), Pattern(p)) for p in SHIPPED]
# Every character Python's Unicode database assigns (RE2's tables are newer: see pattern.py).
ASSIGNED = "".join(chr(c) for c in range(0x110000)
                   if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn")


def byte_span(text: str, match: re.Match[str] | None) -> tuple[int, int] | None:
    if match is None:
        return None
    return len(text[: match.start()].encode()), len(text[: match.end()].encode())


def agree(text: str) -> list[str]:
    data = text.encode()
    return [f"{ref.pattern!r}: re {byte_span(text, ref.search(text))} RE2 {ours.search(data)}"
            for ref, ours in PAIRS if byte_span(text, ref.search(text)) != ours.search(data)]


def test_the_rewritten_patterns_are_the_shipped_ones() -> None:
    assert set(BEFORE) <= set(SHIPPED)
    assert not any("\\b" in p for p in SHIPPED)


# ~12 s of CPU (22 000 corpus texts × 61 patterns, under re and RE2): the default 120 s of wall time is not
# enough on a shared 2-core machine with two CPU burners and other suites (seen: timed out at 120 s).
@pytest.mark.timeout(600)
def test_every_shipped_pattern_agrees_with_re_on_every_corpus_screen() -> None:
    regions = {r.region for m in MANIFESTS for r in m.rules if r.region.kind != "title"}
    texts: set[str] = set()
    for case in find_cases():
        cast = case.cast()
        screen = Screen(cast.header.width, cast.header.height)
        for event in cast.events:
            if event.kind == "o":
                screen.feed(event.data.encode("utf-8", "surrogateescape"))
            elif event.kind == "r" and event.size is not None:
                screen.resize(*event.size)
            else:
                continue
            snapshot = screen.snapshot()
            texts.add(snapshot.title)
            texts.update("\n".join(region_rows(snapshot, region)[1]) for region in regions)
    assert len(texts) > 10_000  # every distinct region text of every screen the corpus shows
    disagreements = [d for text in sorted(texts) for d in agree(text)]
    assert disagreements == []


# Pieces of what the rules look for, with the characters where re and a naive RE2 translation part:
# non-ASCII letters next to words (\b, \w), combining marks, Unicode spaces (\s), İ/ı/K/ſ (?i).
PIECES = ["Do you want to proceed", "Do you want to make this edit", "Would you like to grant", "Allow command",
          "opencode", " v1", "?", "? for shortcuts", "esc to interrupt", "Esc to cancel · Tab to amend", "❯ 1. Yes",
          "  2. No", "› 1. ", "✶ Flambéing…", "* Thinking…", "Enter to select · ↑/↓ to navigate", "Exit plan mode?",
          "(Y)es/(N)o [Yes]: ", "Waiting for", "İnterrupt", "ıNTERRUPT", "ESC TO ıNTERRUPT", "Kelvin \u212a", "ſtop",
          "\u0301", "é", "ß", "中", "٣", "_", "\u00a0", "\x1c", "\u2003", "\t", " ", "\n", "\n\n", "─" * 10, "│ ",
          "● 1. ", "✦ Working", "⏸ plan mode on", "Claude Code", "✳ Claude Code", "⠋ ", "◐ ",
          "[ ! ] Action Required | "]
ODD_SPACE = st.sampled_from(["\x1c", "\x1f", "\x85", "\xa0", "\u2003", "\u3000", "\x0b", "\u200b"])
SCREEN_TEXT = st.lists(st.one_of(st.sampled_from(PIECES), ODD_SPACE,
                                 st.text(st.characters(exclude_categories=["Cs", "Cn"]), max_size=4)),
                       max_size=16).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SCREEN_TEXT)
def test_shipped_patterns_agree_with_re_on_random_screen_text(text: str) -> None:
    assert agree(text) == []


@pytest.mark.parametrize("pattern", [r"\w", r"\W", r"\s", r"\S", r"\d", r"\D", r"[\w ]", r"[^\w\n]", r"[^\W\d_]",
                                     r"[\S\n]", r"(?a)\w", r"(?a)[^\s]", r"(?i)i", r"(?i)[a-z]", r"(?i)k", r"(?i)[^s]",
                                     r"(?i)é", r"(?i)[α-ω]", r"(?i)µ", r"(?i)[\wé]", r"(?s).", ".", r"[^\n]"])
def test_single_characters_match_exactly_as_under_re(pattern: str) -> None:
    ours, ref = Pattern(pattern), re.compile(pattern, re.MULTILINE)
    for ch in ASSIGNED[::7] + "\n\x1c\x1f\x85\xa0\u0130\u0131\u017f\u212aµμΜkKsSiI\u0301éÉ_٣":
        expected = ref.fullmatch(ch) is not None
        assert (ours.search(ch.encode()) is not None) == expected, (pattern, hex(ord(ch)))


def test_the_ascii_case_extras_are_what_re_folds() -> None:
    folded = set(re.findall(r"(?i)[a-z]", ASSIGNED))
    assert {c for c in folded if ord(c) > 0x7F} == set(_ASCII_CASE_EXTRAS)


def test_anchors_and_empty_matches() -> None:
    for pattern, text in [(r"^", "a\n"), (r"$", "a\nb"), (r"^$", "a\n\nb"), (r"\Aa", "a"), (r"b\Z", "ab\n"),
                          (r"b\Z", "ab"), (r"^\s*$", "x\n  \n"), (r"(?:x|)", "y"), (r"a{0}", "a"), (r"a*?b", "aab"),
                          (r"(?:ab){2,3}?", "abababab"), (r"\s*$", "x  \n\n")]:
        ref = re.compile(pattern, re.MULTILINE)
        assert Pattern(pattern).search(text.encode()) == byte_span(text, ref.search(text)), (pattern, text)


@pytest.mark.parametrize(("pattern", "reason"), [
    (r"(?=x)y", "lookahead"), (r"(?<!x)y", "lookahead/lookbehind"), (r"(a)\1", "backreference"),
    (r"(?P<a>x)(?(a)y|z)", "conditional"), (r"(?>a+)b", "atomic"), (r"a++", "possessive"),
    (r"\bword", r"\b or \B"), (r"a\B", r"\b or \B"), (r"a{1001}", "above 1000"),
    (r"(?-m:a$)", "multiline switched off"),
    (r"[^\Wx]", r"\W inside a negated class"), (r"\ud800", "surrogate"), (r"(unclosed", "does not compile"),
    (r"(?:[\w\s]{1,200}x){4}", "RE2 cannot compile it"), ("(" * 500 + "a" + ")" * 500, "nested too deeply"),
])
def test_what_re2_cannot_run_is_refused_with_the_reason(pattern: str, reason: str) -> None:
    with pytest.raises(PatternError, match=re.escape(reason)):
        Pattern(pattern)


def test_programs_are_capped() -> None:
    with pytest.raises(PatternError, match=f"at most {MAX_PROGRAM}"):
        Pattern(r"(?:\w\w\w\w\w){30}")
    assert max(p.program_size for _, p in PAIRS) < MAX_PROGRAM / 5


def test_a_refused_pattern_names_file_rule_and_pattern() -> None:
    text = ("[agent]\nid = 'toy'\n[[rules]]\nid = 'yes-word'\nstate = 'blocked'\nnote = 'x'\n"
            "any = ['\\bYes\\b']\n")
    with pytest.raises(ManifestError) as info:
        load_manifest_text(text, "toy.toml")
    [problem] = info.value.problems
    assert str(info.value).startswith("toy.toml: ")
    assert problem.startswith("rule #1 'yes-word': `any` pattern '\\\\bYes\\\\b' is not supported: \\b or \\B")


# A wrapping pattern's meaning under `re`: each space between two words is a space or one row break with the
# blanks and box edges around it; indentation (spaces beside a space or an anchor) stays exact.
WRAPS = [(r"^\s*Would you like to run the following command\?", "^\\s*Would" + r"(?: |[ \t│┃║]*\n[ \t│┃║]*)you"
          + r"(?: |[ \t│┃║]*\n[ \t│┃║]*)like" + r"(?: |[ \t│┃║]*\n[ \t│┃║]*)to" + r"(?: |[ \t│┃║]*\n[ \t│┃║]*)run"
          + r"(?: |[ \t│┃║]*\n[ \t│┃║]*)the" + r"(?: |[ \t│┃║]*\n[ \t│┃║]*)following"
          + r"(?: |[ \t│┃║]*\n[ \t│┃║]*)command\?"),
         (r"^  [⠋⠙] \S+ \(esc to cancel\)", r"^  [⠋⠙](?: |[ \t│┃║]*\n[ \t│┃║]*)\S+(?: |[ \t│┃║]*\n[ \t│┃║]*)"
          r"\(esc(?: |[ \t│┃║]*\n[ \t│┃║]*)to(?: |[ \t│┃║]*\n[ \t│┃║]*)cancel\)")]
WRAP_TEXT = st.lists(st.sampled_from(["Would", "you", "like", "to", "run", "the", "following", "command?", "  ",
                                      " ", "\n", "\n  ", " │\n│ ", "⠋", "Thinking", "(esc", "cancel)", "x"]),
                     max_size=24).map("".join)


@settings(max_examples=300, deadline=None)
@given(WRAP_TEXT)
def test_wrapping_patterns_mean_their_spelled_out_re(text: str) -> None:
    for pattern, spelled in WRAPS:
        ours, ref = Pattern(pattern, wraps=True), re.compile(spelled, re.MULTILINE)
        assert ours.search(text.encode()) == byte_span(text, ref.search(text)), (pattern, text)


def test_a_wrapping_pattern_keeps_indentation_and_anchors_exact() -> None:
    spinner = Pattern(r"^  [⠋⠙] \S", wraps=True)
    assert spinner.search("  ⠋ Doing".encode()) == (0, 7)
    assert spinner.search("    ⠋ Doing".encode()) is None  # four columns in: a reply quoting it
    assert spinner.search("\n  ⠋ Doing".encode()) is not None and spinner.search("x\n ⠋ a".encode()) is None
    question = Pattern(r"^Do you want to proceed\?", wraps=True)
    assert question.search(b"Do you want to\n  proceed?") is not None
    assert question.search(b"Do you want to\n\nproceed?") is None  # a blank row between: not one line
