"""Parse a blocked screen into its question and options, so an answer can name an option.

    Claude Code   ❯ 1. Yes / 2. Yes, and always allow … / 3. No          keys: the digits
    Codex CLI     › 1. Yes, proceed (y) / 2. … (p) / 3. No, and … (esc)  keys: y, p, ESC
    Gemini CLI    │ ● 1. Allow once / 2. Allow for this session / 3. No, suggest changes (esc) │
    Aider         Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:           keys: y⏎, n⏎, d⏎ (one row)
    OpenCode      ┃ Allow once   Allow always   Reject      ⇆ select  enter confirm  keys: →… then ⏎ (one row)

How it reads a screen (pure, visible rows only):
  * options: the numbered list 1, 2, 3 … (markers ❯ › ● stripped, box borders │ removed; up to
    three other rows — descriptions, a rule — may sit between two options). The first list that
    starts below the verdict's row, else the last one on screen (a dialog sits at the bottom;
    numbered lists in the transcript sit above it);
  * the dialog block: from the options up to the nearest full-width rule (`─`, a box top `╭─`)
    or three blank rows; the question is the verdict's row if it is in the block and ends with '?',
    else the first row of the block ending with '?' (Codex puts details such as "Reason: …?"
    below its question), else the row just above the options (none if there are no options either);
  * key: a single-letter hint in parentheses at the end of the label ("(y)"), ESC for "(esc)",
    otherwise the option's digit (what Claude and Gemini accept);
  * no numbered list: a question on one row with lettered options (Aider), else an option row — the
    labels side by side, separated by runs of spaces, on a row of the dialog at or below the verdict's
    row, up to the first key hint ("⇆ select", "enter confirm", "ctrl+f …"), with at least one allow
    and one reject label. Its keys are arrows from the selected option (a marker ❯ › > ● ▶ before the
    label, or [brackets] round it) to the chosen one, then Enter; a label's own "(y)" hint wins. When no
    option shows a marker (OpenCode draws the selection as a colour, which a text snapshot lacks), the
    keys assume the first option (the one such a row opens on) and the prompt says so
    (`selection_seen` False, with the row and each label's column): `read_selection` then finds the
    selected label from the row's cell colours (the one label drawn unlike the row), and an answer
    that needs the selection is refused while it is not seen (runtime/guard.py);
  * kind: allow_once / allow_always / reject / other, from the label's wording.

The fingerprint (16 hex digits of sha256) covers the whole dialog block — question, options and
the details the user approves (the command, the diff, the file) — with whitespace normalised,
rules, selection markers and spinner glyphs removed. So it is stable across redraws and cursor
moves but differs for another command behind the same question. The agent and the window title
are not part of it: callers that did not see the verdict (a board, a notification) must compute
the same fingerprint from the same screen.
"""

# ruff: noqa: RUF002 - the docstring quotes the agents' own marker glyphs (❯ › ●) on purpose

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from panewatch.core.classify import Verdict
from panewatch.core.screen import CellStyle, Snapshot

ESC = "\x1b"
_OPTION = re.compile(r"^(?P<marker>[❯›>●▶►→]\s*)?(?P<num>\d{1,2})[.)]\s+(?P<label>\S.*?)\s*$")
_KEY_HINT = re.compile(r"\s*\((?P<key>[a-zA-Z]|esc)\)$")
_MAJOR_RULE = re.compile(r"^\s*[╭┌]?[─━═▔▄▀]{8,}[╮┐]?\s*$")
_ANY_RULE = re.compile(r"^[─━═╌╍┄┅┈┉▔▄▀╭╮╰╯┌┐└┘\s]+$")
_SPINNER = re.compile(r"[\u2800-\u28FF\u25D0-\u25D3]")
# A line REPL's question on one row (Aider): the options are the letters in parentheses, typed with Enter.
_INLINE = re.compile(r"^(?P<question>.*?)\s*(?P<options>\([A-Z]\)[^\[]*?)\s*\[(?P<default>[^\]]+)\]:\s*\S*$")
_INLINE_OPTION = re.compile(r"\((?P<letter>[A-Z])\)(?P<rest>[^/]*)")
# An option row (OpenCode): labels separated by runs of spaces, then the dialog's key hints.
_CELLS = re.compile(r"\S+(?: \S+)*")
_HINT_CELL = re.compile(r"^(?:(?:ctrl|alt|shift|cmd|meta|option|opt)[+-]\S+|enter|return|esc|escape|tab|space|"
                        r"[⇆⇅↑↓←→⏎↵][⇆⇅↑↓←→⏎↵/]*)(?:\s|$)", re.IGNORECASE)
