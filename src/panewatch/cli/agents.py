"""`panewatch agents list | check FILE | explain FILE.cast`: manifests and the evidence behind verdicts."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from panewatch.cli.detect import load_manifests, read_cast_file, resolve_agent
from panewatch.core.classify import explain
from panewatch.core.identity import unverified_note
from panewatch.core.manifest import Manifest, ManifestError, load_manifest
from panewatch.core.replay import replay
from panewatch.golden.cases import find_cases
from panewatch.golden.run import run_case, with_replacement


def installed(manifest: Manifest) -> tuple[Path, str | None] | None:
    """The agent's binary on PATH and its version (package metadata, else its cached `--version`)."""
    from panewatch.runtime.version import installed_version

    for name in manifest.processes:
        if found := shutil.which(name):
            return Path(found), installed_version(Path(found), manifest)
    return None


def cmd_list(ns: argparse.Namespace) -> int:
    manifests = load_manifests(quiet=True)
    for m in manifests:
        tested = ", ".join(m.versions) if m.versions else "none"
        flag = "verified on captures" if m.verified else "NOT verified on captures"
        print(f"{m.id:<10} {m.name:<16} {m.origin:<8} {len(m.rules):>2} rules  tested: {tested:<10} {flag}")
        print(f"{'':<10} processes: {', '.join(m.processes) or '-'}   {m.source}")
        if ns.installed and (found := installed(m)) is not None:
            path, version = found
            note = unverified_note(m, version)
            print(f"{'':<10} installed: {version or 'version unknown'}   {path}" + (f"   {note}" if note else ""))
    for error in manifests.errors:
        print(f"not loaded: {error.path}", file=sys.stderr)
        for problem in error.problems:
            print(f"  - {problem}", file=sys.stderr)
    return 1 if manifests.errors else 0


def cmd_check(ns: argparse.Namespace) -> int:
    try:
        candidate = load_manifest(ns.file, origin="user")
    except ManifestError as exc:
        print(f"{exc.path}: {len(exc.problems)} problem(s)")
        for problem in exc.problems:
            print(f"  - {problem}")
        return 1
    print(f"{ns.file}: valid manifest for agent {candidate.id!r} ({len(candidate.rules)} rules)")
    cases = [c for c in find_cases() if c.agent == candidate.id]
    if not cases:
        print(f"no corpus cases for agent {candidate.id!r}: nothing to run it on")
        return 0
    manifests = with_replacement(load_manifests(quiet=True).list(), candidate)
    failed = 0
    for case in cases:
        outcome = run_case(case, manifests, agent=candidate.id)
        print(outcome.summary())
        failed += not outcome.ok
    print(f"{len(cases) - failed}/{len(cases)} corpus cases pass")
    return 1 if failed else 0


def cmd_explain(ns: argparse.Namespace) -> int:
    manifests = load_manifests()
    agent = resolve_agent(manifests, ns.agent)
    cast = read_cast_file(ns.file)
    result = replay(cast, manifests.list(), agent=agent)
    for change in result.changes:
        v = change.verdict
        print(f"== {change.t:.3f}s → {v.state}  (agent {v.agent or 'unknown'})")
        manifest = manifests.get(v.agent) if v.agent else None
        if manifest is None or change.snapshot is None:
            print(f"   no agent identified; rule {v.rule or '-'}")
            continue
        _, trace = explain(change.snapshot, manifest, result.detector.quarantine)
        if v.error:
            print(f"   FAILED verdict: {v.error}")
        for step in trace:
            mark = "✘" if step.skipped else "✔" if step.matched else "·"
            print(f"   {mark} {step.rule.state:<8} {step.rule.id:<28} [{step.rule.region}] {step.why}")
        if v.rule is None:
            print("   no rule matched: idle by default")
        else:
            where = "title" if v.region == "title" else f"row {v.row}"
            print(f"   matched on {where}: {v.matched!r}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("agents", help="agent manifests: list, check, explain")
    agents = p.add_subparsers(dest="agents_command", metavar="ACTION")
    q = agents.add_parser("list", help="manifests in force, with the agent versions their captures cover")
    q.add_argument("--no-installed", dest="installed", action="store_false",
                   help="do not look for the agents' binaries on PATH and their versions")
    q.set_defaults(func=cmd_list)
    q = agents.add_parser("check", help="validate a manifest (every problem) and run it over the corpus")
    q.add_argument("file", metavar="FILE.toml")
    q.set_defaults(func=cmd_check)
    q = agents.add_parser("explain", help="per verdict of a replay: the deciding rule and row, why not the earlier")
    q.add_argument("--agent")
    q.add_argument("file", metavar="FILE.cast")
    q.set_defaults(func=cmd_explain)
    from panewatch.runtime.agents_update import register_update

    register_update(agents)
    p.set_defaults(func=lambda ns: (p.print_help(), 2)[1])
