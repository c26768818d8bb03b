"""core/redact.py: the one list of secret shapes, for logs (redact) and wrong-state reports (mask)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panewatch.core.redact import mask, mask_stream, redact
from panewatch.core.screen import Screen

SECRETS = [
    ("export ANTHROPIC_API_KEY=sk-ant-api03-AbCdEfGh0123456789", "sk-ant-api03-AbCdEfGh0123456789"),
    ("OPENAI_API_KEY='sk-proj-abcdefghijklmnopqrstuv'", "abcdefghijklmnopqrstuv"),
    ("git push https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com", "abcdefghijklmnopqrstuvwxyz0123"),
    ("curl -H 'Authorization: Bearer abcdefghijklmnop1234567890'", "abcdefghijklmnop1234567890"),
    ("password: hunter22", "hunter22"),
    ('{"api_key": "abcd1234efgh"}', "abcd1234efgh"),
    ("GITHUB_TOKEN=abc123def", "abc123def"),
    ("DB_PASSWORD_FILE=/run/secrets/db", "/run/secrets/db"),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("slack xoxb-1234567890-abcdefghij", "1234567890-abcdefghij"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
    ("random Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdI", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdI"),
    ("GET /?token=pwb_Zx9-_q HTTP/1.1", "Zx9-_q"),
]
HARMLESS = [
    "Do you want to proceed?", "❯ 1. Yes", "Author: John Smith", "(5s · ↑ 1.2k tokens · esc to interrupt)",
    "PWD=/home/user", "monkey=banana1", "commit 3f2a9c0d1e4b5a6978877665544332211aabbccd",
    "src/panewatch/golden/corpus/claude-code/2.1.332/bash_120x32", "Invalid header token: b'x'",
    "test_answer_needs_confirmation_and_the_fingerprint_seen", "Esc to cancel · Tab to amend",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_every_secret_shape_is_masked_in_place(text: str, secret: str) -> None:
    masked = mask(text)
    assert secret not in masked and len(masked) == len(text)
    assert "*" * 6 in masked
    assert secret not in redact(text) and "<redacted>" in redact(text)


@pytest.mark.parametrize("text", HARMLESS)
def test_what_an_agent_draws_is_left_alone(text: str) -> None:
    assert mask(text) == text and redact(text) == text


def test_the_name_of_an_assignment_stays() -> None:
    key = "sk-ant-0123456789abcdefgh"
    assert mask(f"ANTHROPIC_API_KEY={key}") == "ANTHROPIC_API_KEY=" + "*" * len(key)
    assert mask("Authorization: Bearer abcdefghijklmnop1234") == "Authorization: Bearer " + "*" * 20


def test_a_stream_secret_split_between_chunks_and_colours_is_found_and_sequences_survive() -> None:
    chunks = ["\x1b[38;5;174mAPI_KEY\x1b[0m=sk-abcdefgh", "ijklmnopqrstu\x1b[5Gnext\x1b]0;title ghp_"
              "abcdefghijklmnopqrstuvwxyz0123\x07 \x1b[1;31mok"]
    masked = mask_stream(chunks)
    assert [len(c) for c in masked] == [len(c) for c in chunks]
    joined = "".join(masked)
    assert "abcdefgh" not in joined and "ijklmnop" not in joined and "abcdefghijklmnopqrstuvwxyz0123" not in joined
    for sequence in ("\x1b[38;5;174m", "\x1b[0m", "\x1b[5G", "\x1b]0;title ghp_", "\x07", "\x1b[1;31m"):
        assert sequence in joined
    assert "next" in joined and joined.endswith("ok")


def test_a_cursor_move_separates_words_it_does_not_join_them_into_a_secret() -> None:
    # Claude Code places each word with CSI n G: joined, these would be one long mixed run.
    words = ["Ab12Cd34", "Ef56Gh78", "Ij90Kl12", "Mn34Op56", "Qr78St90"]
    chunk = "".join(f"\x1b[{i * 9 + 1}G{w}" for i, w in enumerate(words))
    assert mask_stream([chunk]) == [chunk]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["API_KEY=", "sk-", "abcdEFGH1234", "\x1b[1m", "\x1b[0m", "\x1b[3G", " ", "é",
                                 "\r\n", "token", "=", "x"]), max_size=40),
       st.integers(min_value=1, max_value=7))
def test_masking_a_stream_keeps_its_screen_but_for_the_masked_cells(parts: list[str], cut: int) -> None:
    text = "".join(parts)
    chunks = [text[i:i + cut] for i in range(0, len(text), cut)]
    masked = "".join(mask_stream(chunks))
    assert len(masked) == len(text)
    plain, hidden = Screen(40, 10), Screen(40, 10)
    plain.feed(text.encode())
    hidden.feed(masked.encode())
    a, b = plain.snapshot(), hidden.snapshot()
    assert a.cursor == b.cursor
    for row_a, row_b in zip(a.rows, b.rows, strict=True):
        assert len(row_a) == len(row_b) or "*" in row_b
        assert all(x == y or y == "*" for x, y in zip(row_a, row_b, strict=False))
