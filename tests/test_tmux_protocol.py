"""core/tmux_protocol.py and core/tmux_formats.py: the control-mode wire and the formats, pure."""

from __future__ import annotations

import warnings

from hypothesis import given
from hypothesis import strategies as st

from panewatch.core.screen import Screen
from panewatch.core.tmux_formats import (
    PANE_FORMAT,
    free_text,
    parse_layout,
    parse_pane,
    parse_version,
    seed_bytes,
)
from panewatch.core.tmux_protocol import (
    MAX_LINE,
    ControlParser,
    Notification,
    Output,
    Reply,
    command,
    decode_output,
    routes,
    send_keys,
)


def test_octal_escapes_decode_to_the_exact_bytes() -> None:
    assert decode_output(b"a\\033[1mb\\015\\012\\134c") == b"a\x1b[1mb\r\n\\c"
    assert decode_output(b"no escapes \xc3\xa9") == b"no escapes \xc3\xa9"
    assert decode_output(b"\\9 \\12 trailing\\") == b"\\9 \\12 trailing\\"  # not 3 octal digits: as they are
    assert decode_output(b"\\033ok \\x41 \\n") == b"\x1bok \\x41 \\n"  # one bad escape: the rest still decoded


def _escape(raw: bytes) -> bytes:
    """What tmux writes for `raw` (control-mode escaping: bytes below 32 and backslash as octal)."""
    return b"".join(b"\\%03o" % b if b < 32 or b == 92 else bytes((b,)) for b in raw)


@given(st.binary(max_size=400))
def test_decoding_tmux_escaping_gives_back_every_byte(raw: bytes) -> None:
    assert decode_output(_escape(raw)) == raw


_PIECES = st.one_of(st.binary(max_size=3), st.sampled_from(
    [b"\\", b"\\033", b"\\134", b"\\377", b"\\400", b"\\9", b"\\12", b"\\x41", b"\\n", b"\\\\"]))


@given(st.lists(_PIECES, max_size=30).map(b"".join))
def test_garbage_decodes_escape_by_escape_and_never_raises_or_warns(data: bytes) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = decode_output(data)
    parts = data.split(b"\\")
    expected = parts[0] + b"".join(bytes((int(p[:3], 8),)) + p[3:]
                                   if len(p) >= 3 and p[0] in b"0123" and all(c in b"01234567" for c in p[1:3])
                                   else b"\\" + p for p in parts[1:])
    assert got == expected


def test_output_extended_output_and_notifications() -> None:
    p = ControlParser()
    events = p.feed(b"%output %3 hi\\015\\012\n%extended-output %4 12 : x\\134y\n%layout-change @1 ab,80x24,0,0,3 "
                    b"ab,80x24,0,0,3 *\n%exit\n%pause %4\n")
    assert events == [
        Output("%3", b"hi\r\n"), Output("%4", b"x\\y", 12),
        Notification("layout-change", ("@1", "ab,80x24,0,0,3", "ab,80x24,0,0,3", "*"),
                     b"%layout-change @1 ab,80x24,0,0,3 ab,80x24,0,0,3 *"),
        Notification("exit", (), b"%exit"), Notification("pause", ("%4",), b"%pause %4")]


def test_reply_blocks_frame_output_and_errors() -> None:
    p = ControlParser()
    events = p.feed(b"%begin 17 5 1\nline one\n%end 17 6 1\n%output %1 not output\n%end 17 5 1\n"
                    b"%begin 18 6 1\nparse error: unknown command: x\n%error 18 6 1\n%begin 19 7 0\n%end 19 7 0\n")
    assert events == [Reply(5, True, (b"line one", b"%end 17 6 1", b"%output %1 not output"), True),
                      Reply(6, False, (b"parse error: unknown command: x",), True), Reply(7, True, (), False)]


