"""`panewatch agents list | check FILE | explain FILE.cast | verify [AGENT]`: manifests, the evidence behind
verdicts, and a check of the installed CLI against its manifest."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from panewatch.cli.capture import _size
from panewatch.cli.detect import load_manifests, read_cast_file, resolve_agent
from panewatch.core.classify import explain
from panewatch.core.identity import unverified_note
from panewatch.core.manifest import Manifest, ManifestError, load_manifest
from panewatch.core.replay import replay
from panewatch.golden.cases import corpus_roots, find_cases
from panewatch.golden.run import run_case, with_replacement
from panewatch.runtime import paths


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
    # The user's own cases too (`report-wrong` saves them there): a fix is checked on what went wrong.
    cases = [c for c in find_cases([*corpus_roots(), paths.user_corpus_dir()]) if c.agent == candidate.id]
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


def _verify_bin(agent: str, given: Path | None) -> Path | None:
    """Where the CLI to verify is: --bin, else the pinned CLIs (PANEWATCH_AGENTS_BIN), else PATH."""
    from panewatch.testing.homes import find_agents_bin

    if given is not None:
        return given
    pinned = find_agents_bin()
    if pinned is not None and (pinned / agent).exists():
        return pinned
    found = shutil.which(agent)
    return Path(found).parent if found else None


def cmd_verify(ns: argparse.Namespace) -> int:
    import time

    from panewatch.runtime.paths import user_corpus_dir
    from panewatch.testing.capture import PROFILES, CaptureError, agent_version
    from panewatch.testing.verify import table, verify

    manifests = load_manifests()
    if ns.agent is not None and ns.agent not in PROFILES:
        print(f"panewatch agents verify: no scenarios for {ns.agent!r}; verifiable: {', '.join(PROFILES)}",
              file=sys.stderr)
        return 2
    if ns.version is not None:
        if ns.agent is None or ns.bin is not None:
            print("panewatch agents verify: --version needs an AGENT and no --bin (it installs that release)",
                  file=sys.stderr)
            return 2
        from panewatch.testing.versions import install

        if not ns.quiet:
            print(f"{ns.agent} {ns.version}: installing into a private prefix (npm) …", file=sys.stderr)
        try:
            ns.bin = install(ns.agent, ns.version)
        except CaptureError as exc:
            print(f"panewatch agents verify: {exc}", file=sys.stderr)
            return 2
    agents = [ns.agent] if ns.agent else [a for a in PROFILES if _verify_bin(a, ns.bin) is not None]
    if not agents:
        print("panewatch agents verify: no agent CLI found (--bin DIR, PANEWATCH_AGENTS_BIN or PATH)", file=sys.stderr)
        return 2
    save_to = user_corpus_dir() if ns.save else None
    failed = 0
    for agent in agents:
        bin_dir, manifest = _verify_bin(agent, ns.bin), manifests.get(agent)
        if bin_dir is None or not (bin_dir / agent).exists() or manifest is None:
            print(f"{agent}: {'no manifest' if manifest is None else 'CLI not found'}: not verified", file=sys.stderr)
            failed += 1
            continue
        try:
            version = agent_version(agent, bin_dir)
        except CaptureError as exc:
            print(f"{agent}: {exc}", file=sys.stderr)
            failed += 1
            continue
        note = unverified_note(manifest, version)
        print(f"{manifest.name} {version} ({bin_dir / agent}) · manifest {manifest.source} ({manifest.origin}) · "
              f"tested {', '.join(manifest.versions) or 'none'}" + (f" · {note}" if note else ""))
        started = time.monotonic()
        results = verify(agent, manifests.list(), cols=ns.size[0], rows=ns.size[1],
                         scenarios=ns.scenario.split(",") if ns.scenario else None, save_to=save_to,
                         bin_dir=bin_dir, progress=None if ns.quiet else lambda m: print(m, file=sys.stderr))
        print("\n".join(table(results)))
        passed = sum(r.ok for r in results)
        print(f"{passed}/{len(results)} scenarios pass for {manifest.name} {version} "
              f"in {time.monotonic() - started:.0f}s")
        if save_to is not None:
            print(f"captures saved under {save_to}: `panewatch agents check FILE.toml` runs a manifest over them")
        print()
        failed += passed != len(results)
    return 1 if failed else 0


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
    q = agents.add_parser("verify", help="drive the installed CLI through the standard scenarios against a mock "
                          "model server and replay them through the manifest: pass/fail per scenario",
                          description="Scenarios: permission, edit, working, idle, trap, prose, quote, esc "
                                      "(panewatch.testing.verify). The truth of each capture comes from the scenario "
                                      "and the mock, never from panewatch's classifier.")
    q.add_argument("agent", nargs="?", metavar="AGENT", help="claude, codex, gemini, qwen, opencode, copilot or aider "
                   "(default: every one found)")
    q.add_argument("--save", action="store_true",
                   help="keep the captures in your corpus (PANEWATCH_DATA_DIR/corpus, default "
                        "~/.local/share/panewatch/corpus), where `agents check` runs manifests over them")
    q.add_argument("--scenario", help="a comma-separated subset of the scenarios")
    q.add_argument("--bin", type=Path, metavar="DIR", help="the directory holding the CLI (default: "
                   "PANEWATCH_AGENTS_BIN, then PATH)")
    q.add_argument("--version", metavar="X.Y.Z", help="install this release of AGENT from the npm registry into a "
                   "private prefix (~/.cache/panewatch/versions, reused) and verify it instead of the installed one")
    q.add_argument("--size", type=_size, default=(120, 32), metavar="COLSxROWS", help="default 120x32")
    q.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    q.set_defaults(func=cmd_verify)
    from panewatch.runtime.agents_update import register_update

    register_update(agents)
    p.set_defaults(func=lambda ns: (p.print_help(), 2)[1])
