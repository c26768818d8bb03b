"""Agent manifests: what we know about each agent's screens, as data (one TOML file per agent).

A manifest has an `[agent]` table and ordered `[[rules]]`. First matching rule wins, blocked rules
come first, no match means idle. Loading validates everything and reports *every* problem with
the file and rule it is in; one bad file never stops the others from loading. Patterns are
Python regex syntax compiled for RE2 (pattern.py): one RE2 cannot run in linear time with `re`'s
meaning (lookaround, backreferences, `\b`, …) is a problem like any other, named with its rule.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from panewatch.core.pattern import Pattern, PatternError, compile_pattern
from panewatch.core.states import SCREEN_STATES, ScreenState, screen_state, urgency
from panewatch.errors import PanewatchError

REGION_KINDS = ("screen", "title", "bottom", "top", "below_rule", "cursor")


class ManifestError(PanewatchError, ValueError):
    """A manifest that cannot be used. `problems` lists every issue found, each naming file and rule."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: " + "; ".join(problems))


DEFAULT_SUBMIT_GAP = 0.15  # seconds; a manifest says its agent's own (measured: SIGNALS.md)


@dataclass(frozen=True, slots=True)
class Region:
    """Where on the screen a rule looks. `n` is the row count for bottom/top."""

    kind: str = "screen"
    n: int = 0

    @staticmethod
    def parse(spec: str) -> Region:
        kind, _, count = spec.partition(":")
        if kind not in REGION_KINDS:
            raise ValueError(f"unknown region {spec!r} "
                             "(use one of: screen, title, bottom:N, top:N, below_rule, cursor)")
        if kind in ("bottom", "top"):
            if not count.isdigit() or int(count) < 1:
                raise ValueError(f"region {spec!r} needs a row count, e.g. {kind}:5")
            return Region(kind, int(count))
        if count:
            raise ValueError(f"region {kind!r} takes no row count")
        return Region(kind)

    def __str__(self) -> str:
        return f"{self.kind}:{self.n}" if self.n else self.kind


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    state: ScreenState
    region: Region
    any: tuple[Pattern, ...]
    all: tuple[Pattern, ...]
    none: tuple[Pattern, ...]
    note: str
    identified: bool = False  # applies only once the pane is known to be this agent (it fits any screen)
    wraps: bool = False  # the agent breaks this text over rows when the pane is narrow: a space matches a row break
    # A busy indicator the agent keeps redrawing (a spinner, elapsed seconds, a counter): its line must change
    # within this many seconds, or it is a copy (a reply quoting it) and the rule stops counting (detector.py).
    moving: float | None = None


@dataclass(frozen=True, slots=True)
class Manifest:
    id: str
    name: str
    processes: tuple[str, ...]
    versions: tuple[str, ...]  # the agent versions the rules were verified on (real captures)
    verified: bool
    detect_title: tuple[Pattern, ...]
    detect_screen: tuple[Pattern, ...]
    rules: tuple[Rule, ...]
    source: str = ""
    origin: str = "bundled"  # "bundled" or "user"
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # The packages the agent ships in (npm names like '@openai/codex', PyPI names like 'aider-chat'):
    # a running agent's version is read from their metadata (runtime/version.py).
    packages: tuple[str, ...] = ()
    # Seconds between the last byte of text `send` types and its Enter: an agent that takes fast input as a paste
    # (Codex: Enter within 120 ms of a burst is a newline; Gemini CLI: 40 ms) needs its Enter as a key of its own.
    submit_gap: float = DEFAULT_SUBMIT_GAP