def test_split_utf8_and_split_lines_arrive_whole() -> None:
    p = ControlParser()
    data = "%output %1 é€\n".encode()
    got: list[object] = []
    for i in range(len(data)):
        got += p.feed(data[i:i + 1])
    assert got == [Output("%1", "é€".encode())]
    # a character split across two notifications: the screen joins the bytes
    screen = Screen(20, 2)
    first, second = ControlParser().feed(b"%output %1 \xe2\x82\n%output %1 \xac!\n")
    assert isinstance(first, Output) and isinstance(second, Output)
    screen.feed(first.data)
    screen.feed(second.data)
    assert screen.snapshot().rows[0].startswith("€!")


@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=5))
def test_garbage_never_crashes_and_any_split_gives_the_same_events(data: bytes, cuts: list[int]) -> None:
    whole = ControlParser().feed(data + b"\n")
    p = ControlParser()
    parts, last = [], 0
    for cut in sorted(set(c for c in cuts if c <= len(data))):
        parts.append(data[last:cut])
        last = cut
    parts.append(data[last:] + b"\n")
    split: list[object] = []
    for part in parts:
        split += p.feed(part)
    assert split == whole


def test_an_endless_line_is_dropped_not_kept() -> None:
    p = ControlParser()
    assert p.feed(b"x" * (MAX_LINE + 1)) == []
    assert p.feed(b"still the same line\n%exit\n") == [Notification("exit", (), b"%exit")]


def test_command_quoting_is_literal() -> None:
    assert command("send-keys", "-t", "%3", "-l", "--", "it's #{x} ; $HOME") == \
        b"send-keys -t '%3' -l -- 'it'\"'\"'s #{x} ; $HOME'\n"
    assert command("display-message", "-p", "") == b"display-message -p ''\n"
    try:
        command("send-keys", "a\nb")
    except ValueError:
        pass
    else:
        raise AssertionError("a newline in an argument must be refused")


def test_send_keys_literal_text_named_keys_and_hex() -> None:
    assert send_keys("%1", b"ls -la\r") == [b"send-keys -t '%1' -l -- 'ls -la'\n", b"send-keys -t '%1' Enter\n"]
    assert send_keys("%1", b"\x1b[A\x03\x1b[1;5C") == [
        b"send-keys -t '%1' Up\n", b"send-keys -t '%1' C-c\n", b"send-keys -t '%1' -H 1b 5b 31 3b 35 43\n"]
    assert send_keys("%1", "é\t".encode()) == ["send-keys -t '%1' -l -- 'é'\n".encode(), b"send-keys -t '%1' Tab\n"]


def _pane_line(**over: str) -> str:
    """A line as tmux writes it for PANE_FORMAT (each `#{NAME}` and each free_text(NAME) replaced by its value)."""
    values = {"session_id": "$0", "window_id": "@1", "pane_id": "%3", "window_index": "2", "pane_index": "1",
              "pane_width": "80", "pane_height": "24", "cursor_x": "4", "cursor_y": "1", "cursor_flag": "1",
              "alternate_on": "0", "pane_in_mode": "0", "pane_dead": "0", "pane_pid": "123", "pane_tty": "/dev/pts/4",
              "synchronize-panes": "0", "window_panes": "2", "pid": "77", "start_time": "1700000000",
              "pane_current_command": "bash", "session_name": "work", "window_name": "edit", "pane_title": "t x",
              "pane_current_path": "/home/u/my repo"}
    values.update(over)
    line = PANE_FORMAT
    for name, value in values.items():
        line = line.replace(free_text(name), value).replace("#{" + name + "}", value)
    assert "#{" not in line, line
    return line


def test_pane_lines_parse_and_garbage_does_not() -> None:
    info = parse_pane(_pane_line().encode())
    assert info is not None
    assert (info.pane_id, info.target, info.cols, info.rows, info.title, info.in_mode) == \
        ("%3", "work:2.1", 80, 24, "t x", False)
    assert (info.cwd, info.synchronized, info.window_panes, info.server) == \
        ("/home/u/my repo", False, 2, (77, 1700000000))
    assert parse_pane(_pane_line(pane_in_mode="1")).in_mode  # type: ignore[union-attr]
    assert parse_pane(b"no current client") is None
    assert parse_pane("") is None


