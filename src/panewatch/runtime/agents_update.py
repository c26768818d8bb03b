"""`panewatch agents update [--from URL|DIR]`: newer manifests without a release, never a worse one.

Where from: `--from`, else `update_from` in the `[agents]` table of config.toml:

    [agents]
    update_from = "https://example.org/panewatch/agents/"    # or a local directory

A directory offers every `*.toml` in it. A URL ending in `.toml` is that one manifest; any other URL
is a folder whose `index.json` lists the files (`["claude.toml", …]` or `{"manifests": [...]}`).
URLs must be https (or file:): a manifest's rules read every pane and decide when the guard lets
text through, so one fetched over plain http could be swapped by anyone on the path. There is no
opt-in for http, not even for loopback: the tests serve real https on 127.0.0.1 with a throwaway
CA that they trust through SSL_CERT_FILE, which is how a user would trust a private server too.

Each candidate is (1) validated (every problem listed), (2) replayed over the golden corpus cases of
its agent together with the manifests in force, and (3) installed into the user's agents directory
(`paths.user_agents_dir()/<id>.toml`, temp file + os.replace, so a running pane's watcher never
reads half a file) only if no case that passes now would fail with it. An invalid or regressing
manifest is reported and never installed: the last good one stays. An agent with no corpus case is
installed as unverified, with a warning.
"""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from panewatch.core.manifest import Manifest, ManifestError, load_all, load_manifest_text
from panewatch.errors import PanewatchError
from panewatch.golden.cases import GoldenCase, find_cases
from panewatch.golden.run import run_case, with_replacement
from panewatch.runtime import paths
from panewatch.runtime.settings import load_settings

MAX_BYTES = 512 * 1024  # a manifest is a few KB; anything this big is not one
TIMEOUT = 15.0


class UpdateError(PanewatchError, RuntimeError):
    """The location itself cannot be read (no manifest was looked at)."""


@dataclass(frozen=True)
class Outcome:
    name: str  # where the candidate came from (file name)
    status: str  # installed | unchanged | invalid | regressed | error
    agent: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("installed", "unchanged")

    def line(self) -> str:
        who = f" ({self.agent})" if self.agent else ""
        return f"{self.status:<9} {self.name}{who}" + (f": {self.message}" if self.message else "")


def configured_source(config: Path | None = None) -> str | None:
    """`[agents] update_from` in config.toml, if set."""
    return load_settings(config).agents.update_from or None


def _is_url(source: str) -> bool:
    return bool(urllib.parse.urlsplit(source).scheme) and "://" in source


def _check_scheme(url: str) -> None:
    if urllib.parse.urlsplit(url).scheme not in ("https", "file"):
        raise UpdateError(f"refusing {url}: manifests are fetched over https only (or from a local path), "
                          "since a manifest fetched in the clear could be replaced on the way")


class _HttpsRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects only to https: urllib would follow an https server's redirect to http."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        _check_scheme(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_HttpsRedirects)


def _fetch(url: str) -> bytes:
    _check_scheme(url)
    try:
        with _OPENER.open(url, timeout=TIMEOUT) as response:  # https/file only (checked above)
            data: bytes = response.read(MAX_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise UpdateError(f"cannot fetch {url}: {exc}") from exc
    if len(data) > MAX_BYTES:
        raise UpdateError(f"{url}: larger than {MAX_BYTES} bytes, not a manifest")
    return data


def fetch_candidates(source: str) -> list[tuple[str, str | None, str]]:
    """(name, text or None, error) for every manifest the source offers."""
    out: list[tuple[str, str | None, str]] = []
    if not _is_url(source):
        folder = Path(source).expanduser()
        if not folder.is_dir():
            raise UpdateError(f"{source}: neither a URL nor a directory")
        for path in sorted(folder.glob("*.toml")):
            try:
                out.append((path.name, path.read_text(encoding="utf-8"), ""))
            except (OSError, UnicodeDecodeError) as exc:
                out.append((path.name, None, f"cannot read: {exc}"))
        return out
    if urllib.parse.urlsplit(source).path.endswith(".toml"):
        names, base = [source], source
    else:
        base = source if source.endswith("/") else source + "/"
        try:
            index: Any = json.loads(_fetch(urllib.parse.urljoin(base, "index.json")))
        except ValueError as exc:
            raise UpdateError(f"{base}index.json is not JSON: {exc}") from exc
        listed = index.get("manifests") if isinstance(index, dict) else index
        if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
            raise UpdateError(f"{base}index.json must list manifest file names")
        names = [str(n) for n in listed]
    for name in names:
        url = urllib.parse.urljoin(base, name)
        label = urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1] or url
        try:
            out.append((label, _fetch(url).decode("utf-8"), ""))
        except (UpdateError, UnicodeDecodeError) as exc:
            out.append((label, None, str(exc)))
    return out


