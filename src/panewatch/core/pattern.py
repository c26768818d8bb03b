r"""Rule patterns: written in Python's `re` syntax, matched by RE2 in time linear in the text.

Why (issue 10, defect 3). `re` backtracks: a user rule `^(a+)+$` takes 2^n steps on a row of n `a`s
ending in `!`, and the daemon froze (SIGTERM too: its handler runs on the frozen loop). Measured
with `scripts/bench-patterns` on this shared 2-core machine (compare within a row):

    one search of `a` x n + `!`   re                regex, timeout=1 s          RE2 (this module)
    ^(a+)+$                       0.9 s at n=24     0.19 s at n=5000            8 µs at n=5000
    (a|a)*$                       3.7 s at n=24     timed out (1.0 s)           8 µs
    (\w+\s?)+$                    4.2 s at n=24     timed out (1.6 s wall)      8 µs
    the Claude manifest's 14 searches on a real screen, µs (blocked / idle, every rule tried):
                                  8.1 / 12.4        6.4 / 3.6; with timeout=    11.4 / 10.1
                                                    32.8 / 28.2                 (re2 wrapper: 35.7 / 22.1)

The options weighed:
* `re` + a static check at load time: no check catches every blow-up (`(.*a){12}$` nests no star),
  and a match cannot be bounded at run time (a signal can break into sre, but only on the main
  thread, and pytest-timeout and users own SIGALRM).
* the `regex` module with `timeout=`: bounded, but it reads the process CPU clock twice per search
  (two syscalls: +1.8 µs a search here, 4x the cost of the Claude rules), its timeout is CPU time
  (1 s took 1.6 s of wall time on a busy machine), and it does not mean what `re` means: its `\w`
  takes combining marks (`Flambe\u0301ing`), its `\s` drops U+001C-U+001F, `(?i)i` misses U+0131;
  its `\b` follows. The corpus shows none of these, a screen can.
* RE2 (google-re2): linear by construction; no backtracking pattern costs more than a plain one.
  Its `\w \s \d \b` are ASCII and it has no lookaround or backreferences, so the translation below;
  its Python wrapper re-encodes the text on every call (3x the cost), so we call the binding on the
  region's bytes, encoded once per classification.

How. The pattern is parsed by `re`'s own parser (the syntax and its error messages stay `re`'s),
and the tree is written out as RE2 syntax with `re`'s meaning spelled out: `\w` = `[\pL\pN_]`,
`\d` = `\p{Nd}` (RE2's Unicode is newer than Python 3.11's 14.0: they differ only on code points
Python leaves unassigned), `\s` = the 29 characters of `str.isspace`, `.` without `\n`, `^`/`$` per
line, and a case-insensitive character as the exact set `re` accepts (`(?i)i` is I, i, U+0130,
U+0131). Every shipped pattern gives `re`'s span on every screen of the golden corpus (22,100
region texts x 61 patterns) and on random screen text (tests/test_pattern.py). What RE2 cannot run
with that meaning is refused when the manifest loads, naming file, rule and pattern: lookaround,
backreferences, conditionals, atomic groups, possessive repeats, `\b`/`\B` (RE2's would match
`proceed\b` before `é`), repeats above 1000, programs above MAX_PROGRAM instructions.

Wrapped text. An agent breaks its own lines at the pane's width (Ink, ratatui): at 40 columns Codex
draws 'Would you like to run the following' and 'command?' on two rows, indented, and a boxed dialog
puts `│` edges between them. A pattern compiled with `wraps=True` (a rule's `wraps = true`) reads each
single space between two words as "a space, or a row break with the blanks and box edges around it"
(`WRAP_SPACE`), so the words match however the rows fall; indentation (spaces next to spaces or an
anchor), line anchors and everything else keep their meaning.

Bounds. Linear is not free: a pattern built to defeat RE2's DFA falls back to its NFA, whose cost
is text x program: `(?:.{1,100}){10}c` (9,000 instructions) took 5-20 ms on a 120x32 to 200x50
screen of random a/b, and 9-21 s on the largest screen Screen allows (1000x500). So region text is
capped (classify.MAX_REGION_CHARS), programs and their DFA memory are capped (MAX_PROGRAM,
MAX_MEMORY per pattern, shared by all panes), and a rule whose searches
cost one pane more than classify.RULE_BUDGET is quarantined on that pane: that price is paid once
per pane and manifest version, and the pane's verdicts name the rule (classify.Quarantine).
"""

from __future__ import annotations

import functools
import importlib
import re
from typing import Any

