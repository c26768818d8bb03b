"""core/redact.py: the one list of secret shapes, for logs (redact) and wrong-state reports (mask)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panewatch.core.cast import CastEvent
from panewatch.core.masking import mask_stream as mask_events
from panewatch.core.redact import mask, redact
from panewatch.core.screen import Screen


def mask_stream(chunks: list[str], cols: int = 80, rows: int = 24) -> list[str]:
    """Output chunks masked as a cast of them is: each keeps its length."""
    events, _found = mask_events([CastEvent(float(i), "o", c) for i, c in enumerate(chunks)], cols, rows)
    return [e.data for e in events]

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


# -- issue 23, item 7: the shapes the probe used, and the common credential shapes beyond them -------------

MORE_SECRETS = [
    ("git clone https://oauth2:glpat-Xq3vR8tLm2Wk9PzYb7Nc@gitlab.com/x", "Xq3vR8tLm2Wk9PzYb7Nc"),
    ("GITLAB=glpat-Xq3vR8tLm2Wk9PzYb7Nc", "Xq3vR8tLm2Wk9PzYb7Nc"),
    ("glpat-Xq3vR8tLm2Wk9PzYb7Nc is the token", "Xq3vR8tLm2Wk9PzYb7Nc"),
    ("psql postgres://app:pass1234@db:5432/app", "pass1234"),
    ("redis://:s3cretpw@cache:6379", "s3cretpw"),
    ("git push https://ghs_Ux4Wq8Rz2Tn6Lm9Pk3Vb@github.com/o/r", "Ux4Wq8Rz2Tn6Lm9Pk3Vb"),
    ("mysql -uroot -pMy5qlPw -h db", "My5qlPw"),
    ("mysqldump --user=root -pHunter22x app", "Hunter22x"),
    ("deploy --password Flag5ecret --yes", "Flag5ecret"),
    ("deploy --password=Flag5ecret", "Flag5ecret"),
    ("vault login --token s.Qx8Lm2Zr7", "s.Qx8Lm2Zr7"),
    ("tool --client-secret cl1entS3cr", "cl1entS3cr"),
    ("curl -H 'Authorization: Basic YTpi' https://x", "YTpi"),
    ("Authorization: Token Tk3n9x", "Tk3n9x"),
    ("proxy-authorization: Basic dTpw", "dTpw"),
    ("sshpass -p SshPw7q ssh host", "SshPw7q"),
    ("docker login -u me -p D0ckerPw registry", "D0ckerPw"),
    ("curl -u admin:CurlPw4x https://api", "CurlPw4x"),
    ("machine api.host login me password N3trcPw", "N3trcPw"),
    ("DB_PASS=DbPa5sValue ./migrate", "DbPa5sValue"),
    ("MYSQL_PWD=Env5QlPwd mysql", "Env5QlPwd"),
    ("AccountKey=Az8StorageKey0123==", "Az8StorageKey0123=="),
    ("export STRIPE=sk_live_51Hc8Yt2eZvKYlo2C9q8W", "51Hc8Yt2eZvKYlo2C9q8W"),
    ("npm_Bq7Zr2Wx9Lk4Vm8Tn3Pc6Hy1Js5Df0Ga2Qe in .npmrc", "Bq7Zr2Wx9Lk4Vm8Tn3Pc6Hy1Js5Df0Ga2Qe"),
    ("hf_Kd8Lq2Zx7Vn4Rw9Tm3Pb6Hc1Jy5Fs0Ge", "Kd8Lq2Zx7Vn4Rw9Tm3Pb6Hc1Jy5Fs0Ge"),
    ("pypi-AgEIcHlwaS5vcmcCJGQ4ZTIzYTNhLTk5", "AgEIcHlwaS5vcmcCJGQ4ZTIzYTNhLTk5"),
    ("SG.Ab3dEf6hIj9kLm2nOp.Qr5tUv8wXy1zAb4cDe7f", "Ab3dEf6hIj9kLm2nOp.Qr5tUv8wXy1zAb4cDe7f"),
    ("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX", "T000/B000/XXXXXXXXXXXXXXXX"),
    ("ASIAZ7Q3R8T2W9X4Y6V1", "Z7Q3R8T2W9X4Y6V1"),
    ("ya29.a0AfH6SMBq7Zr2Wx9Lk4Vm8Tn3P", "a0AfH6SMBq7Zr2Wx9Lk4Vm8Tn3P"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACB\n-----END OPENSSH PRIVATE KEY-----",
     "b3BlbnNzaC1rZXktdjEAAAAA"),
]


@pytest.mark.parametrize(("text", "secret"), MORE_SECRETS)
def test_the_shapes_the_probe_used_and_common_credentials_are_masked(text: str, secret: str) -> None:
    masked = mask(text)
    assert secret not in masked and len(masked) == len(text), masked
    assert secret not in redact(text)


@pytest.mark.parametrize("text", ["mkdir -p build/out", "docker run -p 8080:80 image", "the basic idea is simple",
                                  "Tests pass: all 12", "bypass=true", "sort -u names.txt",
                                  "git diff --stat HEAD~1", "https://github.com/o/r.git", "Do you want to proceed?"])
def test_command_lines_without_a_credential_are_left_alone(text: str) -> None:
    assert mask(text) == text


def test_every_shape_runs_on_re2_linear_in_the_text() -> None:
    """176 KB of `a-a-a-…` took `re` one 0.7 s search of the assignment shape, holding the GIL: the
    daemon's loop stood still though the masking ran in a thread (scripts/bench-redact). RE2 does not
    backtrack: no text costs more than its length."""
    from panewatch.core import redact as redaction

    assert all(type(shape).__module__.startswith("re2") for shape in redaction.SHAPES)
    text = "a-" * 88_000 + " API_KEY=" + "a-" * 10 + "x" * 10
    assert mask(text).endswith("API_KEY=" + "*" * 30)


# -- the logical text: a secret the layout cut is masked whole --------------------------------------------

def test_a_secret_the_agent_wrapped_at_the_edge_with_cr_lf_is_masked_whole() -> None:
    key = "sk-ant-api03-Hq8Lz2Vx7Nw4Kp9Rt6Ym3Bc5"
    line = "token " + key
    chunk = line[:20].rjust(40) + "\r\n" + line[20:] + " and more\r\n"
    masked = "".join(mask_stream([chunk], cols=40))
    assert not any(key[i:i + 6] in masked for i in range(3, len(key) - 5)) and "and more" in masked


def test_a_cursor_move_or_a_hidden_cursor_inside_a_secret_does_not_split_it() -> None:
    akia = "AKIAZ7Q3R8T2W9X4Y6V1"
    moved = f"key {akia[:9]}\x1b[1C\x1b[1D{akia[9:]} done"
    hidden_cursor = f"key {akia[:9]}\x1b[?25l{akia[9:]}\x1b[?25h done"
    placed = f"\x1b[3;1Hkey {akia[:9]}\x1b[3;14H{akia[9:]} done"  # CUP to the very next cell
    for chunk in (moved, hidden_cursor, placed):
        masked = "".join(mask_stream([chunk]))
        assert akia[4:] not in masked and masked.count("*") == 16, repr(masked)


def test_rows_placed_one_by_one_as_a_seed_does_are_one_line_where_a_row_is_full() -> None:
    value = "GITHUB_TOKEN=Rw9Tk3Lm7Qp2Zx5Vn8Bc4Hy6Js1Df0Gq"
    seed = f"\x1bc\x1b[1;1H{value[:30].rjust(40)}\x1b[2;1H{value[30:]}\x1b[3;1Hnext\x1b[0m\x1b[3;5H"
    masked = "".join(mask_stream([seed], cols=40, rows=5))
    assert masked.count("*") == len(value) - len("GITHUB_TOKEN=") and "next" in masked
    short = "\x1b[1;1Hpassword:\x1b[2;1Hhunter22"  # row 1 not full: two lines, the word is no value
    assert mask_stream([short], cols=40) == [short]


def test_a_secret_cut_by_a_box_s_sides_is_masked_in_both_rows() -> None:
    value = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY3"
    inner = 36
    rows = ["│ " + value[i:i + inner].ljust(inner) + " │" for i in range(0, len(value), inner)]
    drawn = "╭" + "─" * 38 + "╮\r\n" + "\r\n".join(rows) + "\r\n╰" + "─" * 38 + "╯\r\n"
    masked = "".join(mask_stream([drawn], cols=40))
    assert "wJalrX" not in masked and "KEY3" not in masked and masked.count("│") == 4 and "─" * 38 in masked
    words = "\x1b[1G│\x1b[3G" + value[:inner] + "\x1b[40G│\r\n\x1b[1G│\x1b[3G" + value[inner:] + "\x1b[40G│"
    masked = "".join(mask_stream([words], cols=40))  # the same box, each piece placed by CSI G
    assert "wJalrX" not in masked and "KEY3" not in masked and masked.count("│") == 4


def test_a_secret_drawn_out_of_order_is_masked_by_its_pieces() -> None:
    key = "sk-proj-Tz6Yq1Wn8Rk3Lp5Vm2Xc7Hb4J"
    chunk = f"\x1b[2;1HOPENAI_API_KEY=\x1b[2;32H{key[16:]}\x1b[2;16H{key[:16]}\r\n"
    masked = "".join(mask_stream([chunk]))
    assert key[16:] not in masked and key[3:16] not in masked


def test_a_screen_s_wrapped_rows_are_one_line() -> None:
    from panewatch.core.masking import mask_rows

    key = "sk-ant-api03-Hq8Lz2Vx7Nw4Kp9Rt6Ym3Bc5"
    screen = Screen(20, 8)
    screen.feed(f"KEY={key} ok\r\npassword: ".encode() + b" " * 10 + b"hunter22")
    snapshot = screen.snapshot()
    rows, found = mask_rows(snapshot.rows, 20, screen.soft_wraps())
    assert any(key[3:] in value for value in found) and "hunter22" in found
    text = "\n".join(rows)
    assert "hunter22" not in text and not any(key[i:i + 6] in text for i in range(3, len(key) - 5))
    assert text.startswith("KEY=") and "password:" in text
    # Without the engine's word, a full row still goes on into the next one.
    rows, _ = mask_rows(snapshot.rows, 20)
    assert "Hq8L" not in "".join(rows)
