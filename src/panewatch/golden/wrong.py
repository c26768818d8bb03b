""""This state is wrong": a live pane's recent history saved as a golden case of the user's corpus.

    <corpus>/<agent>/<version>/wrong-<YYYYmmdd-HHMMSS>-<pane>/
      session.cast   the pane's history (core/history.py): its screen where the history starts, then
                     every output and resize event (and the exit) at its time; secrets masked
      truth.json     as the bundled cases' (cases.py), with: timeline = `ignore` up to the last screen
                     change, then the state the user expected (`ignore` if they did not say);
                     `reports` (the hook/ACP reports the pane was given, replayed with the cast);
                     `recorded` (the state changes panewatch published live: what a replay reproduces);
                     `reported` (when, what panewatch said and by which rule, what the user expected)
      frames.json    the frame golden of the scored segment (as scripts/regen-frames writes it)
      screen.txt     the screen at the report, as text
      trace.txt      the rule trace of the verdict (`agents explain` for that screen)
      report.md      the summary for a bug report, and how to check and replay the case

The truth's scored part is where the user's claim is sure to hold: from the last screen change (the
screen the user looked at) to the end; what came before is shown but not judged. Everything written
is masked first (core/masking.py: the cast and the screen on their logical text, across wraps and
cursor moves; core/redact.py for the rest; a secret found anywhere is masked everywhere). Masks keep
lengths: the cast still draws the same screen. The frames are read from the masked cast; a secret
they still show (one only the replayed screen puts together) is masked in the cast, and they are read
again. The work is linear in the history and holds the GIL only briefly: run it in a thread.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from panewatch.core.cast import Cast, cast_lines
from panewatch.core.classify import RuleTrace, Verdict
from panewatch.core.combine import PaneState
from panewatch.core.history import Recent
from panewatch.core.masking import mask_cast, mask_rows, secrets_in
from panewatch.core.redact import mask
from panewatch.core.replay import screens_at
from panewatch.core.screen import Snapshot
from panewatch.core.states import STATES
from panewatch.golden.cases import FRAMES, GoldenCase, frame

UNKNOWN_VERSION = "unknown"  # the agent's version is not known to a live pane
Hide = Callable[[str], str]  # text → the same text with its secrets masked


@dataclass(frozen=True)
class WrongState:
    """What a live pane knows when the user says its state is wrong."""

    recent: Recent
    pane: str  # its name on the board
    agent: str | None
    state: PaneState  # what panewatch says now
    verdict: Verdict  # the screen's own verdict
    snapshot: Snapshot
    trace: Sequence[RuleTrace] | None  # None: no manifest judged the screen (agent unknown)
    expected: str | None  # the state the user expected (None: not said)
    wall: float  # unix time of the report
    now: float  # the same moment on the history's clock
    manifest_file: str | None = None  # the manifest that judged the screen, as `agents check` takes it
    wraps: tuple[bool, ...] = ()  # per screen row: it wrapped onto the next (Screen.soft_wraps)


class Masked:
    """A report's cast, frames and screen rows with their secrets masked, and every secret found
    (`known`: masked in the report's other texts too, by `text`)."""

    def __init__(self, report: WrongState) -> None:
        snapshot = report.snapshot
        known = mask_rows(snapshot.rows, snapshot.width, report.wraps)[1] | secrets_in(snapshot.title)
        self.cast, in_cast = mask_cast(_cast(report), known)
        self.known = known | in_cast
        self.frames = _frames(report, self.cast)
        shown = set().union(*(mask_rows(f["rows"], self.cast.header.width)[1] for f in self.frames))
        if shown - self.known:  # put together only on a replayed screen: mask it in the cast too
            self.known |= shown
            self.cast = mask_cast(_cast(report), self.known)[0]
            self.frames = _frames(report, self.cast)
        self.rows = mask_rows(snapshot.rows, snapshot.width, report.wraps, self.known)[0]

    def text(self, text: str) -> str:
        return mask(text, self.known)


def _cast(report: WrongState) -> Cast:
    recent = report.recent
    started = report.wall - (report.now - recent.start)  # the history's start in unix time
    return recent.cast(timestamp=int(started), title=mask(f"panewatch report-wrong: {report.pane}"))


def _frames(report: WrongState, cast: Cast) -> list[dict[str, Any]]:
    times = GoldenCase(Path("."), truth(report)).frame_times(cast)
    return [frame(t, shot) for t, shot in zip(times, screens_at(cast, times), strict=True)]


def masked_cast(report: WrongState) -> Cast:
    return Masked(report).cast


def scored_from(recent: Recent) -> float:
    """Cast time of the last screen change (output, resize, exit): the screen the user judged."""
    return max((recent.relative(e.t) for e in recent.events), default=0.0)


def truth(report: WrongState, hide: Hide = mask) -> dict[str, Any]:
    recent, state = report.recent, report.state
    start = scored_from(recent)
    expected = report.expected if report.expected in STATES else "ignore"
    said = f"panewatch said {state.state} ({_decided(state, hide)})"
    final = {"t": start, "state": expected,
             "note": f"the user: this screen is {report.expected}; {said}" if report.expected
             else f"the user said this state is wrong but not which is right; {said}: set the state you expect"}
    timeline = ([{"t": 0.0, "state": "ignore", "note": "before the screen the user judged: not judged"}]
                if start > 0 else [])
    return {
        "agent": report.agent or "unknown", "agent_version": UNKNOWN_VERSION, "case": "",
        "rows": recent.rows, "cols": recent.cols, "origin": "panewatch report-wrong",
        "timeline": [*timeline, final],
        "scoring": "At cast time t the expected state is the state of the last timeline entry with entry.t <= t. "
                   "Entries with state 'ignore' are not scored. Only the screen the user judged is scored.",
        "reported": {"at": datetime.fromtimestamp(report.wall).astimezone().isoformat(timespec="seconds"),
                     "t": recent.relative(report.now), "pane": hide(report.pane), "detected": state.state,
                     "source": state.source, "rule": state.rule, "detail": hide(state.detail or "") or None,
                     "expected": report.expected,
                     "panewatch": _version()},
        "recorded": [{"t": recent.relative(t), "state": s.state, "rule": s.rule, "source": s.source,
                      "detail": hide(s.detail or "") or None} for t, s in recent.changes],
        "reports": [{"t": recent.relative(r.t), "state": r.state, "source": r.source, "detail": hide(r.detail)}
                    for r in recent.reports if r.t >= recent.start],
    }


def _decided(state: PaneState, hide: Hide = mask) -> str:
    if state.source == "screen":
        return f"rule {state.rule}" if state.rule else "no rule matched"
    return f"{state.source}: {hide(state.detail or '')}" if state.detail else state.source


def _version() -> str:
    try:
        return metadata.version("panewatch")
    except metadata.PackageNotFoundError:  # a source tree without its metadata
        return "?"


def trace_text(report: WrongState, hide: Hide = mask) -> str:
    v, snapshot = report.verdict, report.snapshot
    lines = [f"pane {hide(report.pane)}: panewatch says {report.state.state} ({_decided(report.state, hide)}); "
             f"the screen's own verdict: {v.state} (agent {v.agent or report.agent or 'unknown'})"]
    if v.error:
        lines.append(f"FAILED verdict: {v.error}")
    if report.trace is None:
        lines.append(f"no manifest judged this screen; rule {v.rule or '-'}")
    for step in report.trace or ():
        mark = "✘" if step.skipped else "✔" if step.matched else "·"
        lines.append(f"{mark} {step.rule.state:<8} {step.rule.id:<28} [{step.rule.region}] {hide(step.why)}")
    if report.trace is not None:
        if v.rule is None:
            lines.append("no rule matched: idle by default")
        else:
            where = "title" if v.region == "title" else f"row {v.row}"
            lines.append(f"matched on {where}: {hide(v.matched)!r}")
    lines.append(f"title: {hide(snapshot.title)!r}  alternate screen: {snapshot.alt_screen}")
    return "\n".join(lines) + "\n"


def screen_text(snapshot: Snapshot, rows: Sequence[str], hide: Hide = mask) -> str:
    """The screen as text: its `rows` (masked on their logical text: `Masked.rows`), its title."""
    width = max(snapshot.width, 1)
    rule = "-" * width
    return "\n".join([f"title: {hide(snapshot.title)}", rule, *rows, rule]) + "\n"


def report_md(report: WrongState, folder: Path, doc: dict[str, Any], hide: Hide = mask) -> str:
    expected = report.expected or "(not said: edit the last timeline entry of truth.json)"
    return f"""# panewatch: this state is wrong

* pane: {hide(report.pane)}, agent: {report.agent or 'unknown'}, reported {doc['reported']['at']}
* panewatch said: **{report.state.state}** ({_decided(report.state, hide)})
* the user expected: **{expected}**
* history: {report.recent.output_bytes} bytes of output over {doc['reported']['t']:.1f} s (`session.cast`),
  {len(doc['recorded'])} state changes recorded live (`truth.json` recorded), {len(doc['reports'])} hook/ACP reports

Secrets (API keys, tokens, passwords in command lines and URLs, KEY=value assignments, long random
strings) were masked with `*`, also where the screen wrapped them; look the files over before you
share them.

    panewatch agents explain {folder}/session.cast     # the rule behind every verdict of the replay
    panewatch agents check {report.manifest_file or 'MANIFEST.toml'}
                                                       # runs this case with the rest of the corpus
"""


def case_folder(root: Path, report: WrongState) -> Path:
    stamp = datetime.fromtimestamp(report.wall).strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in report.pane)[:40] or "pane"
    base = root / (report.agent or "unknown") / UNKNOWN_VERSION / f"wrong-{stamp}-{safe}"
    folder, n = base, 1
    while folder.exists():
        n += 1
        folder = base.with_name(f"{base.name}-{n}")
    return folder


def write_case(root: Path, report: WrongState) -> Path:
    """Write the case under `root` (the user's corpus) and return its folder. Files are the user's
    own (0600 in a 0700 folder): they show what their panes showed."""
    folder = case_folder(root, report)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.mkdir(mode=0o700)
    masked = Masked(report)
    doc = truth(report, masked.text)
    doc["case"] = folder.name
    _write(folder / "session.cast", "".join(cast_lines(masked.cast)))
    _write(folder / FRAMES, json.dumps({"engine": f"pyghostty {metadata.version('pyghostty')}",
                                        "note": "visible screen at cast time t (written by report-wrong)",
                                        "frames": masked.frames}, ensure_ascii=False, indent=1) + "\n")
    _write(folder / "screen.txt", screen_text(report.snapshot, masked.rows, masked.text))
    _write(folder / "trace.txt", trace_text(report, masked.text))
    _write(folder / "report.md", report_md(report, folder, doc, masked.text))
    _write(folder / "truth.json", json.dumps(doc, ensure_ascii=False, indent=1) + "\n")  # last: a case once complete
    return folder


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(text)