_ROW_MARKER = re.compile(r"^[❯›>●▶►→]\s*")
_BRACKETS = re.compile(r"^\[\s*(?P<label>[^\]]*?)\s*\]$|^<\s*(?P<angled>[^>]*?)\s*>$")
_ROW_LABEL_MAX = 40  # characters: an option label, not a sentence
RIGHT, LEFT = "\x1b[C", "\x1b[D"
_ARROW_KEYS = re.compile(r"(?:\x1b\[[CD])*\r")  # an option row's keys: arrows from the selection, then Enter
_MAX_GAP = 3  # non-option rows allowed between two options
_MAX_BLOCK = 30  # rows scanned above the options for the dialog's start

_REJECT = re.compile(r"^(?:no|reject|deny|decline|cancel|don'?t|do not|skip)\b")
_ALLOW = re.compile(r"^(?:yes|allow|approve|accept|proceed|always|run|continue)\b")
_ALWAYS = re.compile(r"\balways\b|don'?t ask again|do not ask again|for (?:this|the) session|auto[- ]?mode|"
                     r"accept edits|auto-?approve|auto-?accept|allow all|future sessions")


@dataclass(frozen=True)
class Option:
    number: int
    label: str
    kind: str  # allow_once | allow_always | reject | other
    key: str  # what to type to choose it
    selected: bool = False  # under the cursor marker right now (not part of the fingerprint)


@dataclass(frozen=True)
class Prompt:
    question: str
    options: list[Option]
    fingerprint: str
    body: str = ""  # the dialog's other text (tool, command, reason), whitespace-normalised
    # An option row whose selection the text does not show: its keys assume the first option until
    # `read_selection` saw the selected label in the row's colours. (row, each label's first column)
    selection_seen: bool = True
    choice_row: int | None = None
    choice_cols: tuple[int, ...] = ()

    def needs_selection(self, option: Option) -> bool:
        """Whether typing `option`'s key relies on a selection not seen on screen."""
        return not self.selection_seen and _ARROW_KEYS.fullmatch(option.key) is not None

    def option(self, choice: int | str) -> Option | None:
        """An option by number, by kind ('allow_once', 'reject', …), by key, or by label (any case)."""
        if isinstance(choice, int):
            return next((o for o in self.options if o.number == choice), None)
        text = choice.strip()
        if text.isdigit():
            return self.option(int(text))
        for field in ("kind", "key", "label"):
            for option in self.options:
                value = getattr(option, field)
                if value == text or (field == "label" and value.casefold() == text.casefold()):
                    return option
        return None

    def text(self) -> str:
        """The question and its options, one per line (messages, notifications)."""
        return "\n".join([self.question, *(f"{o.number}. {o.label}" for o in self.options)]).strip()


_SCROLLBAR = re.compile(r"\s[█▐▕┃]$")  # a scrollbar's thumb in the last column (Qwen Code, long history)


def _unbox(row: str) -> str:
    """The row without a surrounding │ … │ (or ┃, OpenCode's left edge) border, a scrollbar thumb and
    outer whitespace."""
    text = _SCROLLBAR.sub("", row.rstrip()).strip()
    while text.startswith(("│", "┃")) or text.endswith("│"):  # nested boxes too (Gemini's command box)
        text = text.removeprefix("│").removeprefix("┃").removesuffix("│").strip()
    return text


def _kind(label: str) -> str:
    text = label.casefold()
    if _REJECT.match(text):
        return "reject"
    if _ALLOW.match(text):
        return "allow_always" if _ALWAYS.search(text) and "ask each time" not in text else "allow_once"
    return "other"


def _option_runs(rows: list[str]) -> list[list[tuple[int, re.Match[str]]]]:
    """Every numbered list 1, 2, … on the screen, as (row index, match) lists."""
    found = [(i, m) for i, row in enumerate(rows) if (m := _OPTION.match(_unbox(row)))]
    runs: list[list[tuple[int, re.Match[str]]]] = []
    for k, (row, match) in enumerate(found):
        if int(match["num"]) != 1:
            continue
        run = [(row, match)]
        for nxt_row, nxt in found[k + 1 :]:
            if int(nxt["num"]) != len(run) + 1 or nxt_row - run[-1][0] > _MAX_GAP + 1:
                break
            run.append((nxt_row, nxt))
        runs.append(run)
    return runs


def _make_option(match: re.Match[str]) -> Option:
    number, label = int(match["num"]), match["label"]
    key = str(number)
    if hint := _KEY_HINT.search(label):
        key = ESC if hint["key"].lower() == "esc" else hint["key"]
        label = label[: hint.start()]
    return Option(number, label, _kind(label), key, selected=match["marker"] is not None)


