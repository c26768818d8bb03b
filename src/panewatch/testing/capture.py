"""`panewatch capture`: record a real agent CLI driven by a mock scenario into a golden corpus folder.

    panewatch capture --agent claude --scenario bash [--size 120x32] [--inline] [--out ROOT]

One run: a mock model server (mock/) on loopback, a private home for the pinned CLI (mock/homes.py),
the CLI in a pty (mock/drive.py) on an emulated screen answering its terminal queries; the driver
types `SCN=<scenario> DELAY=<s> …`, holds each dialog a moment, answers it, waits for the idle
composer, then stops the agent. Everything is stamped on one clock (seconds since spawn): the cast's
o/i/r events, the driver's m markers, and the mock's events.

The result goes to ROOT/<agent-dir>/<version>/<case>/{session.cast, truth.json}: truth.json holds
the timeline derived by capture_truth.py (scenario + literal strings + mock events, never our own
classifier) and the mock events. A run that does not follow its scenario writes nothing there.
"""

from __future__ import annotations

import codecs
import functools
import json
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from panewatch.core.cast import CastWriter, read_cast
from panewatch.core.screen import Snapshot
from panewatch.errors import PanewatchError
from panewatch.runtime.version import VersionCache, package_version
from panewatch.testing.capture_truth import Literals, TruthError, busy_shown, derive_timeline, screen_text, shows
from panewatch.testing.drive import PtyAgent
from panewatch.testing.homes import MOCK_KIND, find_agents_bin, prepare
from panewatch.testing.mock import MockServer
from panewatch.testing.mock.scenario import QUOTE_BUSY

STARTUP = 90.0  # a cold first start can be slow (OpenCode 1.18: 30-50 s on a loaded machine)
STEP = 90.0  # one scenario step; OpenCode 1.18 took 25 s from reply to dialog at load 15
HOLD = 1.2  # seconds a dialog (and the final idle screen) stays up before the driver acts
SCORING = ("At cast time t the expected state is the state of the last timeline entry with entry.t <= t. "
           "Entries with state 'ignore' are not scored. A detector is judged on the screen it could see: "
           "t is when the rendered screen first shows the state.")


class CaptureError(PanewatchError, RuntimeError):
    """The run did not go as its scenario says; `kept` is the scratch folder left for a look."""

    def __init__(self, message: str, kept: Path | None = None) -> None:
        super().__init__(message + (f" (recording kept in {kept})" if kept else ""))
        self.kept = kept


@dataclass(frozen=True)
class AgentProfile:
    """What the capture driver and the truth need to know about one CLI: literal strings only."""

    agent: str
    corpus_dir: str  # folder name under the corpus root
    package: str  # npm package, for the version
    ready: tuple[str, ...]
    busy: tuple[str, ...]
    dialogs: dict[str, tuple[str, int]]  # scenario -> (dialog literal, how many dialogs)
    answer: str  # the key that allows once
    inline_args: tuple[str, ...] = ()
    inline_env: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)  # per-scenario key, when not `answer`
    refuse: str = "\x1b"  # the key that refuses a dialog (a line REPL takes no Esc: Aider's 'n' + Enter)
    python: bool = False  # a PyPI package in its own venv (install-agents), not an npm one
    questions_after_reply: bool = False  # no tool calls: the agent asks after the model's final reply (Aider)
    line_repl: bool = False  # Enter hands the line over: working from the frame after it (Aider)
    # Every dialog's own last rows, shown when a short pane leaves no room for its question (an inline box
    # taller than the screen: Copilot at 40x12 keeps only its options and key hint in view).
    dialog_hint: str = ""

    def dialog_literals(self, scenario: str) -> tuple[str, ...]:
        literal = self.dialogs.get(scenario, ("", 0))[0]
        return tuple(lit for lit in (literal, self.dialog_hint if literal else "") if lit)


