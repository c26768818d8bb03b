"""`panewatch replay` and `panewatch classify`: the detection pipeline on recordings and byte files."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from panewatch.core.cast import Cast, CastError, looks_like_cast, parse_cast
from panewatch.core.classify import Quarantine, Verdict, classify, classify_unidentified, identify
from panewatch.core.manifest import Manifest, ManifestSet, load_all
from panewatch.core.replay import replay
from panewatch.core.screen import Screen, Snapshot
from panewatch.runtime.paths import user_agents_dir


def load_manifests(quiet: bool = False) -> ManifestSet:
    """Bundled + user manifests; problems are reported on stderr and the rest keep working."""
    manifests = load_all(user_agents_dir())
    if not quiet:
        for error in manifests.errors:
            print(f"panewatch: warning: manifest not loaded: {error}", file=sys.stderr)
    return manifests


def resolve_agent(manifests: ManifestSet, agent: str | None) -> str | None:
    if agent is not None and manifests.get(agent) is None:
        known = ", ".join(sorted(manifests.manifests)) or "none"
        raise SystemExit(f"panewatch: unknown agent {agent!r} (known: {known})")
    return agent


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {"agent": verdict.agent or None, "state": verdict.state, "rule": verdict.rule,
            "region": verdict.region or None, "row": verdict.row, "matched": verdict.matched or None,
            "error": verdict.error or None}


def render_screen(snapshot: Snapshot) -> str:
    width = max(snapshot.width, 20)
    lines = [f"title: {snapshot.title!r}  alt-screen: {snapshot.alt_screen}  cursor: {snapshot.cursor}",
             "┌" + "─" * width + "┐"]
    lines += [f"│{row:<{width}}│ {i}" for i, row in enumerate(snapshot.rows)]
    lines.append("└" + "─" * width + "┘")
    return "\n".join(lines)


def read_cast_file(path: str) -> Cast:
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        return parse_cast(iter(fh), path)


def cmd_replay(ns: argparse.Namespace) -> int:
    manifests = load_manifests()
    agent = resolve_agent(manifests, ns.agent)
    try:
        cast = read_cast_file(ns.file)
    except (OSError, CastError) as exc:
        print(f"panewatch: {exc}", file=sys.stderr)
        return 1
    result = replay(cast, manifests.list(), agent=agent)
    for change in result.changes:
        if ns.json:
            print(json.dumps(change.as_json(), ensure_ascii=False))
        else:
            v = change.verdict
            where = f"{v.agent}/{v.rule}" if v.rule else (v.agent or "?") + "/(no rule: idle by default)"
            row = "title" if v.region == "title" else (f"row {v.row}" if v.row is not None else "")
            print(f"{change.t:9.3f}s  {v.state:<8} {where}  {row}  {v.matched[:60]}".rstrip())
    if not ns.json:
        print(f"# {result.checks} checks, {result.classifications} classifications over {result.duration:.1f}s "
              "of virtual time", file=sys.stderr)
    return 0


def screen_of_file(path: str, size: tuple[int, int]) -> Screen:
    """Feed a `.cast` (output and resizes) or a raw byte file into a fresh screen."""
    data = Path(path).read_bytes()
    if looks_like_cast(data[:512]):
        try:
            cast = parse_cast(iter(data.decode("utf-8", "surrogateescape").splitlines()), path)
        except CastError:
            cast = None
        if cast is not None:
            screen = Screen(cast.header.width, cast.header.height)
            for event in cast.events:
                if event.kind == "o":
                    screen.feed(event.data.encode("utf-8", "surrogateescape"))
                elif event.kind == "r" and (new := event.size) is not None:
                    screen.resize(*new)
            return screen
    screen = Screen(*size)
    screen.feed(data)
    return screen


def judge(snapshot: Snapshot, manifests: ManifestSet, agent: str | None, quarantine: Quarantine) -> Verdict:
    manifest: Manifest | None = manifests.get(agent) if agent else identify(snapshot, manifests.list())
    if manifest is None:
        return classify_unidentified(snapshot, manifests.list(), quarantine)
    return classify(snapshot, manifest, quarantine)


def _parse_size(text: str) -> tuple[int, int]:
    cols, _, rows = text.lower().partition("x")
    if not (cols.isdigit() and rows.isdigit()):
        raise argparse.ArgumentTypeError("size must be COLSxROWS, e.g. 120x32")
    return int(cols), int(rows)


def cmd_classify(ns: argparse.Namespace) -> int:
    manifests = load_manifests()
    agent = resolve_agent(manifests, ns.agent)
    status = 0
    # A rule too slow on one file is reported, and skipped on the next ones.
    quarantine = Quarantine(clock=time.perf_counter)
    for path in ns.files:
        try:
            screen = screen_of_file(path, ns.size)
        except OSError as exc:
            print(f"panewatch: {path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
            status = 1
            continue
        snapshot = screen.snapshot()
        verdict = judge(snapshot, manifests, agent, quarantine)
        if ns.json:
            print(json.dumps({"file": path, **verdict_json(verdict)}, ensure_ascii=False))
        else:
            rule = verdict.rule or "(no rule matched: idle by default)"
            print(f"{path}: {verdict.state}  {verdict.agent or '?'}/{rule}  {verdict.matched[:60]}".rstrip())
            if verdict.error:
                print(f"{path}: FAILED verdict: {verdict.error}")
        if verdict.error:
            status = 1
        if ns.show:
            print(render_screen(snapshot))
    return status


def register(sub: Any) -> None:
    p = sub.add_parser("replay", help="play a .cast through the detector in virtual time; one line per state change")
    p.add_argument("--agent", help="agent id (default: identify from the screen/title)")
    p.add_argument("--json", action="store_true", help='JSON lines {"t", "state", "rule", ...}')
    p.add_argument("file", metavar="FILE.cast")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("classify", help="final verdict of .raw byte files or .cast recordings")
    p.add_argument("--agent", help="agent id (default: identify from the screen/title)")
    p.add_argument("--json", action="store_true", help="one JSON line per file")
    p.add_argument("--show", action="store_true", help="print the screen and title that were judged")
    p.add_argument("--size", type=_parse_size, default=(120, 32), help="screen size for raw files (COLSxROWS)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(func=cmd_classify)