from re2 import _re2  # the binding itself: the `re2` wrapper re-encodes the text on every call

from panewatch.errors import PanewatchError

_parser: Any = importlib.import_module("re._parser")  # re's own parser: no stub, stable since 3.11
_sre: Any = importlib.import_module("_sre")  # the case mapping `re` uses

MAX_PROGRAM = 20_000  # RE2 instructions; the largest shipped pattern needs 2,740 (two \w classes)
MAX_REPEAT = 1000  # RE2's own limit on {m,n}
# Per pattern: its program plus the DFA states its searches build, shared by every pane. RE2's
# default, kept on purpose: at 2 MiB a DFA-hostile pattern fell back to the NFA at once (239 ms
# instead of 12 ms on a 200x50 screen). Past the budget the DFA starts over, then RE2 uses its NFA.
MAX_MEMORY = 8 << 20

_IGNORECASE, _MULTILINE, _DOTALL, _ASCII = re.IGNORECASE, re.MULTILINE, re.DOTALL, re.ASCII
_WRAPS = 1 << 30  # our own flag, beside re's: literal spaces match a row break (see "Wrapped text")
# A space between two words of a wrapped line: blanks, or one row break with the blanks and vertical box
# edges ('│', '┃', '║') the agent draws at the end of the row and the start of the next.
WRAP_SPACE = r"(?: |[ \t│┃║]*\n[ \t│┃║]*)"
_TYPE_FLAGS = re.ASCII | re.LOCALE | re.UNICODE
_UNANCHORED = _re2.RE2.Anchor.UNANCHORED
# What str.isspace accepts (and so `\s`); RE2's \s is ASCII.
_SPACE = ((0x09, 0x0D), (0x1C, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
          (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))
# Characters outside ASCII that `re` matches for an ASCII letter under IGNORECASE (İ→i, K→k) or
# treats as the same letter (ı, ſ); tests/test_pattern.py recomputes this from Python's tables.
_ASCII_CASE_EXTRAS = "\u0130\u0131\u017f\u212a"  # İ ı ſ and the Kelvin sign
_REFUSED = {
    "ASSERT": "lookahead/lookbehind", "ASSERT_NOT": "negative lookahead/lookbehind",
    "GROUPREF": "a backreference", "GROUPREF_EXISTS": "a conditional group", "ATOMIC_GROUP": "an atomic group",
    "POSSESSIVE_REPEAT": "a possessive repeat",
}


class PatternError(PanewatchError, ValueError):
    """A pattern that `re` accepts but RE2 cannot run with the same meaning (the reason is the message)."""


class Pattern:
    """A compiled rule pattern. `search(data)` takes UTF-8 bytes and gives the leftmost match's byte span."""

    __slots__ = ("_match", "pattern", "program_size", "re2", "wraps")

    def __init__(self, pattern: str, flags: int = _MULTILINE, *, wraps: bool = False) -> None:
        self.pattern = pattern
        self.wraps = wraps
        try:
            parsed = _parser.parse(pattern, flags)  # what re.compile does first: the same syntax and errors
            self.re2 = _emit(parsed, parsed.state.flags | flags | (_WRAPS if wraps else 0))
        except re.error as exc:
            raise PatternError(f"does not compile: {exc}") from exc
        except PatternError as exc:
            raise PatternError(f"is not supported: {exc}") from None
        except RecursionError:  # re's parser (and re.compile) recurse once per nested group
            raise PatternError("is nested too deeply") from None
        options = _re2.RE2.Options()
        options.log_errors = False  # RE2 would print parse errors on stderr; we raise them instead
        options.never_capture = True  # only the whole match is used: cheaper to run
        options.max_mem = MAX_MEMORY
        regexp = _re2.RE2(self.re2.encode("utf-8"), options)
        if not regexp.ok():
            raise PatternError(f"is not supported: RE2 cannot compile it ({regexp.error().decode('utf-8', 'replace')})")
        self.program_size: int = regexp.ProgramSize()
        if self.program_size > MAX_PROGRAM:
            raise PatternError(f"is too large: {self.program_size} RE2 instructions (at most {MAX_PROGRAM})")
        self._match = regexp.Match

    def search(self, data: bytes) -> tuple[int, int] | None:
        span: tuple[int, int] = self._match(_UNANCHORED, data, 0, len(data))[0]
        return None if span[0] < 0 else span

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"


_COUNTS = {(0, _parser.MAXREPEAT): "*", (1, _parser.MAXREPEAT): "+", (0, 1): "?"}


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str, wraps: bool = False) -> Pattern:
    """`Pattern(pattern)`, cached as `re.compile` caches: a reload compiles every manifest again, and
    a cached RE2 keeps the DFA states its searches built (a fresh one pays for them again)."""
    return Pattern(pattern, wraps=wraps)


