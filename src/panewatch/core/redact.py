"""Secrets out of text before it leaves the process: the ONE list of secret shapes.

Used for the daemon's log (`redact`: the secret becomes `<redacted>`) and for a wrong-state report
(`mask`, `mask_stream`: every character of a secret becomes `*`, so the text keeps its length and a
terminal stream keeps its layout: a replay of a masked cast draws the same screen, minus the secret).

What counts as a secret (each shape names the part hidden; the prefix that says what it was stays):

* known token shapes: OpenAI / Anthropic `sk-…`, GitHub `ghp_…`/`gho_…`/`github_pat_…`, Slack
  `xox?-…`, AWS `AKIA…`, Google `AIza…`, JWTs `eyJ….….…`, a PEM private key's header;
* `Bearer …` / `Basic …` credentials;
* env-like assignments whose name says secret (`API_KEY=…`, `password: …`, `"token": "…"`);
* panewatch's own: the board's login tokens and cookies (`pwb_…`, `pwc_…`), anything passed as
  `token=` (percent-encoded or not), the board cookie's value;
* any other long high-entropy run (32+ characters of base64/url-safe alphabet, mixing upper and
  lower case and digits, over 4 bits of entropy per character): an unknown vendor's key.

Over-masking is the safe side (a masked git hash costs nothing); a secret the agent drew in pieces
(its own line wrapping, a cursor move inside it) may be caught only in part.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence

MASK = "*"
_V = r"[!#-&(-~]"  # a value character: printable ASCII but quotes (masks keep the display width)

# Each shape's group "s" is what is hidden.
SHAPES: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"(?:^|(?<=[^A-Za-z0-9_-]))sk-(?P<s>[A-Za-z0-9_-]{16,})",
    r"\b(?:gh[pousr]_|github_pat_)(?P<s>[A-Za-z0-9_]{20,})",
    r"\bxox[abprs]-(?P<s>[A-Za-z0-9-]{10,})",
    r"\bAKIA(?P<s>[0-9A-Z]{16})\b",
    r"\bAIza(?P<s>[0-9A-Za-z_-]{30,})",
    r"\beyJ(?P<s>[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
    r"-----BEGIN (?P<s>[A-Z ]*PRIVATE KEY)-----",
    r"(?i)\b(?:bearer|basic)[ \t]+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)",
    # A name ending in a secret-ish word (or with a suffix after `_`: TOKEN_FILE), `=` or `:`, a value.
    r"(?i)\b[A-Za-z0-9_.-]{0,40}?(?:api[_-]?key|[_-]key|secret|token|passw(?:or)?d|passphrase|credentials?"
    r"|auth(?:orization)?|cookie|private[_-]?key|access[_-]?key)(?:_[A-Za-z0-9_]{0,40})?[\"']?[ \t]*[=:]"
    r"[ \t]*[\"']?(?!(?i:bearer|basic)\b)(?P<s>" + _V + r"{4,})",
    # panewatch's own (the board's log): login tokens, cookies, anything passed as token=, the cookie.
    r"pw[bc]_(?P<s>[A-Za-z0-9_-]+)",
    r"(?i)(?:t|%74)(?:o|%6f)(?:k|%6b)(?:e|%65)(?:n|%6e)\s*(?:=|%3d)\s*(?P<s>[^\s&;'\"\\]+)",
    r"(?i)panewatch_board_\d*\s*=\s*(?P<s>[^\s;'\"\\]+)",
))
_RUN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")
ENTROPY_BITS = 4.0


def _high_entropy(run: str) -> bool:
    if sum(c.isdigit() for c in run) < 2 or sum(c.isupper() for c in run) < 2 or sum(c.islower() for c in run) < 2:
        return False
    counts = Counter(run)
    bits = -sum(n / len(run) * math.log2(n / len(run)) for n in counts.values())
    return bits > ENTROPY_BITS


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where the secrets in `text` are: sorted, merged (start, end) spans."""
    spans = [m.span("s") for shape in SHAPES for m in shape.finditer(text) if m.group("s")]
    spans += [m.span() for m in _RUN.finditer(text) if _high_entropy(m.group())]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def redact(text: str) -> str:
    """`text` with every secret replaced by `<redacted>` (for logs: the length need not be kept)."""
    out, last = [], 0
    for start, end in secret_spans(text):
        out += [text[last:start], "<redacted>"]
        last = end
    return "".join(out) + text[last:]


def mask(text: str) -> str:
    """`text` with every character of every secret replaced by MASK: same length, same layout."""
    chars = list(text)
    for start, end in secret_spans(text):
        chars[start:end] = MASK * (end - start)
    return "".join(chars)


# A terminal stream: escape sequences are not text. SGR (colours) joins the text around it (a
# highlighted `KEY=` then `value`); any other control or sequence separates it (a cursor move
# between two words); an OSC's payload (a title, a hyperlink) is text of its own.
_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*(?P<final>[@-~])|(?P<osc>\x1b\][0-9]*;?)(?P<body>[^\x07\x1b]*)"
                       r"(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?|[\x00-\x1f\x7f]")


def _text_view(stream: str) -> tuple[str, list[int]]:
    """The stream's text with sequences taken out, and for each of its characters the position in
    the stream (-1: a separator standing for a sequence)."""
    view: list[str] = []
    where: list[int] = []
    last = 0

    def text(start: int, end: int) -> None:
        view.append(stream[start:end])
        where.extend(range(start, end))

    def separator() -> None:
        view.append("\n")
        where.append(-1)

    for m in _SEQUENCE.finditer(stream):
        text(last, m.start())
        last = m.end()
        if m.group("final") == "m":
            continue
        separator()
        if m.group("osc") is not None:
            text(m.start("body"), m.end("body"))
            separator()
    text(last, len(stream))
    return "".join(view), where


def mask_stream(chunks: Sequence[str]) -> list[str]:
    """Terminal output in chunks (a cast's output events), secrets masked as `mask` does, each chunk
    its own length: a secret split between two chunks, or by a colour change, is found whole."""
    stream = "".join(chunks)
    view, where = _text_view(stream)
    spans = secret_spans(view)
    if not spans:
        return list(chunks)
    chars = list(stream)
    for start, end in spans:
        for i in range(start, end):
            if where[i] >= 0:
                chars[where[i]] = MASK
    masked = "".join(chars)
    return list(_split(masked, (len(c) for c in chunks)))


def _split(text: str, lengths: Iterator[int] | Sequence[int]) -> Iterator[str]:
    at = 0
    for n in lengths:
        yield text[at:at + n]
        at += n
