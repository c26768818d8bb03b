"""`panewatch top`: the Textual app.

    header    the summary (⚠ 2 blocked · 3 working · 1 idle) and the filter; the daemon's notes
    PaneList  one row per pane (tui/rows.py): drawn line by line (Textual's line API), so a thousand panes cost
              what the visible rows cost; re-ordered at most every ARRANGE seconds however fast cards change
    detail    the selected pane: agent and version, where, directory, what decided, its prompt, its last answer
    preview   the selected pane's screen, from the daemon's stream (tui/feed.py Preview)
    status    what the last key did (an answer applied, refused, a pane gone); the keys otherwise

Cards come from the daemon's subscription (tui/feed.py): nothing here polls. The selection follows a pane (its
id), not a row: a pane that moves (it became blocked) stays selected; one that vanishes hands the selection to
the row that took its place. Answers go through the daemon's `answer` (the guard), bound to the fingerprint
the confirmation showed; going to a pane is board/goto.py, as `panewatch attach` does it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input, Static

from panewatch.board import goto
from panewatch.board.model import Card, decided_by, format_duration, stands_for_agent
from panewatch.board.rpc import RemoteError
from panewatch.runtime.tmux import TmuxServer
from panewatch.tui import rows as R
from panewatch.tui.dialogs import DIALOG_CSS, ConfirmAnswer, Help, ReportWrong
from panewatch.tui.feed import Feed, Preview

ARRANGE = 0.2  # seconds: rows re-ordered at most this often while cards change
TICK = 1.0  # seconds: the "for how long" column moves on
PREVIEW_EVERY = 0.1  # seconds: the preview redrawn at most this often while its pane writes
PREVIEW_SWITCH = 0.15  # seconds the selection rests on a pane before its screen stream is opened
RESERVED = frozenset("jkbgGqrO")  # keys of the view itself: never an option's letter
PLAIN = Style()  # a segment's style is never None (Textual's NO_COLOR filter reads it)


class PaneList(ScrollView, can_focus=True):
    """The rows, one line each; the selected one marked ▶ and reversed (readable without colour)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "panelist--cursor", "panelist--dim", "panelist--state-blocked", "panelist--state-working",
        "panelist--state-idle", "panelist--state-exited", "panelist--state-unreachable"}
    DEFAULT_CSS = """
    PaneList { height: 1fr; min-height: 3; scrollbar-size-vertical: 1; }
    PaneList > .panelist--cursor { text-style: reverse bold; }
    PaneList > .panelist--dim { color: $text-muted; }
    PaneList > .panelist--state-blocked { color: $error; text-style: bold; }
    PaneList > .panelist--state-working { color: $warning; }
    PaneList > .panelist--state-idle { color: $success; }
    PaneList > .panelist--state-exited { color: $text-muted; }
    PaneList > .panelist--state-unreachable { color: $secondary; }
    """

    def __init__(self) -> None:
        super().__init__(id="panes")
        self.rows: list[Card] = []
        self.selected: str | None = None
        self.empty = "waiting for the daemon"
        self._at: dict[str, int] = {}  # pane id -> its row
        self._drawn: dict[int, tuple[bool, tuple[R.Cell, ...]] | None] = {}  # row -> what its line shows
        self.lines_drawn = 0  # lines rendered (the bench, tests)

    def show(self, rows: list[Card]) -> None:
        self.rows = rows
        self._at = {str(card.get("id")): i for i, card in enumerate(rows)}
        self.virtual_size = Size(self.size.width, len(rows))
        self.redraw_changed()

    def redraw_changed(self) -> None:
        """Redraw the visible lines whose content changed (a row moved, a state, the time in it): at a thousand
        panes changing, a frame costs the lines that changed, not the screen."""
        width = max(1, self.scrollable_content_region.width - 1)
        top = int(self.scroll_offset.y)
        now = time.time()
        drawn: dict[int, tuple[bool, tuple[R.Cell, ...]] | None] = {}
        for index in range(top, top + max(1, self.scrollable_content_region.height)):
            card = self.rows[index] if index < len(self.rows) else None
            drawn[index] = None if card is None else (str(card.get("id")) == self.selected,
                                                     tuple(R.cells(card, width, now)))
            if self._drawn.get(index, ()) != drawn[index]:
                self.refresh_line(index)
        if not self.rows:
            self.refresh()
        self._drawn = drawn

    @property
    def index(self) -> int | None:
        return None if self.selected is None else self._at.get(self.selected)

    def keep_visible(self) -> None:
        index = self.index
        if index is None:
            return
        top = int(self.scroll_offset.y)
        height = max(1, self.scrollable_content_region.height)
        if index < top:
            self.scroll_to(y=index, animate=False)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False)

    def render_line(self, y: int) -> Strip:
        self.lines_drawn += 1
        width = self.scrollable_content_region.width
        index = int(self.scroll_offset.y) + y
        if not self.rows:
            return Strip([Segment(R.plain(self.empty) if y == 0 else "", self.get_component_rich_style(
                "panelist--dim"))]).extend_cell_length(width, PLAIN).crop(0, width)
        if index >= len(self.rows):
            return Strip.blank(width, PLAIN)
        card = self.rows[index]
        chosen = str(card.get("id")) == self.selected
        segments = [Segment("▶" if chosen else " ", PLAIN)]
        drawn = self._drawn.get(index)  # the cells redraw_changed just made, when it asked for this line
        cells = drawn[1] if drawn is not None and drawn[0] == chosen else R.cells(card, max(1, width - 1), time.time())
        for cell in cells:
            style = self.get_component_rich_style(f"panelist--{cell.style}") if cell.style else PLAIN
            segments.append(Segment(cell.text, style))
        strip = Strip(segments).extend_cell_length(width, PLAIN).crop(0, width)
        if chosen:
            strip = strip.apply_style(self.get_component_rich_style("panelist--cursor"))
        return strip

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, len(self.rows))
        self._drawn = {}


