"""Secrets out of text before it leaves the process: the ONE list of secret shapes.

Used for the daemon's log (`redact`: the secret becomes `<redacted>`) and for a wrong-state report
(`mask`: every character of a secret becomes `*`, so the text keeps its length and a terminal stream
keeps its layout: a replay of a masked cast draws the same screen, minus the secret). What a pane
showed is masked on its logical text, across wraps and cursor moves: core/masking.py.

What counts as a secret (each shape names the part hidden; the prefix that says what it was stays):

* known token shapes: OpenAI / Anthropic `sk-…`, GitHub `ghp_…`/`github_pat_…`, GitLab `glpat-…` (and
  its other `gl…-` tokens), Slack `xox?-…` and webhooks, AWS `AKIA…`, Google `AIza…`/`ya29.…`, Stripe
  `sk_live_…`, npm, PyPI, Hugging Face, SendGrid, DigitalOcean, Vault, Atlassian, Shopify, … and
  JWTs `eyJ….….…`; a PEM private key (its body);
* credentials in a command line or a header: `Authorization: <scheme> …` (any length), `Bearer …` /
  `Basic …`, a URL's password (`postgres://app:PASS@db`) or token user (`https://TOKEN@host`),
  `--password VALUE` / `--token=VALUE` and their kin, `mysql -pPASS`, `sshpass -p PASS`,
  `docker login -p PASS`, `curl -u user:PASS`, a `.netrc` line;
* env-like assignments whose name says secret (`API_KEY=…`, `DB_PASS=…`, `password: …`, `"token": "…"`);
* panewatch's own: the board's login tokens and cookies (`pwb_…`, `pwc_…`), anything passed as
  `token=` (percent-encoded or not), the board cookie's value;
* any other long high-entropy run (32+ characters of base64/url-safe alphabet, mixing upper and
  lower case and digits, over 4 bits of entropy per character): an unknown vendor's key.

The shapes run on RE2 (google-re2): time linear in the text, whatever it holds. With `re`, 176 KB of
`a-a-a-…` took one 0.7 s search of the assignment shape, holding the GIL: the daemon's loop stood
still although the masking ran in a thread. Over-masking is the safe side (a masked git hash costs
nothing); a secret is masked wherever it was found whole (`known_spans`: in its pieces, too).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable

import re2

MASK = "*"
_V = r"[!#-&(-~]"  # a value character: printable ASCII but quotes (masks keep the display width)
# Words that name a secret when they end a name (`DB_PASSWORD`, `x-api-key`, `GITHUB_TOKEN_FILE`).
_SECRET_NAME = (r"(?:api[_-]?key|[_-]key|secret|token|passw(?:or)?d|passphrase|credentials?|auth(?:orization)?"
                r"|cookie|private[_-]?key|access[_-]?key|account[_-]?key|[_-]pwd|(?:[_-]|\b)pass)")
_FLAG_NAME = (r"(?:password|passwd|pass|pwd|token|secret|api[_-]?key|access[_-]?key|auth[_-]?token"
              r"|client[_-]?secret|private[_-]?key)")
_AUTH_SCHEME = r"(?:bearer|basic|token|digest|negotiate|ntlm|apikey|key|sso-key)"
# Vendor tokens with a prefix that says what they are: the prefix stays, 20+ characters after it go.
_VENDOR = (r"npm_|hf_|gsk_|r8_|lin_api_|pplx-|xai-|dapi|hv[sb]\.|dp\.pt\.|glsa_|sgp_|shp(?:at|ss|ca|pa)_|ATATT"
           r"|AGE-SECRET-KEY-1|pypi-|sntrys_|rubygems_|do[opr]_v1_|SG\.|(?:sk|rk)_(?:live|test)_|ya29\.|AIza"
           r"|xapp-")

# Each shape's group "s" is what is hidden. RE2 syntax: no lookaround (a character before a token is
# matched instead, outside the group).
_SHAPE_TEXTS = (
    r"(?:^|[^A-Za-z0-9_-])sk-(?P<s>[A-Za-z0-9_-]{16,})",
    r"\b(?:gh[pousr]_|github_pat_)(?P<s>[A-Za-z0-9_]{20,})",
    r"\bgl(?:pat|dt|rt|ptt|ft|cbt|imt|agent|soat|ffct|oas)-(?P<s>[A-Za-z0-9_-]{16,})",
    r"\bxox[abprse]-(?P<s>[A-Za-z0-9-]{10,})",
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)(?P<s>[0-9A-Z]{16})\b",
    r"\b(?:" + _VENDOR + r")(?P<s>[A-Za-z0-9_=.-]{20,})",
    r"\beyJ(?P<s>[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
    r"(?:hooks\.slack\.com/services|discord(?:app)?\.com/api/webhooks)/(?P<s>[A-Za-z0-9/_-]{16,})",
    # A PEM private key: its body, up to the END line (or where base64 stops: a key cut short).
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?P<s>[A-Za-z0-9+/=\s:,.]+)",
    # Authorization headers: whatever follows the scheme, however short (`Basic YTpi` is `a:b`).
    r"(?i)\b(?:proxy-)?authori[sz]ation[\"']?[ \t]*[:=][ \t]*[\"']?(?:" + _AUTH_SCHEME
    + r"[ \t]+)?(?P<s>[^\s'\",;]+)",
    r"(?i)\b(?:bearer|basic)[ \t]+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)",
    # Credentials in a URL: the password (`scheme://user:PASS@host`), or a long user that is a token.
    r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/?#@:'\"]*:(?P<s>[^\s/?#@'\"]+)@",
    r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<s>[A-Za-z0-9_.~-]{20,})@",
    # Command lines: `--password VALUE`, `--api-key=VALUE`, `mysql … -pPASS`, `sshpass -p PASS`,
    # `docker login -p PASS`, `curl -u user:PASS`, a .netrc entry.
    r"(?i)(?:^|[ \t])--?(?:[a-z0-9]+[_-])*" + _FLAG_NAME + r"(?:[ \t]+|=)[\"']?(?P<s>[^\s'\"-][^\s'\"]*)",
    r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb[a-z-]*)\b[^\n]*?[ \t]-p"
    r"(?P<s>[^\s'\"]+)",
    r"\bsshpass\b[^\n]*?[ \t]-p[ \t]*(?P<s>[^\s'\"]+)",
    r"\b(?:docker|podman|buildah|skopeo|helm|nerdctl)\b[^\n]*?\blogin\b[^\n]*?[ \t]-p[ \t]*(?P<s>[^\s'\"]+)",
    r"(?:^|[ \t])(?:-u|--user|--proxy-user)[ \t=]*[\"']?[^\s:'\"]+:(?P<s>[^\s'\"]+)",
    r"\bmachine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+(?P<s>\S+)",
    # A name ending in a secret-ish word (or with a suffix after `_`: TOKEN_FILE), `=` or `:`, a value
    # (after an auth scheme, if one comes first: `Authorization: Bearer …` hides the token).
    r"(?i)\b[A-Za-z0-9_.-]{0,40}?" + _SECRET_NAME + r"(?:_[A-Za-z0-9_]{0,40})?[\"']?[ \t]*[=:][ \t]*[\"']?"
    r"(?:(?:bearer|basic|token)[ \t]+)?(?P<s>" + _V + r"{4,})",
    # panewatch's own (the board's log): login tokens, cookies, anything passed as token=, the cookie.
    r"pw[bc]_(?P<s>[A-Za-z0-9_-]+)",
    r"(?i)(?:t|%74)(?:o|%6f)(?:k|%6b)(?:e|%65)(?:n|%6e)\s*(?:=|%3d)\s*(?P<s>[^\s&;'\"\\]+)",
    r"(?i)panewatch_board_\d*\s*=\s*(?P<s>[^\s;'\"\\]+)",
)
SHAPES: tuple[re2._Regexp, ...] = tuple(re2.compile(p) for p in _SHAPE_TEXTS)
_GROUP = tuple(shape.groupindex["s"] for shape in SHAPES)
_RUN = re2.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")
ENTROPY_BITS = 4.0
KNOWN_MIN = 8  # a secret found once is masked wherever it shows again, if it is this long at least
KNOWN_PIECE = 8  # ... and so is each piece of it this long (its halves on two rows of a box)


def _high_entropy(run: str) -> bool:
    if sum(c.isdigit() for c in run) < 2 or sum(c.isupper() for c in run) < 2 or sum(c.islower() for c in run) < 2:
        return False
    counts = Counter(run)
    bits = -sum(n / len(run) * math.log2(n / len(run)) for n in counts.values())
    return bits > ENTROPY_BITS


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where the secrets in `text` are: sorted, merged (start, end) spans."""
    spans = [m.span(group) for shape, group in zip(SHAPES, _GROUP, strict=True)
             for m in shape.finditer(text) if m.group(group)]
    spans += [m.span() for m in _RUN.finditer(text) if _high_entropy(m.group())]
    return merge(spans)


def merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        elif end > start:
            merged.append((start, end))
    return merged


def known_spans(text: str, known: Collection[str]) -> list[tuple[int, int]]:
    """Where `text` shows a piece (KNOWN_PIECE characters or more) of a secret found before: a secret
    the layout cut where no shape could see it whole (its halves on two rows of a box)."""
    pieces: set[str] = set()
    for value in known:
        if len(value) >= KNOWN_MIN:
            pieces.update(value[i:i + KNOWN_PIECE] for i in range(len(value) - KNOWN_PIECE + 1))
    if not pieces or len(text) < KNOWN_PIECE:
        return []
    starts = [i for i in range(len(text) - KNOWN_PIECE + 1) if text[i:i + KNOWN_PIECE] in pieces]
    return merge((i, i + KNOWN_PIECE) for i in starts)


def redact(text: str) -> str:
    """`text` with every secret replaced by `<redacted>` (for logs: the length need not be kept)."""
    out, last = [], 0
    for start, end in secret_spans(text):
        out += [text[last:start], "<redacted>"]
        last = end
    return "".join(out) + text[last:]


def mask(text: str, known: Collection[str] = ()) -> str:
    """`text` with every character of every secret replaced by MASK: same length, same layout.
    `known`: secrets found elsewhere (the same report's cast), masked here too, in pieces."""
    return mask_spans(text, merge(secret_spans(text) + known_spans(text, known)))


def mask_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = MASK * (end - start)
    return "".join(chars)