PROFILES: dict[str, AgentProfile] = {
    "claude": AgentProfile(
        "claude", "claude-code", "@anthropic-ai/claude-code",
        ready=("? for shortcuts", "plan mode on"),
        busy=("esc to interrupt",),
        dialogs={"bash": ("Do you want to proceed?", 1),
                 "edit": ("Do you want to make this edit to hello.py?", 1),
                 "write": ("Do you want to create new_file.txt?", 1),
                 "plan": ("Exit plan mode?", 1),
                 "ask": ("Enter to select · ↑/↓ to navigate", 1),
                 "multi": ("Do you want to proceed?", 2),
                 "trap": ("", 0)},
        answer="1",
        inline_env={"CLAUDE_CODE_DISABLE_ALTERNATE_SCREEN": "1"},
    ),
    "codex": AgentProfile(
        "codex", "codex", "@openai/codex",
        ready=("Ask Codex to do anything",),
        busy=("esc to interrupt",),
        dialogs={"bash": ("Would you like to run the following command?", 1),
                 "edit": ("Would you like to run the following command?", 1),
                 "multi": ("Would you like to run the following command?", 2),
                 "trap": ("", 0)},
        answer="y",
        inline_args=("--no-alt-screen",),
    ),
    "gemini": AgentProfile(
        "gemini", "gemini-cli", "@google/gemini-cli",
        ready=("Type your message",),
        busy=("esc to cancel",),
        dialogs={"bash": ("Allow execution of [Shell]?", 1),
                 "edit": ("Apply this change?", 1),
                 "write": ("Apply this change?", 1),
                 "ask": ("Enter to select · ↑/↓ to navigate", 1),
                 "multi": ("Allow execution of [Shell]?", 2),
                 "trap": ("", 0)},
        answer="\r",  # the first option (Allow once) is selected
    ),
    "qwen": AgentProfile(
        "qwen", "qwen-code", "@qwen-code/qwen-code",
        # After a turn the composer's placeholder gives way to a suggested next prompt (a side call the
        # mock answers with "Mock summary."); the mode line under the composer stays.
        ready=("Type your message or @path/to/file", "(shift + tab to cycle)"),
        # The footer offers "Ctrl+Q to queue" from the moment the prompt is taken (queued while the turn
        # starts, then "Enter to steer · Ctrl+Q to queue"), before the spinner's "(0s · esc to cancel)".
        busy=("esc to cancel", "Ctrl+Q to queue"),
        dialogs={"bash": ("Allow execution of: 'touch'?", 1),
                 "edit": ("Apply this change?", 1),
                 "write": ("Apply this change?", 1),
                 "multi": ("Allow execution of: 'touch'?", 2),
                 "trap": ("", 0),
                 "slow": ("", 0)},  # a reply streamed over 6 s: a long working stretch
        answer="\r",  # the first option (Yes, allow once) is selected
    ),
    "opencode": AgentProfile(
        "opencode", "opencode", "opencode-ai",
        # The composer's model line: drawn once the providers are loaded (keys typed before are lost). Not its
        # provider's name: a narrow pane breaks 'Anthropic' inside the word ('Anthro' / 'pic').
        ready=("Sonnet 4.5 (latest) Anthropic", "Sonnet 4.5 (latest)"),
        # The status row under the composer; a narrow pane stacks its words in columns ('esc' over
        # 'interrupt', 'ctrl+p' over 'commands'), so the row's second word alone says it too.
        busy=("esc interrupt", "interrupt"),
        dialogs={"bash": ("△ Permission required", 1),
                 "edit": ("△ Permission required", 1),
                 "write": ("△ Permission required", 1),
                 "multi": ("△ Permission required", 2),
                 "trap": ("", 0),
                 "slow": ("", 0)},
        answer="\r",  # 'Allow once' is selected
    ),
    "copilot": AgentProfile(
        "copilot", "copilot", "@github/copilot",
        # The footer at rest: '← open sidebar · Interactive · Manual Approval · / commands  claude-sonnet-4.5', cut
        # to ' Interactive · Manual claude-sonnet-4.5' in a narrow pane (the mode stays, the key hints go).
        ready=("· / commands", "Interactive · Manual"),
        # The footer: '● Working esc esc edit prompt', then '● Working · 68 B esc esc interrupt'; releases before
        # 1.0.102 say 'esc' once ('◎ Working esc edit prompt', '○ Working · 125 B esc interrupt').
        busy=("Working esc esc", "esc esc interrupt", "Working esc", "esc interrupt"),
        dialogs={"bash": ("Do you want to run this command?", 1),
                 "edit": ("Do you want to edit ", 1),
                 "write": ("Do you want to create ", 1),
                 "multi": ("Do you want to run this command?", 2),
                 "trap": ("", 0),
                 "slow": ("", 0)},
        answer="\r",  # '1. Yes' is selected
        dialog_hint="↑/↓ to navigate · enter to select · esc to cancel",
    ),
    "aider": AgentProfile(
        "aider", "aider", "aider-chat",
        # A line REPL: every question stays in the history once answered ('… [Yes]: y'), so the literals say
        # "a whole row" ('\n': screen text ends every row with one). Ready: a row that is the '>' prompt
        # alone; waiting: a question ending in '[Yes]:' with nothing typed after it.
        ready=("\n>\n",),
        busy=("Waiting for openai/",),
        dialogs={"bash": ("[Yes]:\n", 1),
                 "edit": ("[Yes]:\n", 1),
                 "trap": ("", 0),
                 "slow": ("", 0)},
        answer="y\r",
        refuse="n\r",  # Esc does nothing at its prompt_toolkit question; the question stays up
        python=True,
        questions_after_reply=True,
        line_repl=True,
    ),
}


