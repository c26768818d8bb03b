"""`panewatch top`'s dialogs: an answer's confirmation, "this state is wrong", and help.

The confirmation shows the prompt as it was when the key was pressed (question, options with the chosen one
marked, fingerprint) and returns it unchanged: the answer is bound to that fingerprint, so a prompt that changed
meanwhile is refused by the guard, never answered blind.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from panewatch.board.model import Card
from panewatch.tui.rows import plain

DIALOG_CSS = """
ModalScreen { align: center middle; }
ModalScreen > VerticalScroll {
    width: 90%; max-width: 100; height: auto; max-height: 90%;
    border: round $accent; padding: 0 1; background: $surface;
}
ModalScreen .keys { color: $text-muted; margin-top: 1; }
"""


class ConfirmAnswer(ModalScreen[bool]):
    """Enter: answer with this option, bound to the fingerprint shown; Esc: nothing is typed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "confirm", "answer"), Binding("escape", "cancel", "cancel"),
        Binding("n", "cancel", show=False), Binding("q", "cancel", show=False)]

    def __init__(self, card: Card, option: dict[str, Any]) -> None:
        super().__init__()
        self.card = card
        self.option = option
        self.prompt: dict[str, Any] = dict(card.get("prompt") or {})

    @property
    def fingerprint(self) -> str:
        return str(self.prompt.get("fingerprint") or "")

    def compose(self) -> ComposeResult:
        card = self.card
        text = Text()  # rich Text, never markup: an agent's `[b]` or a pane named `[red]` stays text
        text.append(f"Answer pane {plain(card.get('id'))}", style="bold")
        text.append(f" ({plain(card.get('name') or '')}, {plain(card.get('agent') or 'agent unknown')})?\n\n")
        text.append(plain(self.prompt.get("question") or "(question not on screen)") + "\n")
        for option in self.prompt.get("options") or []:
            chosen = option.get("number") == self.option.get("number")
            line = f"{'▶' if chosen else ' '} {option.get('number')}. {plain(option.get('label') or '')}"
            text.append(line, style="reverse bold" if chosen else "")
            text.append("\n")
        text.append(f"fingerprint {plain(self.fingerprint)}")
        with VerticalScroll(id="confirm"):
            yield Static(text, id="confirm-text")
            yield Static("Enter: answer   Esc: cancel (nothing is typed)", classes="keys")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


EXPECTED = {"b": "blocked", "w": "working", "i": "idle", "e": "exited"}


class ReportWrong(ModalScreen[str | None]):
    """'This state is wrong': which state it should be (or none said), saved as a golden case by the daemon."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel"), Binding("enter", "save", "save"),
        *(Binding(key, f"expect('{state}')", state) for key, state in EXPECTED.items())]

    def __init__(self, card: Card) -> None:
        super().__init__()
        self.card = card

    def compose(self) -> ComposeResult:
        state = plain(self.card.get("state"))
        with VerticalScroll():
            yield Static(Text.assemble((f"Pane {plain(self.card.get('id'))} is {state}: what should it be?", "bold"),
                                       "\nb blocked · w working · i idle · e exited\n"
                                       "The pane's recent screen is saved as a case for the rules (secrets masked)."))
            yield Static("Enter: save without saying   Esc: cancel", classes="keys")

    def action_expect(self, state: str) -> None:
        self.dismiss(state)

    def action_save(self) -> None:
        self.dismiss("")

    def action_cancel(self) -> None:
        self.dismiss(None)


HELP = """[b]panewatch top[/b]: every pane the daemon watches, blocked first

j k ↑ ↓     move                  g G        first, last
b           next blocked pane      Enter      go there (in tmux: switch to it)
1…9, y n …  answer the selected blocked pane (a confirmation first)
/           filter (Enter keeps it, Esc clears it)
r           this state is wrong (saves a case for the rules)
O           show or hide the panes that hold no agent
?           this help              q          quit

States: ⚠ blocked (waits on you) · ● working · ○ idle · ✕ exited · ? unreachable.
An agent version marked * is not verified by panewatch's rules."""


class Help(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark,enter", "close", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP)
            yield Static("any of Esc q ? Enter closes", classes="keys")

    def action_close(self) -> None:
        self.dismiss(None)
