"""An option row drawn in colours (OpenCode): the selected option is read from the row's cells, so an answer's
arrows start from where the selection really is — also after the user moved it — and an answer that would
have to guess is refused with nothing typed."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from panewatch.core.classify import classify
from panewatch.core.manifest import load_all
from panewatch.core.prompt import LEFT, RIGHT, parse_prompt, read_selection
from panewatch.core.screen import Screen, Snapshot
from panewatch.errors import SelectionUnseenError
from panewatch.golden.cases import bundled_root
from panewatch.runtime.guard import HasState, InputGuard

CASE = bundled_root() / "opencode" / "1.18.33" / "bash_120x32"


def dialog_screen() -> Screen:
    """The real OpenCode 1.18.33 capture, played up to its permission dialog ("Allow once" selected)."""
    lines = (CASE / "session.cast").read_text().splitlines()
    header = json.loads(lines[0])
    truth = json.loads((CASE / "truth.json").read_text())
    blocked = next(e["t"] for e in truth["timeline"] if e["state"] == "blocked")
    screen = Screen(header["width"], header["height"])
    for line in lines[1:]:
        t, kind, data = json.loads(line)
        if t > blocked + 0.5:
            break
        if kind == "o":
            screen.feed(data.encode("utf-8", "surrogateescape"))
    return screen


def move_selection_to_reject(screen: Screen, row: int, cols: tuple[int, ...]) -> None:
    """Redraw the option row as OpenCode does after → →: the highlight (background 215) on "Reject"."""
    plain, lit = "\x1b[48;5;0;38;5;244m", "\x1b[48;5;215;38;5;232m"
    for col, label, look in zip(cols, ("Allow once", "Allow always", "Reject"), (plain, plain, lit), strict=True):
        screen.feed(f"\x1b[{row + 1};{col}H{look} {label} \x1b[0m".encode())


def test_the_real_dialog_opens_on_its_first_option_and_the_colours_say_so() -> None:
    screen = dialog_screen()
    prompt = parse_prompt(screen.snapshot())
    assert [o.label for o in prompt.options] == ["Allow once", "Allow always", "Reject"]
    assert not prompt.selection_seen and prompt.choice_row is not None
    seen = read_selection(prompt, screen.row_styles(prompt.choice_row))
    assert seen.selection_seen and [o.selected for o in seen.options] == [True, False, False]
    assert [o.key for o in seen.options] == ["\r", RIGHT + "\r", RIGHT * 2 + "\r"]
    assert seen.fingerprint == prompt.fingerprint  # the selection is not part of what the user approves


def test_a_moved_selection_moves_the_keys() -> None:
    screen = dialog_screen()
    prompt = parse_prompt(screen.snapshot())
    assert prompt.choice_row is not None
    move_selection_to_reject(screen, prompt.choice_row, prompt.choice_cols)
    again = parse_prompt(screen.snapshot())
    assert again.fingerprint == prompt.fingerprint and again.options[0].key == "\r"  # text alone: a guess
    seen = read_selection(again, screen.row_styles(again.choice_row or 0))
    assert [o.selected for o in seen.options] == [False, False, True]
    assert [o.key for o in seen.options] == [LEFT * 2 + "\r", LEFT + "\r", "\r"]


def test_a_row_without_a_visible_selection_stays_unseen() -> None:
    prompt = parse_prompt(dialog_screen().snapshot())
    flat = Screen(120, 32)  # every cell alike: no label stands out
    assert read_selection(prompt, flat.row_styles(prompt.choice_row or 0)) is prompt
    assert read_selection(prompt, []) is prompt
    assert all(prompt.needs_selection(o) for o in prompt.options)


class ScreenPane:
    """A GuardedPane showing `screen`, judged by the OpenCode manifest; with or without cell looks."""

    def __init__(self, screen: Screen, *, looks: bool) -> None:
        manifest = load_all().get("opencode")
        assert manifest is not None
        self.manifest, self.screen = manifest, screen
        self.written: list[bytes] = []
        self.last_output = self.last_input = float("-inf")
        if looks:
            self.row_styles = screen.row_styles

    def classify_now(self) -> HasState:
        return classify(self.screen.snapshot(), self.manifest)

    def snapshot(self) -> Snapshot:
        return self.screen.snapshot()

    def clock(self) -> float:
        return time.monotonic()

    def write(self, data: bytes) -> None:
        self.written.append(data)
        self.last_input = self.clock()

    def bracketed_paste(self) -> bool:
        return False


def test_the_guard_answers_from_the_selection_on_screen_and_refuses_to_guess() -> None:
    screen = dialog_screen()
    prompt = parse_prompt(screen.snapshot())
    move_selection_to_reject(screen, prompt.choice_row or 0, prompt.choice_cols)
    pane = ScreenPane(screen, looks=True)
    guard = InputGuard(pane)
    assert pane.classify_now().state == "blocked"
    shown = guard.prompt()  # what a UI shows the user: the selection seen
    assert shown.selection_seen and shown.option("reject") == shown.options[2] and shown.options[2].selected
    asyncio.run(guard.answer("allow_once", shown.fingerprint, timeout=0.05))
    assert pane.written == [(LEFT * 2 + "\r").encode()]  # from Reject back to Allow once, not a bare Enter

    blind = ScreenPane(dialog_screen(), looks=False)  # a pane that cannot show the cells' looks
    blind_guard = InputGuard(blind)
    with pytest.raises(SelectionUnseenError) as refused:
        asyncio.run(blind_guard.answer("reject", blind_guard.prompt().fingerprint, timeout=0.05))
    assert blind.written == [] and refused.value.wire_name == "selection_unseen"
