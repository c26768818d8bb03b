"""agents update: fetched manifests are validated and run over the corpus before an atomic install.

The server is real https on loopback with a throwaway self-signed certificate that the test trusts
through SSL_CERT_FILE (plain http is refused, loopback included)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from panewatch.core.manifest import bundled_texts, load_all
from panewatch.golden.cases import find_cases
from panewatch.runtime.agents_update import UpdateError, cmd_update, configured_source, register_update, update

CLAUDE = dict(bundled_texts())["panewatch/agents/claude.toml"]
CASES = [c for c in find_cases() if c.agent == "claude"]

# A newer manifest that still passes: one more tested version.
GOOD = CLAUDE.replace('versions = ["2.1.332"]', 'versions = ["2.1.332", "2.1.333"]')
# Valid TOML, but a rule without its note.
INVALID = CLAUDE.replace('note = "Bash/Edit/Write/WebFetch/MCP', 'nota = "Bash/Edit/Write/WebFetch/MCP')
# Valid, but it lost the rule for permission questions and the option list: dialogs go unseen.
REGRESSING = CLAUDE.replace('id = "permission-question"', 'id = "permission-question-gone"').replace(
    "^\\s*Do you want to (?:proceed", "^\\s*NEVER (?:proceed").replace(
    'all = [\'^\\s*❯\\s*1\\.\\s+\\S\'', 'all = [\'^NEVER❯\\s*1\\.\\s+\\S\'').replace(
    "'^\\s*Esc to cancel · Tab to amend'", "'^NEVER Esc to cancel'")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(cert, key): a self-signed certificate for 127.0.0.1, made by the openssl command."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture(autouse=True)
def tls(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The certificate, trusted by this test's process as a user trusts a private CA."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    return certificate


@contextlib.contextmanager
def _server(handler: Any, tls: tuple[Path, Path] | None, path: str = "/agents/") -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def serve(folder: Path, tls: tuple[Path, Path] | None) -> contextlib.AbstractContextManager[str]:
    """Serve `folder` over https (http when `tls` is None); yields the URL of its agents/ folder."""
    return _server(functools.partial(_Quiet, directory=str(folder)), tls)


def _offer(root: Path, files: dict[str, str]) -> Path:
    folder = root / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "index.json").write_text(json.dumps({"manifests": sorted(files)}))
    return folder


def test_fixtures_are_what_they_claim() -> None:
    assert GOOD != CLAUDE and INVALID != CLAUDE and REGRESSING != CLAUDE
    assert "NEVER" in REGRESSING and REGRESSING.count("NEVER") == 3
    assert CASES, "the corpus has Claude Code cases to run candidates over"


def test_good_installed_invalid_and_regressing_refused(tmp_path: Path, tls: tuple[Path, Path]) -> None:
    user = tmp_path / "user-agents"
    _offer(tmp_path / "www", {"a-good.toml": GOOD, "b-invalid.toml": INVALID, "c-regressing.toml": REGRESSING})
    with serve(tmp_path / "www", tls) as url:
        outcomes = {o.name: o for o in update(url, user_dir=user, cases=CASES)}
    assert outcomes["a-good.toml"].status == "installed", outcomes["a-good.toml"]
    assert outcomes["b-invalid.toml"].status == "invalid"
    assert "missing `note`" in outcomes["b-invalid.toml"].message
    assert outcomes["c-regressing.toml"].status == "regressed"
    assert "would fail" in outcomes["c-regressing.toml"].message
    # Only the good one is on disk, whole; no temp file left behind.
    assert sorted(p.name for p in user.iterdir()) == ["claude.toml"]
    assert (user / "claude.toml").read_text() == GOOD
    assert load_all(user).get("claude").versions == ("2.1.332", "2.1.333")  # type: ignore[union-attr]


def test_the_last_good_one_stays(tmp_path: Path, tls: tuple[Path, Path]) -> None:
    user = tmp_path / "user-agents"
    www = tmp_path / "www"
    _offer(www, {"claude.toml": GOOD})
    with serve(www, tls) as url:
        assert [o.status for o in update(url, user_dir=user, cases=CASES)] == ["installed"]
        assert [o.status for o in update(url, user_dir=user, cases=CASES)] == ["unchanged"]
        _offer(www, {"claude.toml": REGRESSING})
        assert [o.status for o in update(url, user_dir=user, cases=CASES)] == ["regressed"]
        _offer(www, {"claude.toml": INVALID})
        assert [o.status for o in update(url, user_dir=user, cases=CASES)] == ["invalid"]
    assert (user / "claude.toml").read_text() == GOOD


def test_single_file_url_directory_and_missing_files(tmp_path: Path, tls: tuple[Path, Path]) -> None:
    user = tmp_path / "user-agents"
    folder = _offer(tmp_path / "www", {"claude.toml": GOOD})
    with serve(tmp_path / "www", tls) as url:
        assert [o.status for o in update(url + "claude.toml", user_dir=user, cases=CASES)] == ["installed"]
        (folder / "index.json").write_text(json.dumps(["claude.toml", "missing.toml"]))
        statuses = {o.name: o.status for o in update(url, user_dir=user, cases=CASES)}
        assert statuses == {"claude.toml": "unchanged", "missing.toml": "error"}
        with pytest.raises(UpdateError):
            update(url.replace("/agents/", "/nowhere/"), user_dir=user, cases=CASES)
    (user / "claude.toml").unlink()
    assert [o.status for o in update(str(folder), user_dir=user, cases=CASES)] == ["installed"]


def test_source_from_settings_and_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config"  # conftest points PANEWATCH_CONFIG_DIR here
    folder = _offer(tmp_path / "www", {"claude.toml": GOOD})
    config.mkdir(parents=True, exist_ok=True)
    assert configured_source() is None
    assert cmd_update(argparse.Namespace(source=None)) == 2  # nowhere to fetch from: said so
    (config / "config.toml").write_text(f'[agents]\nupdate_from = "{folder}"\n')
    assert configured_source() == str(folder)
    assert cmd_update(argparse.Namespace(source=None)) == 0
    assert (config / "agents" / "claude.toml").read_text() == GOOD
    _offer(tmp_path / "www", {"claude.toml": REGRESSING})
    assert cmd_update(argparse.Namespace(source=str(folder))) == 1
    assert "regressed" in capsys.readouterr().out
    assert (config / "agents" / "claude.toml").read_text() == GOOD


def test_register_update_adds_the_subcommand() -> None:
    parser = argparse.ArgumentParser()
    register_update(parser.add_subparsers())
    ns = parser.parse_args(["update", "--from", "/x"])
    assert ns.source == "/x" and ns.func is cmd_update


def test_plain_http_is_refused_even_on_loopback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user = tmp_path / "user-agents"
    _offer(tmp_path / "www", {"claude.toml": GOOD})
    with serve(tmp_path / "www", None) as url:
        with pytest.raises(UpdateError, match="https only"):
            update(url, user_dir=user, cases=CASES)
        [single] = update(url + "claude.toml", user_dir=user, cases=CASES)
        assert single.status == "error" and "https only" in single.message
        assert cmd_update(argparse.Namespace(source=url)) == 2
    assert "refusing http://127.0.0.1" in capsys.readouterr().out
    assert not user.exists()  # nothing was installed


def test_an_https_redirect_to_http_is_refused(tmp_path: Path, tls: tuple[Path, Path]) -> None:
    user = tmp_path / "user-agents"
    _offer(tmp_path / "www", {"claude.toml": GOOD})
    with serve(tmp_path / "www", None) as plain:

        class Redirect(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(302)
                self.send_header("Location", plain + self.path.rsplit("/", 1)[-1])
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        with _server(Redirect, tls) as url:
            assert url.startswith("https://")
            with pytest.raises(UpdateError, match="https only"):
                update(url, user_dir=user, cases=CASES)
            outcomes = update(url + "claude.toml", user_dir=user, cases=CASES)
    assert [(o.status, "https only" in o.message) for o in outcomes] == [("error", True)]
    assert not user.exists()