def _block_start(rows: list[str], first_option: int) -> int:
    """First row of the dialog that ends at `first_option`: below a rule or three blank rows
    (Codex leaves two blank rows inside its dialog and has no rule above it)."""
    blanks = 0
    for i in range(first_option - 1, max(-1, first_option - 1 - _MAX_BLOCK), -1):
        if _MAJOR_RULE.match(rows[i]):
            return i + 1
        blanks = blanks + 1 if not rows[i].strip() else 0
        if blanks == 3:
            return i + 3
    return max(0, first_option - _MAX_BLOCK)


def _normalise(text: str) -> str:
    return " ".join(_SPINNER.sub(" ", text).split())


def parse_prompt(snapshot: Snapshot, verdict: Verdict | None = None) -> Prompt:
    """The prompt on a (blocked) screen. Never raises; unknown layouts give empty options."""
    rows = [row.rstrip() for row in snapshot.rows]
    vrow = verdict.row if verdict is not None else None
    runs = _option_runs(rows)
    if not runs and (inline := _inline_prompt(rows, vrow)) is not None:
        return inline
    if not runs and (one_row := _row_prompt(rows, vrow)) is not None:
        return one_row
    below = [run for run in runs if vrow is not None and run[0][0] > vrow]
    run = below[0] if below else (runs[-1] if runs else [])
    options = [_make_option(m) for _, m in run]
    if run:
        first, last = run[0][0], run[-1][0]
    else:  # no options: the dialog is whatever ends at the last non-blank row
        last = max((i for i, row in enumerate(rows) if row.strip()), default=-1)
        first = last + 1
    start = _block_start(rows, first) if first > 0 else 0

    question_row: int | None = None  # no options, no '?': the dialog is not drawn yet
    asks = [i for i in range(start, first) if _unbox(rows[i]).endswith("?")]
    if vrow is not None and vrow in asks:
        question_row = vrow
    elif asks:
        question_row = asks[0]
    elif run:  # a dialog without a '?': its heading is the row right above the options
        question_row = next((i for i in range(first - 1, start - 1, -1) if _unbox(rows[i])), None)
    question = _normalise(_unbox(rows[question_row])) if question_row is not None else ""

    option_rows = dict(run)
    body_parts: list[str] = []
    canonical: list[str] = []
    for i in range(start, last + 1):
        text = _unbox(rows[i])
        if not text or _ANY_RULE.match(text):
            continue
        if (match := option_rows.get(i)) is not None:
            canonical.append(f"{match['num']}. {match['label']}")  # without the cursor marker
            continue
        canonical.append(text)
        if i != question_row:
            body_parts.append(text)
    digest = hashlib.sha256(_normalise(" ".join(canonical)).encode("utf-8", "surrogatepass")).hexdigest()
    return Prompt(question, options, digest[:16], _normalise(" ".join(body_parts)))


def _inline_prompt(rows: list[str], vrow: int | None) -> Prompt | None:
    """A one-row question with lettered options ('… (Y)es/(N)o [Yes]:'): on the verdict's row, else on the
    last non-blank row. The rows above it up to a rule are its details (Aider prints the command there)."""
    at = vrow if vrow is not None else max((i for i, row in enumerate(rows) if row.strip()), default=-1)
    match = _INLINE.match(rows[at].strip()) if 0 <= at < len(rows) else None
    if match is None:
        return None
    options = []
    for number, opt in enumerate(_INLINE_OPTION.finditer(match["options"]), start=1):
        label = (opt["letter"] + opt["rest"]).strip()
        options.append(Option(number, label, _kind(label), opt["letter"].lower() + "\r",
                              selected=label.casefold() == match["default"].casefold()))
    start = _block_start(rows, at)
    body = [_unbox(rows[i]) for i in range(start, at) if _unbox(rows[i]) and not _ANY_RULE.match(_unbox(rows[i]))]
    question = _normalise(match["question"])
    canonical = [*body, question, *(f"{o.number}. {o.label}" for o in options)]
    digest = hashlib.sha256(_normalise(" ".join(canonical)).encode("utf-8", "surrogatepass")).hexdigest()
    return Prompt(question, options, digest[:16], _normalise(" ".join(body)))


def _row_options(labels: list[str], chosen: int, marked: list[bool]) -> list[Option]:
    """An option row's options, their keys arrows from option `chosen` (a label's own "(y)" hint wins)."""
    options = []
    for n, label in enumerate(labels):
        key = _arrows(chosen, n)
        if hint := _KEY_HINT.search(label):
            key = ESC if hint["key"].lower() == "esc" else hint["key"]
            label = label[: hint.start()]
        options.append(Option(n + 1, label, _kind(label), key, selected=marked[n]))
    return options


def _arrows(selected: int, target: int) -> str:
    """The keys that move an option row's selection from option `selected` to `target` and choose it."""
    return (RIGHT * (target - selected) if target > selected else LEFT * (selected - target)) + "\r"