# Scenarios every agent's mock plays without a tool call (mock/scenario.py): a long streamed reply,
# a short one, markdown prose with dialog lines in it. No dialog can be real in them.
TEXT_SCENARIOS = ("slow", "text", "prose", "quote")


def final_literal(scenario: str, agent: str = "") -> str:
    """Text of the scenario's final reply that shows once it is on screen (mock/scenario.py): for `quote`, its
    last line, the agent's own busy line (a copy of it: nothing after it is the agent's indicator)."""
    if scenario == "quote":
        return QUOTE_BUSY[agent]
    return "regression test" if scenario == "trap" else f"scripted scenario '{scenario}' is complete"


def agent_version(agent: str, bin_dir: Path) -> str:
    """The installed CLI's version: for a Python one, its distribution in the venv install-agents made
    beside node_modules; else its npm package's metadata (found from the binary's real path, as for a
    running agent: runtime/version.py), else its cached `--version`."""
    profile = PROFILES[agent]
    if profile.python:
        dist = profile.package.replace("-", "_")
        found = sorted((bin_dir.parent.parent / agent / "lib").glob(f"python3*/site-packages/{dist}-*.dist-info"))
        if not found:
            raise CaptureError(f"cannot find the {profile.package} distribution under {bin_dir.parent.parent / agent}")
        return found[0].name.removeprefix(f"{dist}-").removesuffix(".dist-info")
    binary = bin_dir / agent
    version = package_version(binary, (profile.package,)) or VersionCache().version([str(binary)], binary)
    if version is None:
        raise CaptureError(f"cannot tell the version of {binary}: no {profile.package} package.json "
                           "above it and no version from `--version`")
    return version


@dataclass
class CaptureResult:
    folder: Path
    truth: dict[str, Any]

    def summary(self) -> str:
        steps = " → ".join(f"{e['state']}@{e['t']:.2f}" for e in self.truth["timeline"])
        return f"{self.folder}\n  {steps}"


@dataclass
class _Recording:
    """Everything of one run on one clock, ready to become session.cast."""

    cols: int
    rows: int
    argv: list[str]
    markers: list[tuple[float, str]] = field(default_factory=list)
    resizes: list[tuple[float, str]] = field(default_factory=list)  # (t, "COLSxROWS")

    def write_cast(self, path: Path, pane: PtyAgent, title: str) -> None:
        events: list[tuple[float, int, str, str]] = []
        decoders = {k: codecs.getincrementaldecoder("utf-8")("replace") for k in ("o", "i")}
        for order, (kind, chunks) in enumerate((("o", pane.output), ("i", pane.inputs))):
            for t, data in chunks:
                if text := decoders[kind].decode(data):
                    events.append((t, order, kind, text))
        events += [(t, 2, "m", label) for t, label in self.markers]
        events += [(t, 3, "r", size) for t, size in self.resizes]
        events.sort(key=lambda e: (e[0], e[1]))
        with path.open("w", encoding="utf-8") as fh:
            writer = CastWriter(fh, self.cols, self.rows, 0.0, timestamp=int(time.time()), title=title,
                                command=shlex.join([Path(self.argv[0]).name, *self.argv[1:]]),
                                env={"TERM": "xterm-256color", "SHELL": "/bin/bash"})
            for t, _, kind, text in events:
                writer.write(t, kind, text)