def _combine(flags: int, add: int, delete: int) -> int:
    if add & _TYPE_FLAGS:
        flags &= ~_TYPE_FLAGS
    return (flags | add) & ~delete


def _emit(items: Any, flags: int) -> str:
    items = list(items)
    if not flags & _WRAPS:
        return "".join(_emit_one(op.name, av, flags) for op, av in items)
    return "".join(WRAP_SPACE if _between_words(items, i) else _emit_one(op.name, av, flags)
                   for i, (op, av) in enumerate(items))


def _between_words(items: list[Any], i: int) -> bool:
    """A single literal space with something other than a space or an anchor on both sides: a space between
    words, where an agent may break the line. Spaces next to spaces or anchors (indentation: `^  x`) keep
    their exact meaning."""
    def word(j: int) -> bool:
        if not 0 <= j < len(items):
            return False
        op, av = items[j]
        return op.name != "AT" and not (op.name == "LITERAL" and av == 0x20)
    op, av = items[i]
    return op.name == "LITERAL" and av == 0x20 and word(i - 1) and word(i + 1)


def _emit_one(op: str, av: Any, flags: int) -> str:
    if op in ("LITERAL", "NOT_LITERAL"):
        return _charset([("LITERAL", av)], flags, negate=op == "NOT_LITERAL")
    if op == "IN":
        negate = bool(av) and av[0][0].name == "NEGATE"
        return _charset([(o.name, a) for o, a in av[negate:]], flags, negate)
    if op == "ANY":
        return r"(?s:.)" if flags & _DOTALL else r"[^\n]"
    if op == "BRANCH":
        return "(?:" + "|".join(_emit(branch, flags) for branch in av[1]) + ")"
    if op == "SUBPATTERN":
        _group, add, delete, body = av
        return "(?:" + _emit(body, _combine(flags, add, delete)) + ")"
    if op in ("MAX_REPEAT", "MIN_REPEAT"):
        low, high, body = av
        unbounded = high == _parser.MAXREPEAT
        if low > MAX_REPEAT or (not unbounded and high > MAX_REPEAT):
            raise PatternError(f"a repeat count above {MAX_REPEAT}")
        count = _COUNTS.get((low, high)) or (f"{{{low},}}" if unbounded else f"{{{low},{high}}}")
        return "(?:" + _emit(body, flags) + ")" + count + ("?" if op == "MIN_REPEAT" else "")
    if op == "AT":
        return _anchor(av.name, flags)
    if op in _REFUSED:
        raise PatternError(f"{_REFUSED[op]} (rules run on RE2, which matches in linear time and has none)")
    raise PatternError(op)


def _anchor(at: str, flags: int) -> str:
    if at == "AT_BEGINNING":
        return "(?m:^)" if flags & _MULTILINE else r"\A"
    if at == "AT_END" and flags & _MULTILINE:
        return "(?m:$)"
    if at == "AT_BEGINNING_STRING":
        return r"\A"
    if at == "AT_END_STRING":
        return r"\z"
    if at in ("AT_BOUNDARY", "AT_NON_BOUNDARY"):
        raise PatternError(r"\b or \B (RE2's word boundary is ASCII-only: 'proceed\b' would match before 'é'); "
                           r"match the neighbouring character instead, e.g. (?:[^\w\n]|$)")
    raise PatternError("`$` with multiline switched off")


def _charset(items: list[tuple[str, Any]], flags: int, negate: bool) -> str:
    """An RE2 class with the members `re` gives these IN items (LITERAL, RANGE, CATEGORY) under `flags`."""
    chars: set[int] = set()
    ranges: list[tuple[int, int]] = []
    classes: list[str] = []
    negated_word = False
    for op, av in items:
        if op == "LITERAL":
            chars.add(av)
        elif op == "RANGE":
            ranges.append(av)
        elif op == "CATEGORY":
            text, alternation = _category(av.name, flags)
            if alternation:
                negated_word = True
            else:
                classes.append(text)
        else:
            raise PatternError(f"{op} in a character class")
    if flags & _IGNORECASE and (chars or ranges):
        chars, ranges = _case_closure(chars, ranges, flags), []
    body = "".join(_range(lo, hi) for lo, hi in _merge(chars, ranges)) + "".join(classes)
    if not negated_word:
        return ("[^" if negate else "[") + body + "]" if body else ("(?s:.)" if negate else "[^\\x00-\\x{10FFFF}]")
    if negate:  # [^\W…] is an intersection, which RE2 cannot write but for the letters idioms
        letters = {"": r"[\pL\pN_]", r"\p{Nd}": r"[\pL\p{Nl}\p{No}_]", r"_\p{Nd}": r"[\pL\p{Nl}\p{No}]",
                   "_": r"[\pL\pN]"}.get(body.replace(r"\x{5F}", "_"))
        if letters is None:
            raise PatternError(r"\W inside a negated class with members other than \d and _")
        return letters
    return r"(?:[^\pL\pN_]" + (f"|[{body}]" if body else "") + ")"