class FilterInput(Input):
    """`/`: the filter, live; Enter keeps it, Esc clears it."""

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            self.value = ""
            self.app.call_later(self.app.action_close_filter)  # type: ignore[attr-defined]


class TopApp(App[int]):
    """`panewatch top` (`popup`: inside a tmux popup, going to a pane closes it)."""

    TITLE = "panewatch top"
    CSS = DIALOG_CSS + """
    Screen { layout: vertical; }
    #header { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    #notes { height: auto; max-height: 3; padding: 0 1; color: $text-muted; display: none; }
    #detail { height: auto; max-height: 8; padding: 0 1; border-top: solid $panel; }
    #preview { height: 40%; min-height: 4; padding: 0 1; border-top: solid $panel; color: $text-muted; }
    #status { height: auto; max-height: 3; padding: 0 1; background: $panel; }
    #filter { display: none; height: 3; }
    .short #preview { display: none; }
    .short #detail { max-height: 5; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "move(1)", "down", show=False),
        Binding("k,up", "move(-1)", "up", show=False),
        Binding("pagedown", "move(10)", show=False),
        Binding("pageup", "move(-10)", show=False),
        Binding("g,home", "edge(0)", show=False),
        Binding("G,end", "edge(1)", show=False),
        Binding("b", "next_blocked", "next blocked"),
        Binding("enter", "go", "go there"),
        Binding("slash", "filter", "filter"),
        Binding("r", "report", "state is wrong"),
        Binding("O", "others", "other panes", show=False),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        *(Binding(str(n), f"option('{n}')", show=False) for n in range(1, 10)),
    ]

    def __init__(self, *, popup: bool = False, inside: str | None = None, client: str | None = None,
                 autostart: bool = True) -> None:
        # NO_COLOR (no-color.org): no colour at all, not Textual's grey shades of it; states read by their mark
        # and word, the selection by ▶ and reverse video
        super().__init__(ansi_color=True if os.environ.get("NO_COLOR") is not None else None)
        self.popup = popup
        self.inside = inside  # the tmux server we run in ($TMUX's socket): Enter switches the user's client
        self.client = client  # the tmux client to switch (-c), when said
        self.autostart = autostart
        self.cards: dict[str, Card] = {}
        self.filter_text = ""
        self.others = False
        self.notes: list[str] = []
        self.message = ""  # the status line's news (tests read it)
        self.feed = Feed(self._on_cards, self._on_lost, self._on_back)
        self.preview: Preview | None = None
        self._dirty = False
        self._arrange_timer: Any = None
        self._preview_timer: Any = None
        self._preview_due = False
        self._confirming: ConfirmAnswer | None = None
        self._shown: dict[str, Text] = {}  # what each Static shows: updated only when it changes

    # -- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("panewatch top", id="header")
        yield Static("", id="notes")
        yield PaneList()
        yield Static("", id="detail")
        yield Static("", id="preview")
        yield FilterInput(placeholder="filter: name, agent, target, directory, state", id="filter")
        yield Static("", id="status")

    @property
    def pane_list(self) -> PaneList:
        return self.query_one(PaneList)

    async def on_mount(self) -> None:
        self.pane_list.focus()
        self._fit(self.size.width, self.size.height)
        self.say("")
        self.set_interval(TICK, self._tick)
        try:
            first = await self.feed.start(autostart=self.autostart)
        except RemoteError as exc:
            self.pane_list.empty = str(exc)
            self.pane_list.refresh()
            self.say(f"{exc} (q quits)")
            return
        self._on_back(first)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        """A short terminal (a popup) gives the list the room: no preview under 22 rows."""
        self.screen.set_class(height < 22, "short")

    async def on_unmount(self) -> None:
        if self.preview is not None:
            await self.preview.close()
        await self.feed.close()

    # -- cards ---------------------------------------------------------------------------------------

    @property
    def _shutting_down(self) -> bool:
        """A timer or the feed may still call back while the app takes its screen down: then they do nothing."""
        return not self.is_running

    def _on_back(self, first: dict[str, Any]) -> None:
        if self._shutting_down:
            return
        self.cards = {str(c["id"]): c for c in first.get("cards") or [] if isinstance(c, dict) and "id" in c}
        hosts = first.get("hosts") or {}
        self.notes = [R.plain(n) for n in first.get("notes") or []] + [
            R.plain(f"host {label}: link {link.get('link')} {link.get('error') or ''}".strip())
            for label, link in sorted(hosts.items()) if isinstance(link, dict) and link.get("link") != "up"]
        notes = self.query_one("#notes", Static)
        notes.update(Text("\n".join(self.notes)))
        notes.display = bool(self.notes)
        self.pane_list.empty = "no panes (start one with `panewatch run -- CMD`, or in any tmux pane)"
        back = self.message.startswith("the panewatch daemon went away")
        self._arrange()
        if back:
            self.say("the daemon is back")

    def _on_lost(self, why: str) -> None:
        if self._shutting_down:
            return
        self.say(why)

    def _on_cards(self, cards: list[Card], gone: list[str]) -> None:
        if self._shutting_down:
            return
        for card in cards:
            self.cards[str(card["id"])] = card
        for pane_id in gone:
            self.cards.pop(pane_id, None)
        if self._confirming is not None and str(self._confirming.card.get("id")) in gone:
            self._confirming.dismiss(False)
            self.say(f"pane {self._confirming.card.get('id')} went away: nothing was typed")
        if self.pane_list.selected in gone or self.pane_list.selected in {str(c["id"]) for c in cards}:
            self._arrange()  # the selected pane moved or vanished: at once
            return
        self._dirty = True
        if self._arrange_timer is None:
            self._arrange_timer = self.set_timer(ARRANGE, self._arrange)

    def _arrange(self) -> None:
        if self._shutting_down:
            return
        self._arrange_timer = None
        self._dirty = False
        pane_list = self.pane_list
        before = pane_list.index
        rows = R.arrange(self.cards.values(), self.filter_text, self.others)
        pane_list.show(rows)
        if pane_list.selected is not None and pane_list.index is None:
            gone = pane_list.selected
            pane_list.selected = None
            if gone not in self.cards and not self.message.startswith(f"pane {gone} went away"):
                self.say(f"pane {gone} is gone")
            if rows:
                pane_list.selected = str(rows[min(before or 0, len(rows) - 1)]["id"])
        elif pane_list.selected is None and rows:
            pane_list.selected = str(rows[0]["id"])
        self._header()
        self._selection_changed()

    def _header(self) -> None:
        shown = f"   filter: {self.filter_text}" if self.filter_text else ""
        self._update("header", Text(f"panewatch · {R.summary(self.cards.values())}{shown}"), layout=False)

    def _tick(self) -> None:
        if self._shutting_down:
            return
        self.pane_list.redraw_changed()  # the "for how long" column
        self._detail()

    def _update(self, widget_id: str, text: Text, layout: bool = True) -> None:
        """A Static's new content, if it is new (an update may lay the screen out again: `layout` False for a
        widget whose size its content does not change)."""
        if self._shown.get(widget_id) == text:
            return
        self._shown[widget_id] = text
        self.query_one(f"#{widget_id}", Static).update(text, layout=layout)

    # -- the selection -------------------------------------------------------------------------------

    @property
    def selected_card(self) -> Card | None:
        selected = self.pane_list.selected
        return self.cards.get(selected) if selected is not None else None

    def select(self, pane_id: str | None) -> None:
        if pane_id is None or pane_id == self.pane_list.selected:
            return
        self.pane_list.selected = pane_id
        self.pane_list.keep_visible()
        self.pane_list.redraw_changed()
        self._selection_changed()

    def _selection_changed(self) -> None:
        self.pane_list.keep_visible()
        self._detail()
        selected = self.pane_list.selected
        if self.preview is not None and self.preview.pane_id == selected:
            return
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_SWITCH, self._switch_preview)

    async def _switch_preview(self) -> None:
        if self._shutting_down:
            return
        self._preview_timer = None
        old, self.preview = self.preview, None
        if old is not None:
            await old.close()
        card = self.selected_card
        preview_widget = self.query_one("#preview", Static)
        if card is None or card.get("state") == "exited" or not preview_widget.display:
            self._update("preview", Text(), layout=False)
            return
        self.preview = Preview(str(card["id"]), self._preview_changed)
        await self.preview.start(int(card.get("cols") or 80), int(card.get("rows") or 24))

    def _preview_changed(self) -> None:
        if self._preview_due:
            return
        self._preview_due = True
        self.set_timer(PREVIEW_EVERY, self._draw_preview)

    def _draw_preview(self) -> None:
        if self._shutting_down:
            return
        self._preview_due = False
        widget = self.query_one("#preview", Static)
        preview = self.preview
        if preview is None:
            return
        if preview.error:
            self._update("preview", Text(R.plain(preview.error)), layout=False)
            return
        snapshot = preview.snapshot()
        if snapshot is None:
            return
        lines = list(snapshot.rows)
        while lines and not lines[-1].strip():
            lines.pop()
        height = max(1, widget.content_region.height or widget.size.height)
        self._update("preview", Text("\n".join(R.plain(line) for line in lines[-height:]), no_wrap=True,
                                     overflow="crop"), layout=False)

    def _detail(self) -> None:
        card = self.selected_card
        if card is None:
            self._update("detail", Text())
            return
        text = Text()
        state = str(card.get("state"))
        text.append(f"{R.MARKS.get(state, '·')} {state} {format_duration(time.time() - float(card.get('since') or 0))}",
                    style="bold")
        text.append(f"  {R.plain(card.get('name') or card.get('id'))} (id {R.plain(card.get('id'))})")
        if stands_for_agent(card):
            text.append(" · " + R.plain(R.agent_text(card)))
            if card.get("unverified"):
                text.append(f" ({R.plain(card['unverified'])})", style="italic")
        elif card.get("kind") == "view":
            text.append(" · " + R.plain(R.view_text(card)))
        place = R.where_text(card) if card.get("target") else ""
        cwd = R.short_path(str(card.get("cwd") or ""))
        text.append("\n" + R.plain(" · ".join(p for p in (place, cwd) if p)) + "\n")
        text.append(R.plain(f"decided by {decided_by(card)}"))
        prompt = card.get("prompt") or {}
        if state == "blocked" and prompt:
            text.append("\n" + R.plain(prompt.get("question") or "(question not on screen)"), style="bold")
            for option in prompt.get("options") or []:
                key = str(option.get("key") or "").rstrip("\r")
                letter = f" ({key})" if len(key) == 1 and key.isalpha() and key not in RESERVED else ""
                text.append("\n" + R.plain(f"  {option.get('number')}. {option.get('label')}{letter}"))
        answer = card.get("answer")
        if isinstance(answer, dict):
            text.append("\n" + R.plain(f"last answer {answer.get('option')}: {answer.get('outcome')}"), style="italic")
        self._update("detail", text)

    # -- keys ----------------------------------------------------------------------------------------

    def action_move(self, step: int) -> None:
        rows = self.pane_list.rows
        if not rows:
            return
        index = self.pane_list.index
        index = 0 if index is None else max(0, min(len(rows) - 1, index + step))
        self.select(str(rows[index]["id"]))

    def action_edge(self, last: int) -> None:
        rows = self.pane_list.rows
        if rows:
            self.select(str(rows[-1 if last else 0]["id"]))

    def action_next_blocked(self) -> None:
        found = R.next_blocked(self.pane_list.rows, self.pane_list.selected)
        if found is None:
            self.say("no pane is blocked" + (" (the filter hides some panes)" if self.filter_text else ""))
            return
        self.select(found)

    def on_key(self, event: events.Key) -> None:
        """An option's letter on a blocked pane (Codex's `y`, Aider's `n`): its confirmation."""
        char = event.character or ""
        if len(char) == 1 and char.isalpha() and char not in RESERVED and self.screen is self.screen_stack[0] \
                and self.focused is self.pane_list and R.option_for_key(self.selected_card, char) is not None:
            event.stop()
            event.prevent_default()
            self.action_option(char)

    def action_option(self, key: str) -> None:
        card = self.selected_card
        if card is None:
            return
        if card.get("state") != "blocked" or not stands_for_agent(card):
            what = "not an agent" if not stands_for_agent(card) else str(card.get("state"))
            self.say(f"pane {card.get('id')} is {what}: there is no prompt to answer")
            return
        option = R.option_for_key(card, key)
        if option is None:
            self.say(f"the prompt of pane {card.get('id')} has no option {key}")
            return
        dialog = ConfirmAnswer(card, option)
        self._confirming = dialog

        async def confirmed(yes: bool | None) -> None:
            self._confirming = None
            if yes:
                await self._answer(dialog.card, dialog.option, dialog.fingerprint)
            elif str(card.get("id")) in self.cards and not self.message.endswith("nothing was typed"):
                self.say(f"not answered: pane {card.get('id')}")

        self.push_screen(dialog, confirmed)

    async def _answer(self, card: Card, option: dict[str, Any], fingerprint: str) -> None:
        pane_id = str(card.get("id"))
        label = f"{option.get('number')}. {R.plain(option.get('label') or '')}"
        self.say(f"answering pane {pane_id}: {label} …")
        try:
            result = await self.feed.request("answer", pane=pane_id, option=str(option.get("number")),
                                             fingerprint=fingerprint)
        except RemoteError as exc:
            if exc.kind == "prompt_changed":
                self.say(f"refused: pane {pane_id}'s prompt changed since it was shown; nothing was typed "
                         "(its new prompt is below)")
            else:
                self.say(f"refused ({exc.kind}): {R.plain(exc)}")
            return
        outcome = R.plain(result.get("outcome") or ("applied" if result.get("applied") else "not applied"))
        self.say(f"answered pane {pane_id}: {label}: {outcome}")

    async def action_go(self) -> None:
        card = self.selected_card
        if card is None:
            return
        route = await goto.route(card, self.feed.request, inside=self.inside, client=self.client)
        if route.how == "say":
            self.say(route.message)
            return
        if route.how == "switch":
            done = await _run(route.argv, goto.run_env(route))
            if done:
                self.say(f"tmux: {done}")
            elif self.popup:
                self.exit(0)
            else:
                self.say(f"switched to {R.plain(route.target)}")
            return
        if self.popup and self.inside:  # a tmux popup: the pane opens in a window of its own, the popup closes
            argv = ("env", "-u", "TMUX", *route.argv) if route.unset_tmux else route.argv
            done = await _run(tuple(TmuxServer(socket_path=self.inside).argv("new-window", "-n", "panewatch",
                                                                               *argv)), dict(os.environ))
            if done:
                self.say(f"tmux: {done}")
            else:
                self.exit(0)
            return
        try:
            with self.suspend():
                if route.message:
                    print(f"panewatch: {route.message}", flush=True)
                subprocess.run(list(route.argv), env=goto.run_env(route), check=False)
        except Exception as exc:  # SuspendNotSupported (no terminal), the command missing
            self.say(f"cannot show pane {card.get('id')} here: {R.plain(exc)}")
            return
        self.say(f"back from {R.plain(route.target)}")

    def action_filter(self) -> None:
        box = self.query_one(FilterInput)
        box.display = True
        box.value = self.filter_text
        box.focus()

    def action_close_filter(self) -> None:
        box = self.query_one(FilterInput)
        self.filter_text = box.value
        box.display = False
        self.pane_list.focus()
        self._arrange()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self._arrange()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_close_filter()

    def action_others(self) -> None:
        self.others = not self.others
        self.say("showing the panes that hold no agent" if self.others else "agents and views only")
        self._arrange()

    def action_report(self) -> None:
        card = self.selected_card
        if card is None:
            return

        async def chosen(expected: str | None) -> None:
            if expected is None:
                return
            try:
                result = await self.feed.request("report_wrong", pane=str(card["id"]), expected=expected or None)
            except RemoteError as exc:
                self.say(f"not saved ({exc.kind}): {R.plain(exc)}")
                return
            self.say(f"saved as a case: {R.plain(result.get('path') or '')}")

        self.push_screen(ReportWrong(card), chosen)

    def action_help(self) -> None:
        self.push_screen(Help())

    def say(self, message: str) -> None:
        self.message = message
        keys = "j/k · b blocked · ⏎ go · 1-9 answer · / filter · r wrong · ? help · q quit"
        self._update("status", Text(message or keys))


async def _run(argv: tuple[str, ...], env: dict[str, str]) -> str:
    """Run a quick command (tmux switch-client, new-window): "" when it worked, else what it said."""
    try:
        proc = await asyncio.create_subprocess_exec(*argv, env=env, stdin=subprocess.DEVNULL,
                                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), 10)
    except (OSError, TimeoutError) as exc:
        with contextlib.suppress(Exception):
            proc.kill()
        return str(exc) or "no answer"
    return "" if proc.returncode == 0 else (err.decode("utf-8", "replace").strip() or f"exit {proc.returncode}")
