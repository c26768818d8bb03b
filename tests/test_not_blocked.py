"""Robust beyond the captures: only an agent's real dialog is `blocked`.

For every verified agent, the dialogs of its blocked golden screens are put where an agent's reply or
the user's typing can put them, on that agent's own real idle and typing screens:

* quoted in an assistant reply (the agent's reply indent, a markdown quote, a code block, a list),
  with or without the dialog's own box borders, whole or any part of it;
* typed into the input box and not submitted (continuation lines indented as the composer does);
* numbered markdown lists ("1. Yes / 2. No", the options of each dialog) and horizontal rules
  (`---`, `───`, `═══`, `╌╌╌`) above a quoted dialog.

None of these screens may be blocked; the blocked screens themselves must stay blocked (the control:
the dialogs the generator quotes are ones the rules do recognise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from panewatch.core.classify import classify
from panewatch.core.manifest import Manifest, load_all
from panewatch.core.replay import screens_at
from panewatch.core.screen import Snapshot
from panewatch.golden.cases import GoldenCase, find_cases
from panewatch.testing.capture_truth import marker_time

MANIFESTS = load_all()
# Every verified agent whose screen shape is written down below (SHAPES); NOT_GENERATED says why an agent is not.
NOT_GENERATED: dict[str, str] = {}
VERIFIED = sorted(m.id for m in MANIFESTS if m.verified and m.id not in NOT_GENERATED)
_RULE = re.compile(r"^\s*[╭╰├┌└]?[─━═╌╍┄┅┈┉▔]{8,}[╮╯┤┐┘]?\s*$")
_BORDER = re.compile(r"^[│┃|]\s?|\s?[│┃|]\s*$")


@dataclass(frozen=True)
class Shape:
    """How an agent draws its composer and its replies (what it can really put on screen)."""

    prompt: re.Pattern[str]  # the composer's input row
    first: str  # what precedes typed text on the input row
    cont: str  # what precedes typed continuation rows
    reply: str  # the first row of a reply
    indent: str  # the rows after it


SHAPES = {
    "claude": Shape(re.compile(r"^❯(?:\s|$)"), "❯\u00a0", "  ", "● ", "  "),  # a no-break space after ❯
    "codex": Shape(re.compile(r"^› "), "› ", "  ", "• ", "  "),
    "gemini": Shape(re.compile(r"^ > "), " > ", "   ", "✦ ", "  "),
    "qwen": Shape(re.compile(r"^> "), "> ", "  ", "  ◆ ", "    "),  # its input box sits between two rules
    "copilot": Shape(re.compile(r"^❯(?:\s|$)"), "❯ ", "  ", " ● ", "   "),  # between two rules, like Claude's
    # A line REPL: replies are plain rows, every input row (continuations too) starts with the prompt.
    "aider": Shape(re.compile(r"^>(?: |$)"), "> ", "> ", "", ""),
    # A ┃-bordered box with no marker on its input row: found from the box's `╹▀▀▀` bottom edge (see
    # _composer_row); typed rows keep the box's border; replies are indented, without a border.
    "opencode": Shape(re.compile(r"^\s*╹▀{8,}"), "┃  ", "┃  ", "     ", "     "),
}


def _uses_cursor(agent: str) -> bool:
    """Rules that read the row holding the cursor (Aider's): frame goldens do not record the cursor, so
    this agent's screens come from replaying its casts at the frames' times."""
    return any(rule.region.kind == "cursor" for rule in MANIFESTS.manifests[agent].rules)


def _agent_cases(agent: str) -> list[GoldenCase]:
    return [c for c in find_cases() if c.agent == agent and c.frames()]


def _segments(case: GoldenCase, state: str) -> list[tuple[float, float]]:
    timeline = case.timeline
    ends = [t for t, _ in timeline[1:]] + [float("inf")]
    return [(t, end) for (t, s), end in zip(timeline, ends, strict=True) if s == state]


def _frames(case: GoldenCase, state: str) -> list[Snapshot]:
    frames = [f for f in case.frames() or [] if any(lo <= f["t"] < hi for lo, hi in _segments(case, state))]
    if _uses_cursor(case.agent):
        return screens_at(case.cast(), [f["t"] for f in frames]) if frames else []
    out = []
    for frame in frames:
        rows = list(frame["rows"])
        out.append(Snapshot(tuple(rows), frame["title"], frame["alt_screen"], width=max(map(len, rows)) or 80))
    return out


@cache
def blocked_screens(agent: str) -> tuple[Snapshot, ...]:
    """The screens that show a dialog (a frame in a blocked stretch may be between two dialogs, where a
    hook, not the screen, says blocked)."""
    manifest = MANIFESTS.manifests[agent]
    return tuple(s for c in _agent_cases(agent) for s in _frames(c, "blocked")
                 if classify(s, manifest).state == "blocked" and dialog_lines(s))


@cache
def idle_screens(agent: str) -> tuple[Snapshot, ...]:
    """The screens after a turn ended (a reply above the composer), one per case size."""
    shape, out = SHAPES[agent], []
    for case in _agent_cases(agent):
        frames = [s for s in _frames(case, "idle") if any(shape.prompt.match(r) for r in s.rows)]
        if frames and _has_composer(frames[-1], agent):
            out.append(frames[-1])
    return tuple(out)


def _has_composer(screen: Snapshot, agent: str) -> bool:
    try:
        _transcript_end(list(screen.rows), agent)
    except ValueError:  # no composer frame drawn (a start-up screen)
        return False
    return True


@cache
def typing_screens(agent: str) -> tuple[Snapshot, ...]:
    """The real screen while the driver's prompt was typed and not yet submitted, per trap case."""
    out = []
    for case in _agent_cases(agent):
        if case.truth.get("scenario") != "trap":
            continue
        cast = case.cast()
        submitted = marker_time(cast, "submitted")
        if submitted is not None and _has_composer(screen := screens_at(cast, [submitted - 0.01])[0], agent):
            out.append(screen)
    return tuple(out)


def dialog_lines(screen: Snapshot) -> list[str]:
    """The dialog's text: the bottom non-blank rows, the way it is drawn (a dialog is the last thing drawn)."""
    rows = [r for r in screen.rows if r.strip()]
    return rows[-14:]


def _composer_row(rows: list[str], agent: str) -> int:
    shape = SHAPES[agent]
    at = max(i for i, r in enumerate(rows) if shape.prompt.match(r))
    if agent == "opencode":  # above its edge: a padding row, the model line, a padding row, then the input row
        if at < 3 or not all(rows[i].lstrip().startswith("┃") for i in range(at - 3, at)):
            raise ValueError("no composer box above the edge")
        return at - 3
    return at


def _transcript_end(rows: list[str], agent: str) -> int:
    """The first row of the composer's frame: a reply is drawn above it."""
    at = _composer_row(rows, agent)
    if agent in ("claude", "qwen", "copilot"):  # the rule above the input box
        return max(i for i in range(at) if _RULE.match(rows[i]))
    if agent == "opencode":  # the box's first row
        while at > 0 and rows[at - 1].lstrip().startswith("┃"):
            at -= 1
        return at
    if agent == "gemini":  # the hint rule and the ▄ border above the input row
        top = at - 1 if rows[at - 1].startswith("▄") else at
        return top - 2 if top >= 2 and _RULE.match(rows[top - 2]) else top
    return at


def _fit(rows: list[str], height: int, cursor: tuple[int, int]) -> tuple[tuple[str, ...], tuple[int, int]]:
    """Keep the bottom `height` rows, as a terminal scrolls (the cursor's row moves up with them)."""
    cut = max(0, len(rows) - height)
    kept = rows[cut:] + [""] * (height - len(rows[cut:]))
    return tuple(kept), (cursor[0], max(0, cursor[1] - cut))


def in_reply(base: Snapshot, agent: str, lines: list[str]) -> Snapshot:
    lines = lines or [""]
    rows = list(base.rows)
    end = _transcript_end(rows, agent)
    shape = SHAPES[agent]
    block = ["", shape.reply + lines[0], *(shape.indent + line for line in lines[1:]), ""]
    col, row = base.cursor  # the composer's, below the reply: pushed down by it
    fitted, cursor = _fit(rows[:end] + block + rows[end:], base.height, (col, row + len(block) if row >= end else row))
    return Snapshot(fitted, base.title, base.alt_screen, cursor=cursor, width=base.width)


def typed(base: Snapshot, agent: str, lines: list[str]) -> Snapshot:
    lines = lines or [""]
    rows = list(base.rows)
    at = _composer_row(rows, agent)
    shape = SHAPES[agent]
    first, cont = shape.first, shape.cont
    if agent == "opencode":  # the box's border stays in its column (centred on the start screen)
        first = cont = rows[at][:rows[at].index("┃")] + shape.first
    box = [first + lines[0], *(cont + line for line in lines[1:])]
    # The cursor after the last character typed (what a line REPL's rules read: Aider's).
    fitted, cursor = _fit(rows[:at] + box + rows[at + 1:], base.height, (len(box[-1]), at + len(box) - 1))
    return Snapshot(fitted, base.title, base.alt_screen, cursor=cursor, width=base.width)


def quoted(lines: list[str], style: str) -> list[str]:
    """The dialog as a reply may render it."""
    bare = [_BORDER.sub("", line) for line in lines]
    if style == "as drawn":
        return lines
    if style == "borders off":
        return bare
    if style == "quote":
        return ["> " + line for line in bare]
    if style == "code":
        return ["```", *("    " + line for line in bare), "```"]
    if style == "bullets":
        return ["- " + line.strip() for line in bare if line.strip()]
    if style == "numbered code":  # Gemini numbers the lines of a code block
        return [f"{n:>3} {line}" for n, line in enumerate(bare, 1)]
    raise ValueError(style)


STYLES = ("as drawn", "borders off", "quote", "code", "bullets", "numbered code")
LISTS = (["1. Yes", "2. No"], ["1. Yes, proceed", "2. No"], ["1. Allow once", "2. Allow for this session", "3. No"],
         ["❯ 1. Yes", "  2. No"], ["› 1. Yes, proceed (y)", "  2. No, and tell Codex what to do differently (esc)"],
         ["● 1. Allow once", "  2. Allow for this session"])
RULES = ("---", "***", "─" * 60, "═" * 60, "╌" * 60, "━" * 40)


def _blocked(screen: Snapshot, manifest: Manifest) -> str | None:
    verdict = classify(screen, manifest)
    if verdict.state != "blocked":
        return None
    return f"{verdict.rule} matched {verdict.matched!r} on row {verdict.row}:\n" + "\n".join(
        f"{i:2}|{r}" for i, r in enumerate(screen.rows))


def test_the_generator_has_real_screens_of_every_verified_agent() -> None:
    every = {m.id for m in MANIFESTS if m.verified}
    assert set(VERIFIED) == every - set(NOT_GENERATED) and {"claude", "codex", "gemini"} <= set(VERIFIED), VERIFIED
    for agent in VERIFIED:
        manifest = MANIFESTS.manifests[agent]
        dialog_cases = [c for c in _agent_cases(agent) if _segments(c, "blocked")]
        assert dialog_cases, agent
        # Most captured dialog cases give the generator a screen (a frame may fall between two dialogs,
        # where a hook, not the screen, says blocked), and enough of them to quote every dialog kind.
        quoted = [c for c in dialog_cases
                  if any(classify(s, manifest).state == "blocked" and dialog_lines(s) for s in _frames(c, "blocked"))]
        assert len(quoted) * 4 >= len(dialog_cases) * 3 and len(blocked_screens(agent)) >= 5, (agent, len(quoted))
        assert len(idle_screens(agent)) >= 3 and len(typing_screens(agent)) >= 3, agent
        manifest = MANIFESTS.manifests[agent]
        for screen in (*idle_screens(agent), *typing_screens(agent)):
            assert classify(screen, manifest).state != "blocked", screen.text()


def test_every_dialog_quoted_or_typed_in_every_style_is_not_blocked() -> None:
    failures = []
    for agent in VERIFIED:
        manifest = MANIFESTS.manifests[agent]
        seen: set[tuple[str, ...]] = set()
        for dialog in blocked_screens(agent):
            lines = dialog_lines(dialog)
            if tuple(lines) in seen:
                continue
            seen.add(tuple(lines))
            for style in STYLES:
                text = quoted(lines, style)
                screens = [in_reply(base, agent, text) for base in idle_screens(agent)]
                screens += [typed(base, agent, text) for base in typing_screens(agent)]
                for screen in screens:
                    if (why := _blocked(screen, manifest)) is not None:
                        failures.append(f"{agent} ({style}): {why}")
    assert not failures, f"{len(failures)} non-dialog screens judged blocked:\n" + "\n\n".join(failures)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_part_of_a_dialog_with_lists_and_rules_is_not_blocked(data: st.DataObject) -> None:
    agent = data.draw(st.sampled_from(VERIFIED))
    lines = dialog_lines(data.draw(st.sampled_from(blocked_screens(agent))))
    start = data.draw(st.integers(0, len(lines) - 1))
    part = lines[start:data.draw(st.integers(start + 1, len(lines)))]
    pieces = [quoted(part, data.draw(st.sampled_from(STYLES)))]
    if data.draw(st.booleans()):
        pieces.insert(0, [data.draw(st.sampled_from(RULES))])
    if data.draw(st.booleans()):
        pieces.append(data.draw(st.sampled_from(LISTS)))
    if data.draw(st.booleans()):
        pieces.append([data.draw(st.sampled_from(RULES))])
    text = [line for piece in pieces for line in piece]
    where = data.draw(st.sampled_from(("reply", "typed", "reply, then an answer typed")))
    if where == "reply":
        screen = in_reply(data.draw(st.sampled_from(idle_screens(agent))), agent, text)
    elif where == "typed":
        screen = typed(data.draw(st.sampled_from(typing_screens(agent))), agent, text)
    else:  # the user starts answering the reply's own question ("1. Yes, proceed") in the input box
        base = in_reply(data.draw(st.sampled_from(typing_screens(agent))), agent, text)
        screen = typed(base, agent, data.draw(st.sampled_from(LISTS)))
    why = _blocked(screen, MANIFESTS.manifests[agent])
    assert why is None, why


def test_markdown_lists_and_rules_alone_are_not_blocked() -> None:
    for agent in VERIFIED:
        manifest = MANIFESTS.manifests[agent]
        for items in LISTS:
            for rule in RULES:
                text = [rule, "Would you like me to add a regression test?", "", *items, rule]
                for screen in ([in_reply(b, agent, text) for b in idle_screens(agent)]
                               + [typed(b, agent, text) for b in typing_screens(agent)]):
                    why = _blocked(screen, manifest)
                    assert why is None, f"{agent}: {why}"


# Where each agent's title carries text the user controls: Codex shows the prompt, then the task's
# summary, before the folder; Gemini shows the folder's name.
TITLES = {
    "claude": ["✳ {text}", "◐ {text}"],
    "codex": ["⠴ {text} | ws", "{text} | ws", "⠴ ws | {text}"],
    "gemini": ["◇  Ready ({text})", "✦  Working… ({text})"],
    "qwen": ["Qwen - {text}", "◐︎ Qwen - {text}"],  # the folder name is the user's words
    "copilot": ["{text} - GitHub Copilot"],  # the title is the user's first prompt
    "opencode": ["OC | {text}"],  # the session's name, made from the user's prompt
    "aider": [],  # sets no title: its rules never read one
}


def test_a_title_that_carries_the_users_words_is_not_blocked() -> None:
    for agent in VERIFIED:
        manifest = MANIFESTS.manifests[agent]
        for base in idle_screens(agent):
            for form in TITLES[agent]:
                # (Not the agent's own marker spelled out at the start: "[ ! ] Action Required | …" is Codex's.)
                for words in ("Action Required", "✋ Action Required", "fix Action Required", "Action Required | x"):
                    screen = Snapshot(base.rows, form.format(text=words), base.alt_screen, width=base.width)
                    why = _blocked(screen, manifest)
                    assert why is None, f"{agent} title {screen.title!r}: {why}"