def _category(name: str, flags: int) -> tuple[str, str]:
    """(RE2 class body, "" or "word" when it is \\W, which only an alternation can write)."""
    kind = name.removeprefix("CATEGORY_")
    negated, kind = kind.startswith("NOT_"), kind.removeprefix("NOT_")
    if flags & _ASCII:
        members = {"DIGIT": [(0x30, 0x39)], "SPACE": [(0x09, 0x0D), (0x20, 0x20)],
                   "WORD": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]}[kind]
        return "".join(_range(lo, hi) for lo, hi in (_complement(members) if negated else members)), ""
    if kind == "SPACE":
        return "".join(_range(lo, hi) for lo, hi in (_complement(list(_SPACE)) if negated else _SPACE)), ""
    if kind == "DIGIT":
        return (r"\P{Nd}" if negated else r"\p{Nd}"), ""
    return ("", "word") if negated else (r"\pL\pN_", "")


def _case_closure(chars: set[int], ranges: list[tuple[int, int]], flags: int) -> set[int]:
    """Every character that `re` matches, under IGNORECASE, for this set: candidates, then `re` decides."""
    members = set(chars)
    for lo, hi in ranges:
        if hi - lo > 0xFFFF:
            raise PatternError("a case-insensitive range this large; drop (?i) or narrow it")
        members.update(range(lo, hi + 1))
    candidates = set(members)
    for code in members:
        ch = chr(code)
        candidates.update(ord(c) for c in (ch.lower(), ch.upper()) if len(c) == 1)
    if flags & _ASCII:
        candidates = {c for c in candidates if c < 0x80} | members
    elif all(c < 0x80 for c in members):
        candidates.update(map(ord, _ASCII_CASE_EXTRAS))
    else:
        relatives = _case_relatives()
        candidates.update(r for c in members for r in relatives.get(c, ()))
    oracle = re.compile("[" + "".join(_py_range(lo, hi) for lo, hi in _merge(members, [])) + "]",
                        flags & (_IGNORECASE | _ASCII))
    return {c for c in candidates if not 0xD800 <= c < 0xE000 and oracle.fullmatch(chr(c))}


@functools.cache
def _case_relatives() -> dict[int, frozenset[int]]:
    """Each cased character → all characters linked to it by simple lower/upper case mappings (ϖ, π
    and Π are one family). Built once (~0.1 s), and only for (?i) patterns with non-ASCII letters."""
    family: dict[int, set[int]] = {}
    for code in range(0x110000):
        if 0xD800 <= code < 0xE000 or not _sre.unicode_iscased(code):
            continue
        upper = chr(code).upper()
        for other in (_sre.unicode_tolower(code), ord(upper) if len(upper) == 1 else code):
            if other != code:
                merged = family.get(code, {code}) | family.get(other, {other})
                for member in merged:
                    family[member] = merged
    return {code: frozenset(members) for code, members in family.items()}


def _merge(chars: set[int], ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    spans = sorted([(c, c) for c in chars] + list(ranges))
    out: list[tuple[int, int]] = []
    for lo, hi in spans:
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _complement(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, start = [], 0
    for lo, hi in _merge(set(), spans):
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= 0x10FFFF:
        out.append((start, 0x10FFFF))
    return out


def _range(lo: int, hi: int) -> str:
    """RE2 class members for lo..hi; surrogates never occur in UTF-8 text, so they are left out."""
    if lo < 0xD800 <= hi or lo <= 0xDFFF < hi:
        return "".join(_range(a, b) for a, b in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)) if a <= b)
    if 0xD800 <= lo <= 0xDFFF:
        raise PatternError("surrogate code points cannot be matched")
    return f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}"


def _py_range(lo: int, hi: int) -> str:
    return re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