def _width(text: str) -> int:
    """Terminal columns `text` takes (wide East Asian characters two, combining marks and selectors none)."""
    return sum(0 if unicodedata.combining(c) or c in "\u200d\ufe0e\ufe0f" else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _label_columns(row: str, labels: list[str]) -> tuple[int, ...] | None:
    columns, at = [], 0
    for label in labels:
        found = row.find(label, at)
        if found < 0:
            return None
        columns.append(_width(row[:found]))
        at = found + len(label)
    return tuple(columns)


def read_selection(prompt: Prompt, styles: Sequence[CellStyle]) -> Prompt:
    """An option row's prompt with the selection read from its row's cell looks (Screen.row_styles): the one
    label whose background (or inverse) differs from the row's own, else, with three or more labels, the one
    whose colour or weight differs from all the others. Unchanged (selection not seen) when neither holds."""
    if prompt.selection_seen or not prompt.choice_cols or not styles:
        return prompt
    if max(prompt.choice_cols) >= len(styles):
        return prompt
    looks = [styles[c] for c in prompt.choice_cols]
    row_back = Counter((st[0], st[2]) for st in styles).most_common(1)[0][0]
    chosen = [n for n, st in enumerate(looks) if (st[0], st[2]) != row_back]
    if len(chosen) != 1 and len(looks) >= 3:
        fronts = Counter((st[1], st[3]) for st in looks)
        chosen = [n for n, st in enumerate(looks) if fronts[(st[1], st[3])] == 1] if len(fronts) == 2 else []
    if len(chosen) != 1:
        return prompt
    at = chosen[0]
    options = [replace(o, key=_arrows(at, n) if _ARROW_KEYS.fullmatch(o.key) else o.key, selected=n == at)
               for n, o in enumerate(prompt.options)]
    return replace(prompt, options=options, selection_seen=True)


def _row_cells(text: str) -> list[tuple[str, bool]] | None:
    """An option row's (label, selected) cells, or None: two or more short labels separated by runs of
    spaces before the first key hint, one of them allowing and one refusing."""
    cells: list[tuple[str, bool]] = []
    for match in _CELLS.finditer(text):
        cell = match[0]
        if _HINT_CELL.match(cell):
            break  # the dialog's key hints follow the options ('⇆ select  enter confirm')
        marked = _ROW_MARKER.match(cell)
        bracketed = _BRACKETS.match(cell)
        label = (bracketed["label"] if bracketed["label"] is not None else bracketed["angled"]) if bracketed else \
            cell[marked.end():] if marked else cell
        if not label or len(label) > _ROW_LABEL_MAX or label.endswith(("?", ".", ":")):
            return None
        cells.append((label, bool(marked or bracketed)))
    kinds = {_kind(label) for label, _ in cells}
    if len(cells) < 2 or "reject" not in kinds or not kinds & {"allow_once", "allow_always"}:
        return None
    return cells


def _row_prompt(rows: list[str], vrow: int | None) -> Prompt | None:
    """A dialog whose options sit side by side on one row (OpenCode): the first such row at or below the
    verdict's row (else the last one on screen). Its question: the first row of the block ending with
    '?', else the verdict's row, else the row just above the options."""
    order = range(vrow, len(rows)) if vrow is not None and 0 <= vrow < len(rows) else range(len(rows) - 1, -1, -1)
    found = next(((i, cells) for i in order if (cells := _row_cells(_unbox(rows[i]))) is not None), None)
    if found is None:
        return None
    at, cells = found
    seen = any(marked for _, marked in cells)
    chosen = next((n for n, (_, marked) in enumerate(cells) if marked), 0)
    options = _row_options([label for label, _ in cells], chosen, marked=[m for _, m in cells])
    start = _block_start(rows, at)
    texts = {i: _unbox(rows[i]) for i in range(start, at)}
    asks = [i for i, text in texts.items() if text.endswith("?")]
    heading = next((i for i in range(at - 1, start - 1, -1) if texts[i]), None)
    question_row = asks[0] if asks else vrow if vrow is not None and vrow in texts and texts[vrow] else heading
    question = _normalise(texts[question_row]) if question_row is not None else ""
    body = [text for i, text in texts.items() if text and i != question_row and not _ANY_RULE.match(text)]
    canonical = [*body, question, *(f"{o.number}. {o.label}" for o in options)]
    digest = hashlib.sha256(_normalise(" ".join(canonical)).encode("utf-8", "surrogatepass")).hexdigest()
    if seen:
        return Prompt(question, options, digest[:16], _normalise(" ".join(body)))
    columns = _label_columns(rows[at], [label for label, _ in cells])
    return Prompt(question, options, digest[:16], _normalise(" ".join(body)), selection_seen=False, choice_row=at,
                  choice_cols=columns or ())
