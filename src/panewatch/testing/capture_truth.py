"""Ground truth for a captured session, without panewatch's classifier (that would be circular).

What a capture knows for certain, and how each state's start is derived from it:

* the **scenario** (mock/scenario.py): which tool calls the mock makes, hence which dialogs must
  appear and how many; the trap scenario makes none, so nothing in it can be blocked;
* the **mock's events** on the cast's clock: `reply_sent` with `stop_reason` tool_use opens a window
  in which a dialog may show, the next `request` (the tool's result coming back) closes it; the
  `end_turn` reply is the last thing the agent receives in the turn (Aider, which calls no tools,
  asks its questions after it: for Aider that reply opens the window);
* **literal strings** each agent prints (AgentProfile): the dialog's own question, a busy marker
  shown only while a turn runs, and the ready composer.

Replaying the cast's output on an emulated screen (the pane's view, frame by frame):

    ignore   from 0 (start-up) until the composer shows and the output pauses for SETTLE; when the
             driver marked the start-up `settled` (it waits for a longer quiet before typing), until
             the last frame before that mark: a CLI may still animate after a short pause (Codex
             0.171.0 spins its title ~0.8 s after drawing the composer)
    idle     from that frame
    working  from the first frame after the prompt's Enter that shows the busy marker (a line REPL,
             Aider: from the first frame after the Enter, which takes the line)
    blocked  from the first frame, inside a tool window, that shows the scenario's dialog question,
             to the first frame where it is gone (working again from there); a gap shorter than
             FLICKER between two such stretches is no gap (a redraw split across two reads)
    idle     from the first frame after the end_turn reply that shows the composer with neither
             the busy marker (below the final reply's text: a reply may quote one) nor a dialog
             (after a refused dialog that ended the turn: as the dialog goes, unless the agent shows
             itself busy longer than FLICKER first; then from the first such frame)
    ignore   from the driver's `exit` marker (SIGTERM; the agent tears its screen down)

Working therefore spans quiet tool calls and the model's silences: the scenario says the turn is
running until the final reply, whatever the screen looks like meanwhile.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from panewatch.core.cast import Cast
from panewatch.core.screen import Screen, Snapshot
from panewatch.errors import PanewatchError


class TruthError(PanewatchError, ValueError):
    """The recording does not show what the scenario says must happen (see the message)."""


@dataclass(frozen=True, slots=True)
class Frame:
    t: float
    text: str  # visible rows joined by newlines


def frames(cast: Cast) -> list[Frame]:
    """The visible screen after every output (or resize) event, as plain text."""
    screen = Screen(cast.header.width, cast.header.height)
    out: list[Frame] = []
    for event in cast.events:
        if event.kind == "o":
            screen.feed(event.data.encode("utf-8", "surrogateescape"))
        elif event.kind == "r" and (size := event.size) is not None:
            screen.resize(*size)
        else:
            continue
        out.append(Frame(event.t, _text(screen.snapshot())))
    return out


# Marks a row the agent filled to the last column and went on from at the start of the next (a line editor
# breaking its own line: Aider's prompt_toolkit puts '[Y' at the edge and 'es]:' below).
EDGE = "\x00"
_NOT_TEXT_EDGE = frozenset("│┃║─━═╌╍┄┅┈┉▔▁▀▄█▌▐╮╯┐┘┤ ")


def screen_text(snapshot: Snapshot) -> str:
    """The screen as literals read it: one line per logical line (rows the terminal soft-wrapped joined),
    each ending with a newline, so a literal can say "at the end of a line" (Aider's '[Yes]:\n'); a row
    of text that reaches the last column ends with EDGE instead (`shows` reads it on into the next row)."""
    out = []
    for _, line in snapshot.lines():
        full = snapshot.width > 0 and len(line) >= snapshot.width and line[-1:] not in _NOT_TEXT_EDGE
        out.append(line + (EDGE if full and line.isascii() else "\n"))
    return "".join(out)


_text = screen_text

# Vertical box edges: a literal inside a bordered box (Gemini's, Copilot's dialogs) that the agent broke
# over two rows reads '│ Allow execution │\n│ of [Shell]? │'.
_BORDERS = str.maketrans("", "", "│┃║╎╏┆┇┊┋")


@functools.lru_cache(maxsize=256)
def flow(text: str) -> str:
    """Text as a person reads it across rows: box edges dropped, every run of blanks and line breaks one
    space, a row broken at the edge (EDGE) joined to the next. An agent breaks its own lines to the pane's
    width (Ink, ratatui), so at 40 columns 'Would you like to run the following command?' is two rows: the
    words are the same."""
    return " ".join(text.replace(EDGE, "").translate(_BORDERS).split())


def shows(text: str, literal: str) -> bool:
    """`literal` on the screen `text` (screen_text), as drawn or broken across rows. A literal with a line
    break in it ('\n>\n': a row that is the prompt alone) means the rows exactly."""
    if literal in text:
        return True
    if "\n" in literal:
        return EDGE in text and literal in text.replace(EDGE, "")
    return flow(literal) in flow(text) or (EDGE in text and flow(literal) in flow(text.replace(EDGE, " ")))


def _shows(text: str, literals: Iterable[str]) -> bool:
    return any(shows(text, lit) for lit in literals)


def marker_time(cast: Cast, label: str) -> float | None:
    return next((e.t for e in cast.events if e.kind == "m" and e.data == label), None)


@dataclass(frozen=True, slots=True)
class Literals:
    ready: tuple[str, ...]  # the composer, waiting for a task
    busy: tuple[str, ...]  # shown only while a turn runs
    dialog: tuple[str, ...]  # the scenario's dialog question(s); empty: no dialog expected
    final: str = ""  # text of the turn's final reply (capture.final_literal); empty: not known


def busy_shown(text: str, busy: Iterable[str], final: str = "") -> bool:
    """A busy marker on screen, not counting the final reply's own text: a reply may quote one (the prose
    scenario quotes Codex's 'esc to cancel', Qwen's own marker), while the agent draws its marker below
    the reply (spinner row, footer). Without the final text on screen, anywhere counts."""
    at = text.rfind(final) if final else -1
    if final and at < 0:  # the final text broken across rows: read the flowed screen
        flowed = flow(text)
        at = flowed.rfind(flow(final))
        if at >= 0:
            return any(flow(b) in flowed[at + len(flow(final)):] for b in busy)
    return _shows(text[at + len(final):] if at >= 0 else text, busy)


def tool_windows(mock_events: Sequence[dict[str, Any]]) -> list[tuple[float, float]]:
    """[reply_sent tool_use, next request) intervals: the only times a dialog can be real."""
    windows: list[tuple[float, float]] = []
    for i, ev in enumerate(mock_events):
        if ev.get("event") == "reply_sent" and ev.get("stop_reason") == "tool_use":
            end = next((float(e["t"]) for e in mock_events[i + 1:] if e.get("event") == "request"), float("inf"))
            windows.append((float(ev["t"]), end))
    return windows


SETTLE = 0.3  # seconds without output that end the start-up (see derive_timeline)
FLICKER = 0.15  # seconds: a dialog gone and one back within this is one stretch (a redraw split
# across reads, or the next dialog drawn at once: a person sees no gap)


def dialog_stretches(shots: Sequence[Frame], windows: Sequence[tuple[float, float]], dialog: tuple[str, ...],
                     after: float) -> list[tuple[float, float]]:
    """(drawn, gone) of each dialog that is first drawn inside a tool window (and after `after`).

    It may outlive its window: the agent can send the tool's result before it erases the dialog.
    """
    if not dialog:
        return []
    out: list[tuple[float, float]] = []
    on: float | None = None
    for f in shots:
        showing = _shows(f.text, dialog)
        if on is None and showing and f.t >= after and any(lo <= f.t < hi for lo, hi in windows):
            on = f.t
        elif on is not None and not showing:
            if out and on - out[-1][1] < FLICKER:
                out[-1] = (out[-1][0], f.t)
            else:
                out.append((on, f.t))
            on = None
    if on is not None:
        raise TruthError(f"the dialog drawn at {on:.3f}s never went away")
    return out


def derive_timeline(cast: Cast, mock_events: Sequence[dict[str, Any]], lit: Literals,
                    expected_dialogs: int, *, declined: bool = False, after_reply: bool = False,
                    line_repl: bool = False) -> list[dict[str, Any]]:
    """The truth timeline [{t, state, note}] (see the module docstring). Raises TruthError.

    `declined`: the dialog was answered with a refusal, which may end the turn there (Claude's
    "No", Codex's and Gemini's Esc): without a final reply, idle starts once the dialog is gone.
    `after_reply`: the agent makes no tool calls (Aider): its question (run this command? edit this
    file?) can only come after the final reply, so that reply opens the one window.
    `line_repl`: the agent reads a line (Aider): Enter hands it the prompt, and the frame drawn in
    answer (the cursor leaves the prompt row; no text changes) starts working; the busy marker (its
    spinner) only comes later, once the request is made.
    """
    shots = frames(cast)
    submitted = marker_time(cast, "submitted")
    exit_at = marker_time(cast, "exit")
    if submitted is None or exit_at is None:
        raise TruthError("the cast lacks the driver's 'submitted' or 'exit' marker")
    shots = [f for f in shots if f.t < exit_at]
    timeline: list[dict[str, Any]] = [{"t": 0.0, "state": "ignore", "note": "agent starting"}]

    before = [f for f in shots if f.t < submitted]
    shown = [i for i, f in enumerate(before) if _shows(f.text, lit.ready)]
    if not shown:
        raise TruthError(f"the composer {lit.ready} never showed before the prompt was submitted")
    # Start-up is over once the composer shows and the output pauses: CLIs draw their status, tips
    # and a title spinner (Codex) for a moment after the composer first appears.
    settled = next((i for i in shown if i + 1 == len(before) or before[i + 1].t - before[i].t >= SETTLE
                    ), shown[0])
    quiet_at = marker_time(cast, "settled")  # captures since issue 14; earlier casts have no such mark
    if quiet_at is not None:
        settled = max(settled, max((i for i in shown if before[i].t <= quiet_at), default=settled))
    ready = before[settled]
    timeline.append({"t": ready.t, "state": "idle",
                     "note": f"composer {_first(ready.text, lit.ready)!r} shown, start-up output settled"})

    busy = next((f for f in shots if f.t >= submitted and _shows(f.text, lit.busy)), None)
    if busy is None:
        raise TruthError(f"the busy marker {lit.busy} never showed after the prompt")
    taken = next((f for f in shots if f.t > submitted), busy) if line_repl else busy
    timeline.append({"t": min(taken.t, busy.t), "state": "working",
                     "note": f"prompt submitted at {submitted:.3f}s; " + (
                         "the line taken (first frame after Enter)" if taken.t < busy.t
                         else f"busy marker {_first(busy.text, lit.busy)!r}")})

    windows = tool_windows(mock_events)
    if after_reply:  # no tool calls: the agent's questions come once the final reply is in
        windows = [(float(e["t"]), float("inf")) for e in mock_events
                   if e.get("event") == "reply_sent" and e.get("stop_reason") == "end_turn"][:1]
    stretches = dialog_stretches(shots, windows, lit.dialog, busy.t)
    for on, off in stretches:
        timeline.append({"t": on, "state": "blocked", "note": "dialog drawn"})
        timeline.append({"t": off, "state": "working", "note": "dialog gone (answered)"})
    blocked = len(stretches)
    # Two dialogs drawn back to back with no frame between them read as one blocked stretch.
    if (blocked == 0) != (expected_dialogs == 0) or blocked > expected_dialogs:
        raise TruthError(f"{blocked} dialog(s) seen inside tool windows, the scenario makes {expected_dialogs}")

    final = [float(e["t"]) for e in mock_events if e.get("event") == "reply_sent"
             and e.get("stop_reason") == "end_turn"]
    if not final and not (declined and stretches):
        raise TruthError("the mock never sent the turn's final (end_turn) reply")
    if not final:  # refused, and the agent asked the model nothing more: idle once it has wound the turn down
        # Copilot 1.0.102 shows '● Cancelling', then its 'Working … esc esc interrupt' footer, for a second
        # after the dialog goes; Claude, Codex and Gemini show their composer at once.
        gone = stretches[-1][1]
        back = next((f for f in shots if f.t >= gone and _shows(f.text, lit.ready)
                     and not busy_shown(f.text, lit.busy) and not _shows(f.text, lit.dialog)), None)
        if back is None:
            raise TruthError("the composer never came back after the refused dialog")
        if back.t - gone < FLICKER:  # the composer redrawn a few ms after the dialog: one change to the eye
            timeline[-1] = {"t": gone, "state": "idle", "note": "dialog refused: the turn ended there"}
        else:
            timeline.append({"t": back.t, "state": "idle", "note": "dialog refused: the turn wound down"})
        timeline.append({"t": exit_at, "state": "ignore", "note": "capture over: SIGTERM, the agent exits"})
        return _sorted_unique(timeline)
    after = max(final[-1], timeline[-1]["t"])
    idle = next((f for f in shots if f.t >= after and _shows(f.text, lit.ready)
                 and not busy_shown(f.text, lit.busy, lit.final) and not _shows(f.text, lit.dialog)), None)
    if idle is None:
        raise TruthError("the composer never came back after the final reply")
    if declined and stretches and after == stretches[-1][1] and idle.t - after < FLICKER:
        # Refused after the final reply (Aider asks once the reply is in): the prompt redrawn a few ms after
        # the question is answered is one change to the eye, not a working stretch.
        timeline[-1] = {"t": after, "state": "idle", "note": "dialog refused, the prompt back"}
    else:
        timeline.append({"t": idle.t, "state": "idle", "note": "final reply shown, composer back, busy marker gone"})
    timeline.append({"t": exit_at, "state": "ignore", "note": "capture over: SIGTERM, the agent exits"})
    return _sorted_unique(timeline)


def _first(text: str, literals: Iterable[str]) -> str:
    return next((lit for lit in literals if lit in text), "")


def _sorted_unique(timeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for entry in sorted(timeline, key=lambda e: float(e["t"])):
        entry["t"] = round(float(entry["t"]), 6)
        if out and out[-1]["t"] == entry["t"]:
            out[-1] = entry  # two changes in one frame: the later one is what the frame shows
        else:
            out.append(entry)
    return out