def regressions(candidate: Manifest, manifests: list[Manifest], cases: list[GoldenCase]) -> tuple[list[str], int]:
    """Cases of the candidate's agent that pass with `manifests` and fail with the candidate, and how
    many cases were run."""
    mine = [c for c in cases if c.agent == candidate.id]
    trial = with_replacement(manifests, candidate)
    failed = []
    for case in mine:
        if not run_case(case, trial, agent=candidate.id).ok and run_case(case, manifests, agent=candidate.id).ok:
            failed.append(case.name)
    return failed, len(mine)


def install(candidate_text: str, agent_id: str, user_dir: Path) -> Path:
    """Write `<user_dir>/<agent_id>.toml` atomically (a reader sees the old file or the new one)."""
    user_dir.mkdir(parents=True, exist_ok=True)
    target = user_dir / f"{agent_id}.toml"
    # The temp name does not end in .toml, so a watcher scanning the dir never loads it half-written.
    fd, tmp = tempfile.mkstemp(prefix=f".{agent_id}-", suffix=".part", dir=user_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(candidate_text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def update(source: str | None = None, *, user_dir: Path | None = None,
           cases: list[GoldenCase] | None = None) -> list[Outcome]:
    """Fetch, check and install manifests; one Outcome per candidate. Raises UpdateError when there
    is no source or it cannot be listed."""
    source = source or configured_source()
    if not source:
        raise UpdateError("no source: pass --from URL|DIR or set update_from in the [agents] table "
                          f"of {paths.config_dir() / 'config.toml'}")
    user_dir = user_dir or paths.user_agents_dir()
    cases = find_cases() if cases is None else cases
    outcomes: list[Outcome] = []
    for name, text, error in fetch_candidates(source):
        if text is None:
            outcomes.append(Outcome(name, "error", message=error))
            continue
        outcomes.append(_consider(name, text, user_dir, cases))
    return outcomes


def _consider(name: str, text: str, user_dir: Path, cases: list[GoldenCase]) -> Outcome:
    try:
        candidate = load_manifest_text(text, name, origin="user")
    except ManifestError as exc:
        return Outcome(name, "invalid", message="; ".join(exc.problems))
    target = user_dir / f"{candidate.id}.toml"
    try:
        if target.read_text(encoding="utf-8") == text:
            return Outcome(name, "unchanged", candidate.id)
    except (OSError, UnicodeDecodeError):
        pass
    in_force = load_all(user_dir)  # the user's manifests count: the candidate must not be worse than them
    failed, ran = regressions(candidate, in_force.list(), cases)
    if failed:
        return Outcome(name, "regressed", candidate.id,
                       f"{len(failed)}/{ran} corpus case(s) would fail: {', '.join(failed)}; "
                       "not installed, the manifest in force stays")
    path = install(text, candidate.id, user_dir)
    note = f"{ran} corpus case(s) pass" if ran else "no corpus case for this agent: installed unverified"
    others = [p.name for p in user_dir.glob("*.toml") if p != path and _defines(p, candidate.id)]
    if others:
        note += f"; note: {', '.join(others)} also define '{candidate.id}' (the last by name wins)"
    return Outcome(name, "installed", candidate.id, f"{path} ({note})")


def _defines(path: Path, agent_id: str) -> bool:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    agent = doc.get("agent")
    return isinstance(agent, dict) and agent.get("id") == agent_id


def cmd_update(ns: Any) -> int:
    """`panewatch agents update`: exit 0 if every candidate was installed or unchanged, 1 otherwise."""
    try:
        outcomes = update(getattr(ns, "source", None))
    except UpdateError as exc:
        print(f"panewatch agents update: {exc}")
        return 2
    for outcome in outcomes:
        print(outcome.line())
    if not outcomes:
        print("no manifests offered")
    return 0 if all(o.ok for o in outcomes) else 1


def register_update(agents: Any) -> None:
    """Add `update` to the `agents` subcommand's subparsers (called from cmd_agents.register)."""
    q = agents.add_parser("update", help="fetch newer manifests, check them on the corpus, install the good ones")
    q.add_argument("--from", dest="source", metavar="URL|DIR",
                   help="where to fetch from (default: [agents] update_from in config.toml)")
    q.set_defaults(func=cmd_update)