def test_free_text_is_escaped_by_tmux_and_a_line_of_more_or_fewer_fields_is_unknown() -> None:
    """A process named `x<newline>FORGED` split the old listing in two: its own line short of fields (the pane
    taken as closed) and a forged pane's line. Every free-text field is now asked with tmux's own replacement of
    control characters (tests/test_tmux_guard.py: end to end), and a line with a field too many or too few is
    not a pane."""
    for name in ("pane_current_command", "session_name", "window_name", "pane_title", "pane_current_path"):
        assert free_text(name) in PANE_FORMAT
        assert "#{" + name + "}" not in PANE_FORMAT
    head, _, tail = _pane_line(pane_current_command="x\nrest").partition("\n")
    assert parse_pane(head) is None and parse_pane(tail) is None
    assert parse_pane(_pane_line(pane_title="a\tb")) is None  # a stray tab: unknown, not a shifted title
    assert parse_pane(_pane_line(pane_current_path="/tmp/a\ufffdb")).cwd == "/tmp/a\ufffdb"  # type: ignore[union-attr]


def test_synchronized_panes_and_the_identity_of_a_pane_process() -> None:
    info = parse_pane(_pane_line(**{"synchronize-panes": "1"}))
    assert info is not None and info.synchronized and info.copies_keys
    alone = parse_pane(_pane_line(**{"synchronize-panes": "1", "window_panes": "1"}))
    assert alone is not None and not alone.copies_keys  # nobody to copy the keys into
    same = parse_pane(_pane_line(cursor_x="9", pane_current_command="claude"))
    assert same is not None and info.same_process(same)
    for other in ({"pid": "78"}, {"start_time": "1700000001"}, {"pane_pid": "124"}, {"pane_tty": "/dev/pts/5"}):
        changed = parse_pane(_pane_line(**other))
        assert changed is not None and not info.same_process(changed), other


def test_layouts_give_each_pane_its_size() -> None:
    assert parse_layout("b25f,160x40,0,0{80x40,0,0,1,79x40,81,0[79x20,81,0,2,79x19,81,21,3]}") == {
        "%1": (80, 40), "%2": (79, 20), "%3": (79, 19)}
    assert parse_layout("c0ff,80x24,0,0,7") == {"%7": (80, 24)}
    assert parse_layout("garbage") == {}


def test_versions() -> None:
    assert parse_version("tmux 3.3a") == (3, 3)
    assert parse_version("tmux next-3.4") == (3, 4)
    assert parse_version("tmux 2.9") == (2, 9)
    assert parse_version("tmux master") is None


def test_seed_draws_the_captured_screen_with_cursor_and_alternate_screen() -> None:
    info = parse_pane(_pane_line(pane_width="20", pane_height="3", cursor_x="5", cursor_y="2", alternate_on="1",
                                 pane_title="hello"))
    assert info is not None
    screen = Screen(20, 3)
    screen.feed(b"old junk everywhere")
    screen.feed(seed_bytes(info, [b"\x1b[1mDo you want\x1b[0m" + b" " * 8, b"x" * 20, b"> 1. Yes"]))
    snap = screen.snapshot()
    assert snap.rows[0].rstrip() == "Do you want"
    assert snap.rows[1] == "x" * 20
    assert snap.rows[2].rstrip() == "> 1. Yes"
    assert snap.alt_screen and snap.title == "hello"
    assert snap.cursor == (5, 2)


def test_routes_are_the_lines_command_writes_batched_per_client() -> None:
    ids = [f"%{n}" for n in range(5)] + ["%x'y"]  # an id tmux never gives still quoted right
    lines = routes("client-42", ids, "off", per_command=4)
    assert lines == [command("refresh-client", "-t", "client-42", *(a for i in ids[:4] for a in ("-A", f"{i}:off"))),
                     command("refresh-client", "-t", "client-42", *(a for i in ids[4:] for a in ("-A", f"{i}:off")))]
    assert routes("client-42", [], "on") == []
    try:
        routes("client-42", ["%1"], "o'n")
    except ValueError:
        pass
    else:
        raise AssertionError("a state that would break the quoting was written")