def _patterns(value: Any, where: str, key: str, problems: list[str], wraps: bool = False) -> tuple[Pattern, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{where}: `{key}` must be a list of regex strings")
        return ()
    out = []
    for pattern in value:
        try:
            out.append(compile_pattern(pattern, wraps))
        except PatternError as exc:
            problems.append(f"{where}: `{key}` pattern {pattern!r} {exc}")
    return tuple(out)


_AGENT_KEYS = {"id", "name", "processes", "versions", "verified", "detect_title", "detect_screen", "note",
               "packages", "submit_gap"}
MAX_SUBMIT_GAP = 2.0
# A version as CLIs print it: 2.1.332, 0.171.0, 1.0.0-beta.3 (compared as written, not as a range).
VERSION_RE = re.compile(r"\d+(?:\.\d+)+(?:[-+][0-9A-Za-z][0-9A-Za-z.-]*)?")
_RULE_KEYS = {"id", "state", "region", "any", "all", "none", "note", "identified", "wraps", "moving"}
MAX_MOVING = 60.0  # seconds: an indicator that may stand still longer than this tells nothing by moving


def parse_manifest(doc: dict[str, Any], source: str, origin: str = "bundled") -> Manifest:
    """Validate a parsed TOML document. Raises ManifestError listing every problem."""
    problems: list[str] = []
    agent = doc.get("agent")
    if not isinstance(agent, dict):
        raise ManifestError(source, ["missing [agent] table"])
    for key in sorted(set(agent) - _AGENT_KEYS):
        problems.append(f"[agent]: unknown key `{key}`")
    agent_id = agent.get("id")
    if not isinstance(agent_id, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", agent_id):
        problems.append("[agent]: `id` must be a lowercase word like 'claude'")
        agent_id = "?"

    def str_list(key: str) -> tuple[str, ...]:
        value = agent.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"[agent]: `{key}` must be a list of strings")
            return ()
        return tuple(value)

    rules_doc = doc.get("rules", [])
    if not isinstance(rules_doc, list) or not rules_doc:
        problems.append("no [[rules]]: a manifest needs at least one rule")
        rules_doc = []
    rules: list[Rule] = []
    seen: set[str] = set()
    last_state: ScreenState = SCREEN_STATES[0]  # the least urgent state a rule had so far
    for index, raw in enumerate(rules_doc, start=1):
        rule_id = raw.get("id") if isinstance(raw, dict) else None
        where = f"rule #{index}" + (f" {rule_id!r}" if isinstance(rule_id, str) else "")
        if not isinstance(raw, dict):
            problems.append(f"{where}: not a table")
            continue
        for key in sorted(set(raw) - _RULE_KEYS):
            problems.append(f"{where}: unknown key `{key}`")
        if not isinstance(rule_id, str) or not rule_id:
            problems.append(f"{where}: missing `id`")
            rule_id = f"#{index}"
        elif rule_id in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(rule_id)
        state = screen_state(raw.get("state"))
        if state is None:
            problems.append(f"{where}: `state` must be one of {', '.join(SCREEN_STATES)}, not {raw.get('state')!r}")
            state = "idle"
        elif urgency(state) < urgency(last_state):
            problems.append(f"{where}: {state} rule after a {last_state} rule "
                            "(order must be blocked, then working, then idle)")
        else:
            last_state = state
        try:
            region = Region.parse(str(raw.get("region", "screen")))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            region = Region()
        wraps = raw.get("wraps", False)
        if not isinstance(wraps, bool):
            problems.append(f"{where}: `wraps` must be true or false")
            wraps = False
        any_ = _patterns(raw.get("any"), where, "any", problems, wraps)
        all_ = _patterns(raw.get("all"), where, "all", problems, wraps)
        none = _patterns(raw.get("none"), where, "none", problems, wraps)
        if not any_ and not all_ and "any" not in raw and "all" not in raw:
            problems.append(f"{where}: needs `any` or `all` patterns")
        note = raw.get("note")
        if not isinstance(note, str) or not note.strip():
            problems.append(f"{where}: missing `note` (say why the rule exists)")
            note = ""
        identified = raw.get("identified", False)
        if not isinstance(identified, bool):
            problems.append(f"{where}: `identified` must be true or false")
            identified = False
        moving = raw.get("moving")
        if moving is not None:
            if isinstance(moving, bool) or not isinstance(moving, (int, float)) or not 0 < moving <= MAX_MOVING:
                problems.append(f"{where}: `moving` must be a number of seconds in (0, {MAX_MOVING:g}]")
                moving = None
            elif state != "working":
                problems.append(f"{where}: `moving` is for working rules (a busy indicator), not {state}")
                moving = None
            elif region.kind == "title":
                problems.append(f"{where}: `moving` needs a screen region (a title has no line to watch)")
                moving = None
        rules.append(Rule(rule_id, state, region, any_, all_, none, str(note), identified, wraps,
                          None if moving is None else float(moving)))
    processes, versions, packages = str_list("processes"), str_list("versions"), str_list("packages")
    for version in versions:
        if not VERSION_RE.fullmatch(version):
            problems.append(f"[agent]: `versions` entry {version!r} is not a version like '2.1.332'")
    detect_title = _patterns(agent.get("detect_title"), "[agent]", "detect_title", problems)
    detect_screen = _patterns(agent.get("detect_screen"), "[agent]", "detect_screen", problems)
    verified = agent.get("verified", False)
    if not isinstance(verified, bool):
        problems.append("[agent]: `verified` must be true or false")
    elif verified and not versions:
        problems.append("[agent]: `verified = true` needs the `versions` the captures were made with")
    submit_gap = agent.get("submit_gap", DEFAULT_SUBMIT_GAP)
    if isinstance(submit_gap, bool) or not isinstance(submit_gap, int | float) or not 0 <= submit_gap <= MAX_SUBMIT_GAP:
        problems.append(f"[agent]: `submit_gap` must be seconds from 0 to {MAX_SUBMIT_GAP:g}, not {submit_gap!r}")
        submit_gap = DEFAULT_SUBMIT_GAP
    if problems:
        raise ManifestError(source, problems)
    return Manifest(
        id=str(agent_id), name=str(agent.get("name", agent_id)), processes=processes, versions=versions,
        verified=bool(verified), detect_title=detect_title, detect_screen=detect_screen,
        rules=tuple(rules), source=source, origin=origin, raw=doc, packages=packages, submit_gap=float(submit_gap),
    )


def load_manifest_text(text: str, source: str, origin: str = "bundled") -> Manifest:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(source, [f"not valid TOML: {exc}"]) from exc
    return parse_manifest(doc, source, origin)


def load_manifest(path: Path | str, origin: str = "user") -> Manifest:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(str(path), [f"cannot read: {exc}"]) from exc
    return load_manifest_text(text, str(path), origin)


@dataclass
class ManifestSet:
    """All usable manifests by agent id, plus the errors of those that were not loaded."""

    manifests: dict[str, Manifest] = field(default_factory=dict)
    errors: list[ManifestError] = field(default_factory=list)

    def get(self, agent_id: str) -> Manifest | None:
        return self.manifests.get(agent_id)

    def __iter__(self) -> Iterator[Manifest]:
        return iter(self.manifests.values())

    def list(self) -> list[Manifest]:
        return list(self.manifests.values())

    def by_process(self, name: str) -> Manifest | None:
        for manifest in self.manifests.values():
            if name in manifest.processes:
                return manifest
        return None


def bundled_texts() -> list[tuple[str, str]]:
    """(source name, TOML text) of every manifest shipped with the package."""
    base = resources.files("panewatch") / "agents"
    out = []
    for entry in sorted(base.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            out.append((f"panewatch/agents/{entry.name}", entry.read_text(encoding="utf-8")))
    return out


def load_all(user_dir: Path | None = None, *, bundled: bool = True) -> ManifestSet:
    """Bundled manifests, then the user's: a user manifest with the same agent id replaces the bundled one."""
    result = ManifestSet()
    if bundled:
        for source, text in bundled_texts():
            try:
                manifest = load_manifest_text(text, source, "bundled")
            except ManifestError as exc:
                result.errors.append(exc)
                continue
            result.manifests[manifest.id] = manifest
    if user_dir is not None and user_dir.is_dir():
        for path in sorted(user_dir.glob("*.toml")):
            try:
                manifest = load_manifest(path, "user")
            except ManifestError as exc:
                result.errors.append(exc)
                continue
            result.manifests[manifest.id] = manifest
    return result