def _idle(text: str, profile: AgentProfile, final: str) -> bool:
    return shows(text, final) and any(shows(text, r) for r in profile.ready) \
        and not busy_shown(text, profile.busy, final)


def capture(agent: str, scenario: str, *, cols: int = 120, rows: int = 32, inline: bool = False,
            out: Path | None = None, case: str | None = None, answer: str | None = None,
            delay: float = 1.0, bin_dir: Path | None = None, hold: float = HOLD,
            resize: tuple[int, int] | None = None) -> CaptureResult:
    """Record one scenario run and write its golden folder; raises CaptureError if it went wrong."""
    if agent not in PROFILES:
        raise CaptureError(f"unknown agent {agent!r}; known: {', '.join(PROFILES)}")
    profile = PROFILES[agent]
    if scenario not in profile.dialogs and scenario not in TEXT_SCENARIOS:
        raise CaptureError(f"{agent} has no scenario {scenario!r} here; known: {', '.join(profile.dialogs)}")
    if inline and not (profile.inline_args or profile.inline_env):
        raise CaptureError(f"{agent} renders inline already: --inline changes nothing")
    bin_dir = bin_dir or find_agents_bin()
    if bin_dir is None or not (bin_dir / agent).exists():
        raise CaptureError("pinned agent CLIs not found: run scripts/install-agents or set PANEWATCH_AGENTS_BIN")
    version = agent_version(agent, bin_dir)
    case = case or (f"{scenario}_{cols}x{rows}" + ("_inline" if inline else "")
                    + (f"_to_{resize[0]}x{resize[1]}" if resize else ""))
    root = out if out is not None else _default_root()
    scratch = Path(tempfile.mkdtemp(prefix=f"panewatch-capture-{agent}-{scenario}-"))
    try:
        truth = _run(profile, scenario, scratch, cols=cols, rows=rows, inline=inline, version=version,
                     case=case, answer=answer, delay=delay, bin_dir=bin_dir, hold=hold, resize=resize)
    except (CaptureError, TruthError) as exc:
        raise CaptureError(str(exc), scratch) from exc
    folder = root / profile.corpus_dir / version / case
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(scratch / "session.cast", folder / "session.cast")
    (folder / "truth.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    shutil.rmtree(scratch, ignore_errors=True)
    return CaptureResult(folder, truth)


def declines(profile: AgentProfile, scenario: str, key: str) -> bool:
    """An answer other than the allow-once key may refuse the tool and end the turn there."""
    return key != profile.answers.get(scenario, profile.answer)


def literals(profile: AgentProfile, scenario: str) -> tuple[Literals, int]:
    n_dialogs = profile.dialogs.get(scenario, ("", 0))[1]
    return Literals(profile.ready, profile.busy, profile.dialog_literals(scenario),
                    final_literal(scenario, profile.agent)), n_dialogs


def rederive(folder: Path) -> dict[str, Any]:
    """Recompute a captured folder's timeline from its cast and mock events (after a change to the
    derivation or to a profile's literals); rewrites truth.json and returns it."""
    path = folder / "truth.json"
    truth: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    profile, scenario = PROFILES.get(str(truth.get("agent"))), str(truth.get("scenario"))
    if profile is None or (scenario not in profile.dialogs and scenario not in TEXT_SCENARIOS) \
            or "mock_events" not in truth:
        raise CaptureError(f"{folder}: not a folder written by `panewatch capture` (no scenario or mock events)")
    lit, n_dialogs = literals(profile, scenario)
    declined = declines(profile, scenario, str(truth.get("answer_key", profile.answer)))
    try:
        truth["timeline"] = derive_timeline(read_cast(folder / "session.cast"), truth["mock_events"], lit, n_dialogs,
                                            declined=declined, after_reply=profile.questions_after_reply,
                                            line_repl=profile.line_repl)
    except TruthError as exc:
        raise CaptureError(f"{folder}: {exc}") from exc
    path.write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return truth


def _default_root() -> Path:
    from panewatch.golden.cases import bundled_root
    return bundled_root()


def _run(profile: AgentProfile, scenario: str, scratch: Path, *, cols: int, rows: int, inline: bool,
         version: str, case: str, answer: str | None, delay: float, bin_dir: Path,
         hold: float, resize: tuple[int, int] | None) -> dict[str, Any]:
    literal, n_dialogs = profile.dialogs.get(scenario, ("", 0))
    dialog = profile.dialog_literals(scenario)
    key = answer if answer is not None else profile.answers.get(scenario, profile.answer)
    t0 = time.monotonic()

    def clock() -> float:
        return time.monotonic() - t0

    args = list(profile.inline_args) if inline else []
    with MockServer(MOCK_KIND[profile.agent], clock=clock) as mock:
        launch = prepare(profile.agent, scratch / "run", mock.url, bin_dir=bin_dir, args=args,
                         plan_mode=scenario == "plan")
        env = launch.env | (profile.inline_env if inline else {})
        rec = _Recording(cols, rows, launch.argv)
        pane = PtyAgent(launch.argv, env=env, cwd=launch.cwd, cols=cols, rows=rows, clock=clock)
        rec.markers.append((clock(), "spawned"))
        pane.start()
        try:
            _drive(pane, rec, profile, scenario, dialog, n_dialogs, key, delay, hold, clock, resize,
                   ended=lambda: any(e["event"] == "reply_sent" and e.get("stop_reason") == "end_turn"
                                     for e in list(mock.events)))
        finally:
            rec.markers.append((clock(), "exit"))
            pane.close()
            rec.write_cast(scratch / "session.cast", pane, f"{profile.agent} {version} {case}")
        events = [{k: e.get(k) for k in ("t", "event", "step", "stop_reason", "tools")}
                  | {"t": round(float(e["t"]), 6)} for e in mock.events if e["event"] in ("request", "reply_sent")]
    timeline = derive_timeline(read_cast(scratch / "session.cast"), events, *literals(profile, scenario),
                               declined=declines(profile, scenario, key), after_reply=profile.questions_after_reply,
                               line_repl=profile.line_repl)
    return {
        "agent": profile.agent, "agent_version": version, "case": case, "rows": rows, "cols": cols,
        "argv": [Path(launch.argv[0]).name, *launch.argv[1:]],
        "env_extra": (profile.inline_env if inline else None) or None,
        "scenario": scenario, "answer_key": key, "timeline": timeline, "scoring": SCORING,
        "resized_to": f"{resize[0]}x{resize[1]}" if resize else None,
        "truth_derivation": ("capture_truth.py: screen replay of the cast + literal strings "
                             f"(ready {list(profile.ready)}, busy {list(profile.busy)}, dialog {literal!r}) "
                             "+ mock tool windows; panewatch's classifier is not used"),
        "mock_events": events,
    }


QUIET_END = 1.0  # seconds without output after the final reply that end a turn whose reply is off the screen


def _drive(pane: PtyAgent, rec: _Recording, profile: AgentProfile, scenario: str, dialog: tuple[str, ...],
           n_dialogs: int, key: str, delay: float, hold: float, clock: Callable[[], float],
           resize: tuple[int, int] | None = None, ended: Callable[[], bool] = lambda: False) -> None:
    def fail(what: str) -> CaptureError:
        return CaptureError(f"{profile.agent}/{scenario}: {what}; screen:\n{pane.text()}")

    if pane.wait_for(lambda s: any(shows(_text(s), r) for r in profile.ready), STARTUP) is None:
        raise fail("the composer never showed")
    rec.markers.append((clock(), "ready"))
    _settle(pane, quiet=0.5, limit=4.0)  # start-up draws a few more frames (status, tips)
    rec.markers.append((clock(), "settled"))  # the start-up is over: capture_truth's idle starts here
    # In a narrow pane a line REPL (Aider) breaks the typed line under a '> ' of its own, inside a word: keep
    # the prompt short enough for one row there (the mock reads only SCN= and DELAY=).
    words = "run the scripted scenario" if pane.cols >= 60 else "go"
    pane.type(f"SCN={scenario} DELAY={delay:g} {words}", enter=False)
    # The CLI must have taken the text before Enter, or Enter joins the "paste" and is lost (Copilot under
    # load echoes the text seconds later): wait for the echo, then a moment more.
    if pane.wait_for(f"DELAY={delay:g} {words}", STARTUP) is None:
        raise fail("the typed prompt never showed")
    time.sleep(0.3)
    rec.markers.append((clock(), "submitted"))
    pane.write("\r")
    final = final_literal(scenario, profile.agent)
    declined = declines(profile, scenario, key)
    answered = 0

    def over(text: str) -> bool:  # a refusal may end the turn without the final reply
        if _idle(text, profile, "" if declined and answered else final):
            return True
        # A pane too short for the reply (Gemini at 40x12 pushes it off the top at once): the model's final
        # reply is out, the composer is back without a busy marker, and the agent has stopped drawing.
        quiet = pane.clock() - (pane.output[-1][0] if pane.output else 0.0)
        return (ended() and quiet >= QUIET_END and any(shows(text, r) for r in profile.ready)
                and not busy_shown(text, profile.busy) and not _dialog_shown(text, dialog))

    while True:
        snap = pane.wait_for(lambda s: _dialog_shown(_text(s), dialog) is not None or over(_text(s)), STEP)
        if snap is None:
            raise fail("neither a dialog nor the end of the turn showed")
        if over(_text(snap)) and _dialog_shown(_text(snap), dialog) is None:
            break
        if answered >= n_dialogs:
            raise fail(f"more dialogs than the {n_dialogs} the scenario makes")
        rec.markers.append((clock(), "dialog_seen"))
        time.sleep(hold)  # a blocked stretch long enough to score
        if resize is not None and answered == 0:  # the window changes size while the dialog waits
            rec.resizes.append((clock(), f"{resize[0]}x{resize[1]}"))
            pane.resize(*resize)
            if pane.wait_for(lambda s: _dialog_shown(_text(s), dialog) is not None, STEP) is None:
                raise fail("the dialog did not come back after the resize")
            time.sleep(hold)
        before = _text(pane.screen.snapshot())  # the dialog as answered (its first frame may have been half drawn)
        rec.markers.append((clock(), "answer"))
        if pane.answer(key, functools.partial(_same_dialog, seen=before, dialog=dialog), timeout=15) is None:
            raise fail(f"the dialog stayed after {key!r}")
        answered += 1
        # A pane shorter than the agent's history gets it reprinted from the top after the answer (Gemini CLI
        # at 40x12 clears the screen and scrolls it all through, the answered dialog too): look again once the
        # agent has stopped drawing, not at a frame of that reprint.
        _settle(pane, quiet=0.2, limit=2.0)
    rec.markers.append((clock(), "idle_seen"))
    time.sleep(hold)  # an idle stretch long enough to score


_text = screen_text  # the screen as the literals read it (capture_truth.frames too)


def _dialog_shown(text: str, dialog: tuple[str, ...]) -> str | None:
    """The first of the dialog's literals on the screen `text`, if any."""
    return next((lit for lit in dialog if shows(text, lit)), None)


def _same_dialog(snap: Snapshot, *, seen: str, dialog: tuple[str, ...]) -> bool:
    """The dialog that was answered is still up (for `multi`, the next one differs in its command)."""
    now = _text(snap)
    literal = _dialog_shown(now, dialog)
    return literal is not None and _dialog_block(now, literal) == _dialog_block(seen, literal)


def _dialog_block(text: str, literal: str) -> str:
    """The rows up to the dialog's literal (its last row, when the agent broke it over rows)."""
    rows = text.split("\n")
    at = next((i for i, row in enumerate(rows) if literal.strip("\n") in row), None)
    if at is None:  # broken over rows: the first row whose text up to it shows the literal
        at = next((i for i in range(len(rows)) if shows("\n".join(rows[:i + 1]), literal)), 0)
    return "\n".join(rows[max(0, at - 8):at + 1])


def _settle(pane: PtyAgent, quiet: float, limit: float) -> None:
    """Wait until the pane wrote nothing for `quiet` seconds (at most `limit`)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        last = pane.output[-1][0] if pane.output else 0.0
        if pane.clock() - last >= quiet:
            return
        time.sleep(0.05)
