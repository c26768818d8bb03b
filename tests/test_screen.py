from __future__ import annotations

import os
import random

import psutil
import pytest

from panewatch.core.screen import MAX_KEPT_REPAINT, Screen


def test_published_example_renders_as_rows(example: bytes) -> None:
    screen = Screen(120, 32)
    screen.feed(example)
    rows = screen.snapshot().rows
    assert rows[1:4] == (" Do you want to proceed?", " ❯ 1. Yes", "   2. Yes, and always allow")
    assert len(rows) == 32


def test_utf8_character_split_across_chunks() -> None:
    whole, split = Screen(40, 5), Screen(40, 5)
    data = "héllo ❯ wörld ✳".encode()
    whole.feed(data)
    for i in range(len(data)):
        split.feed(data[i : i + 1])
    assert split.snapshot().rows == whole.snapshot().rows
    assert split.snapshot().rows[0] == "héllo ❯ wörld ✳"


def test_title_alt_screen_cursor_and_resize() -> None:
    screen = Screen(80, 24)
    screen.feed(b"\x1b]0;first\x07\x1b]2;\xe2\x9c\xb3 Claude Code\x1b\\")
    assert screen.snapshot().title == "✳ Claude Code"
    assert not screen.snapshot().alt_screen
    screen.feed(b"\x1b[?1049h\x1b[5;10Hx")
    snap = screen.snapshot()
    assert snap.alt_screen and snap.cursor == (10, 4) and snap.rows[4] == "         x"
    screen.feed(b"\x1b[?1049l")
    assert not screen.snapshot().alt_screen
    screen.resize(100, 40)
    assert screen.snapshot().height == 40 and screen.snapshot().width == 100


def test_scrollback_is_never_visible() -> None:
    screen = Screen(40, 5)
    screen.feed(b"Do you want to proceed?\r\n" + b"".join(b"line %d\r\n" % i for i in range(20)))
    assert all("proceed" not in row for row in screen.snapshot().rows)


def test_snapshot_cached_until_next_feed() -> None:
    screen = Screen(40, 5)
    screen.feed(b"a")
    first = screen.snapshot()
    assert screen.snapshot() is first
    screen.feed(b"b")
    assert screen.snapshot() is not first and screen.snapshot().rows[0] == "ab"


@pytest.mark.parametrize("seed", range(5))
def test_garbage_never_raises(seed: int) -> None:
    rng = random.Random(seed)
    screen = Screen(120, 32)
    for _ in range(200):
        screen.feed(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 500))))
        screen.feed(rng.choice([b"\x1b[", b"\x1b]0;", b"\x1bP", b"\x1b[?", b"\xf0\x9f", b"\x1b[999999999;99999999H"]))
    snap = screen.snapshot()
    assert len(snap.rows) == 32


def test_memory_stays_bounded_whatever_it_is_fed() -> None:
    proc = psutil.Process(os.getpid())
    screen = Screen(120, 32)
    line = b"x" * 119 + b"\r\n"
    screen.feed(line * 2000)  # warm up allocator and first pages
    before = proc.memory_info().rss
    for _ in range(100):  # ~24 MB of scrolling output plus an endless OSC title
        screen.feed(line * 2000)
        screen.feed(b"\x1b]0;" + b"t" * 200_000)
    after = proc.memory_info().rss
    assert after - before < 16 * 1024 * 1024, f"grew by {(after - before) / 1e6:.1f} MB"
    assert screen.stats.fed_bytes > 24_000_000


def test_snapshot_from_text_keeps_the_bottom_rows_and_pads() -> None:
    from panewatch.core.screen import Snapshot

    assert Snapshot.from_text("a\nb\nc", height=2).rows == ("b", "c")
    assert Snapshot.from_text("a  ", height=3).rows == ("a", "", "")


def test_a_closed_screen_keeps_its_last_picture_and_frees_the_engine() -> None:
    screen = Screen(40, 6)
    screen.feed(b"\x1b]0;title\x07\x1b[31mred\x1b[0m text\r\nsecond \xe2\x9c\xb3")
    before, repaint = screen.snapshot(), screen.vt_dump()
    screen.close()
    assert screen.closed
    screen.feed(b"\x1b[2Jgone")  # ignored: nothing may reach the freed engine
    screen.resize(80, 24)
    screen.invalidate()
    assert screen.snapshot() == before and screen.vt_dump() == repaint
    viewer = Screen(40, 6)  # a viewer joining late sees the same screen, colours included
    viewer.feed(screen.vt_dump())
    assert viewer.snapshot().rows == before.rows
    assert viewer.vt_dump() == repaint
    screen.close()  # twice is harmless


def test_a_closed_screen_keeps_a_bounded_repaint() -> None:
    screen = Screen(300, 100)
    screen.feed(b"".join(b"\x1b[38;2;%d;%d;%dm#" % (i % 256, i * 7 % 256, i * 13 % 256) for i in range(30000)))
    assert len(screen.vt_dump()) > MAX_KEPT_REPAINT  # every cell in its own colour: a huge VT repaint
    rows = screen.snapshot().rows
    screen.close()
    assert len(screen.vt_dump()) <= MAX_KEPT_REPAINT  # ... kept as plain text instead
    viewer = Screen(300, 100)
    viewer.feed(screen.vt_dump())
    assert viewer.snapshot().rows == rows


def test_soft_wrapped_rows_are_one_logical_line_with_its_text_as_written() -> None:
    """A line the program wrote longer than the screen is wide wraps onto the next rows; the engine's per-row
    flag says which: the snapshot keeps the rows as drawn and each wrapped line whole, blanks at a break
    included. A line the program broke itself (CR LF) and a row exactly full are not wrapped."""
    screen = Screen(20, 8)
    screen.feed(b"Add file to the chat? (Y)es/(N)o [Yes]: \r\n" + b"x" * 20 + b"\r\nnext\r\n"
                + "中".encode() * 12)
    snap = screen.snapshot()
    assert snap.rows[:3] == ("Add file to the chat", "? (Y)es/(N)o [Yes]:", "x" * 20)
    assert snap.wraps == ((0, 1, "Add file to the chat? (Y)es/(N)o [Yes]:"), (4, 5, "中" * 12))
    assert snap.lines() == [(0, "Add file to the chat? (Y)es/(N)o [Yes]:"), (2, "x" * 20), (3, "next"),
                            (4, "中" * 12), (6, ""), (7, "")]
    assert snap.lines(1, 3) == [(0, "Add file to the chat? (Y)es/(N)o [Yes]:"), (2, "x" * 20)]  # taken whole
    assert snap.line_text(3, 4) == "next"
    screen.feed(b"\x1b[2J\x1b[Hshort")
    assert screen.snapshot().wraps == ()  # cleared: nothing wraps any more
