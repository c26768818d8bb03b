"""runtime/hooksinstall.py: panewatch's hooks merged into the agents' own user settings and taken out again
(user hooks kept, idempotent, malformed files refused with nothing written, uninstall byte for byte, or
only ours when the user edited the file since, a file install created removed again)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from panewatch.core import hooksettings
from panewatch.errors import AgentSettingsError
from panewatch.runtime import hooksinstall, paneclient, paths
from panewatch.runtime.hookinject import codex_trust_hash
from panewatch.runtime.hooksinstall import install, settings_file, status, uninstall

LAUNCHER = ["/opt/pw/bin/python", "-I", "-S", "-c", "from panewatch.cli import main"]  # a stable fake for the tests

USER_CLAUDE = b"""{
    "permissions": {"defaultMode": "default"},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "my-audit.sh"}]}]}
}
"""
USER_CODEX = b"""# my codex config
model = "gpt-5.1-codex"   # keep this comment

[[hooks.PreToolUse]]
hooks = [{type = "command", command = "my-audit.sh", timeout = 5}]
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(var, raising=False)
    return home


def put(path: Path, data: bytes, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)
    return path


def ours(doc: dict[str, object], event: str) -> list[str]:
    groups = doc["hooks"][event]  # type: ignore[index]
    return [h["command"] for g in groups for h in g["hooks"] if hooksinstall.OURS.search(h["command"])]


def commands(doc: dict[str, object], event: str) -> list[str]:
    return [h["command"] for g in doc["hooks"][event] for h in g["hooks"]]  # type: ignore[index]


@pytest.mark.parametrize("agent", ["claude", "gemini", "qwen"])
def test_json_install_keeps_the_users_hooks_and_is_idempotent(home: Path, agent: str) -> None:
    path = put(settings_file(agent), USER_CLAUDE, 0o640)
    first = install(agent, launcher=LAUNCHER)
    assert first.action == "installed" and str(path) in first.message
    doc = json.loads(path.read_bytes())
    assert doc["permissions"] == {"defaultMode": "default"}
    assert commands(doc, "PreToolUse")[0] == "my-audit.sh" and doc["hooks"]["PreToolUse"][0]["matcher"] == "Bash"
    event = "BeforeTool" if agent == "gemini" else "PermissionRequest"
    assert ours(doc, event) and all(" pane hook report " in c for c in ours(doc, event))
    if agent == "gemini":
        assert doc["hooksConfig"] == {"notifications": False}
    assert "$version" not in doc  # Qwen's settings version stays the file's own (Qwen migrates it itself)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # the file's mode kept
    written = path.read_bytes()
    again = install(agent, launcher=LAUNCHER)
    assert again.action == "unchanged" and "nothing changed" in again.message
    assert path.read_bytes() == written
    assert status(agent, launcher=LAUNCHER).installed and status(agent, launcher=LAUNCHER).current
    # a newer panewatch (another launcher): ours replaced, not doubled
    assert install(agent, launcher=["/new/python", "-c", "from panewatch.cli import main"]).action == "updated"
    assert len(ours(json.loads(path.read_bytes()), event)) == 1


@pytest.mark.parametrize("agent", ["claude", "gemini", "codex", "qwen"])
def test_uninstall_restores_the_file_byte_for_byte(home: Path, agent: str) -> None:
    original = USER_CODEX if agent == "codex" else USER_CLAUDE
    path = put(settings_file(agent), original, 0o600)
    install(agent, launcher=LAUNCHER)
    assert path.read_bytes() != original
    out = uninstall(agent)
    assert out.action == "restored" and "byte for byte" in out.message
    assert path.read_bytes() == original and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not status(agent).installed
    assert uninstall(agent).action == "absent"  # twice: nothing of ours, nothing changed
    assert path.read_bytes() == original


@pytest.mark.parametrize("agent", ["claude", "gemini", "codex", "qwen"])
def test_a_file_install_created_is_removed_again(home: Path, agent: str) -> None:
    path = settings_file(agent)
    assert not path.exists()
    assert "a new file" in install(agent, launcher=LAUNCHER).message
    assert path.exists()
    out = uninstall(agent)
    assert out.action == "restored" and "panewatch had created it" in out.message
    assert not path.exists() and not path.parent.exists()  # the config dir it made went too


def test_json_uninstall_after_a_user_edit_keeps_the_edit(home: Path) -> None:
    path = put(settings_file("claude"), USER_CLAUDE)
    install("claude", launcher=LAUNCHER)
    doc = json.loads(path.read_bytes())
    doc["model"] = "opus"  # the user (or Claude's /config) changed the file since
    doc["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify-me"}]})
    path.write_text(json.dumps(doc))
    out = uninstall("claude")
    assert out.action == "cleaned" and "kept the changes" in out.message
    after = json.loads(path.read_bytes())
    assert after["model"] == "opus" and after["permissions"] == {"defaultMode": "default"}
    assert after["hooks"] == {"PreToolUse": json.loads(USER_CLAUDE)["hooks"]["PreToolUse"],
                              "Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]}


def test_codex_block_is_appended_after_the_users_bytes_with_trust_for_its_group(home: Path) -> None:
    path = put(settings_file("codex"), USER_CODEX)
    install("codex", launcher=LAUNCHER)
    text = path.read_bytes()
    assert text.startswith(USER_CODEX)  # the user's bytes as they were, comments and all
    doc = tomllib.loads(text.decode())
    pre = doc["hooks"]["PreToolUse"]
    assert pre[0]["hooks"][0]["command"] == "my-audit.sh"
    assert " pane hook report working" in pre[1]["hooks"][0]["command"]
    # trust for OUR group: index 1 of PreToolUse (the user's is 0), index 0 elsewhere
    cmd, timeout = pre[1]["hooks"][0]["command"], pre[1]["hooks"][0]["timeout"]
    assert doc["hooks"]["state"][f"{path}:pre_tool_use:1:0"]["trusted_hash"] == codex_trust_hash("PreToolUse", cmd,
                                                                                                   timeout)
    assert f"{path}:stop:0:0" in doc["hooks"]["state"]
    assert install("codex", launcher=LAUNCHER).action == "unchanged"


def test_codex_home_is_respected_and_an_edit_after_install_survives_uninstall(home: Path, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    path = put(tmp_path / "codex-home" / "config.toml", USER_CODEX)
    assert settings_file("codex") == path
    install("codex", launcher=LAUNCHER)
    path.write_bytes(path.read_bytes() + b'\n[projects."/w"]\ntrust_level = "trusted"\n')
    assert uninstall("codex").action == "cleaned"
    assert path.read_bytes() == USER_CODEX + b'\n[projects."/w"]\ntrust_level = "trusted"\n'


def test_codex_tables_written_inside_the_block_survive_uninstall(home: Path) -> None:
    """Codex appends new tables at the end of its config (after a first start: `[tui]`, measured with 0.171.0),
    which is inside our block: taking ours out keeps them, and the user's own trust entry too."""
    path = put(settings_file("codex"), USER_CODEX)
    install("codex", launcher=LAUNCHER)
    theirs = (f'\n[hooks.state."{path}:pre_tool_use:0:0"]\ntrusted_hash = "sha256:theirs"\n\n[tui]\n'
              'screen_reader_detection_done = true\n\n[tui.model_availability_nux]\n"gpt-6.1-sol" = 1\n')
    text = path.read_text()
    end = text.index(hooksettings.END)
    path.write_text(text[:end] + theirs.lstrip("\n") + text[end:])  # as Codex's toml_edit puts them
    assert uninstall("codex").action == "cleaned"
    after = path.read_text()
    assert after.startswith(USER_CODEX.decode()) and "pane hook" not in after and hooksettings.BEGIN not in after
    doc = tomllib.loads(after)
    assert doc["tui"] == {"screen_reader_detection_done": True, "model_availability_nux": {"gpt-6.1-sol": 1}}
    assert doc["hooks"]["state"] == {f"{path}:pre_tool_use:0:0": {"trusted_hash": "sha256:theirs"}}
    assert doc["hooks"]["PreToolUse"] == tomllib.loads(USER_CODEX.decode())["hooks"]["PreToolUse"]


def test_qwen_home_is_respected(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qh"))
    install("qwen", launcher=LAUNCHER)
    assert (tmp_path / "qh" / "settings.json").exists() and not (home / ".qwen").exists()


def test_claude_config_dir_is_respected(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    install("claude", launcher=LAUNCHER)
    assert (tmp_path / "cc" / "settings.json").exists() and not (home / ".claude").exists()


@pytest.mark.parametrize(("agent", "data", "problem"), [
    ("claude", b'{"hooks": {"Stop": [}', "not valid JSON"),
    ("claude", b"[1, 2]", "not an object"),
    ("gemini", b'{"hooks": {"BeforeTool": {"command": "x"}}}', "is not a list"),
    ("gemini", b'{"hooks": [] }', '"hooks" is not an object'),
    ("codex", b'model = "x\n', "not valid TOML"),
    ("codex", b'[hooks]\nPreToolUse = [{hooks = []}]\n', "do not merge"),
    ("codex", b"\xff\xfe", "not UTF-8"),
])
def test_a_malformed_file_is_refused_naming_it_and_nothing_is_written(home: Path, agent: str, data: bytes,
                                                                      problem: str) -> None:
    path = put(settings_file(agent), data)
    with pytest.raises(AgentSettingsError) as caught:
        install(agent, launcher=LAUNCHER)
    assert str(path) in str(caught.value) and problem in str(caught.value)
    assert path.read_bytes() == data
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp file left either
    assert not (paths.state_dir() / "hooks").exists() or not list((paths.state_dir() / "hooks").iterdir())


def test_a_symlinked_settings_file_stays_a_symlink(home: Path, tmp_path: Path) -> None:
    real = put(tmp_path / "dotfiles" / "claude.json", USER_CLAUDE)
    link = settings_file("claude")
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    install("claude", launcher=LAUNCHER)
    assert link.is_symlink() and ours(json.loads(real.read_bytes()), "Stop")
    uninstall("claude")
    assert link.is_symlink() and real.read_bytes() == USER_CLAUDE


def test_gemini_keeps_the_users_own_hook_notifications_setting(home: Path) -> None:
    path = put(settings_file("gemini"), b'{"hooksConfig": {"notifications": true}}')
    install("gemini", launcher=LAUNCHER)
    assert json.loads(path.read_bytes())["hooksConfig"] == {"notifications": True}


def test_the_backup_is_private_in_the_state_dir(home: Path) -> None:
    put(settings_file("claude"), USER_CLAUDE)
    install("claude", launcher=LAUNCHER)
    folder = paths.state_dir() / "hooks"
    files = list(folder.iterdir())
    assert {f.suffix for f in files} == {".json", ".orig"}
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert next(f for f in files if f.suffix == ".orig").read_bytes() == USER_CLAUDE


def test_default_agents_are_those_with_a_config_dir(home: Path) -> None:
    assert hooksinstall.default_agents() == ["claude"]
    (home / ".gemini").mkdir()
    (home / ".codex").mkdir()
    assert hooksinstall.default_agents() == ["gemini", "codex"]


def test_cli_install_status_uninstall(home: Path) -> None:
    path = put(settings_file("claude"), USER_CLAUDE)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "panewatch", "hooks", *args], capture_output=True, text=True,
                              timeout=60)

    out = cli("install")
    assert out.returncode == 0 and "installed in" in out.stdout, out.stderr
    secret = Path(paneclient.runtime_dir() or "") / paneclient.SECRET_FILE
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600  # made by install when no daemon made it
    assert "already" in cli("install").stdout
    assert "installed" in cli("status").stdout.splitlines()[0]
    assert "byte for byte" in cli("uninstall").stdout and path.read_bytes() == USER_CLAUDE
    put(settings_file("claude"), b"{oops")
    bad = cli("install", "--agent", "claude")
    assert bad.returncode == 1 and str(path) in bad.stderr and "nothing written" in bad.stderr


def test_the_hook_clients_runtime_dir_is_the_runtimes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert paneclient.runtime_dir() == str(paths.runtime_dir())
    monkeypatch.delenv("PANEWATCH_RUNTIME_DIR")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    assert paneclient.runtime_dir() is None  # not there: the hook client never makes it
    assert not (tmp_path / "xdg").exists()
    assert str(paths.runtime_dir()) == paneclient.runtime_dir() == str(tmp_path / "xdg" / "panewatch")
    os.chmod(tmp_path / "xdg" / "panewatch", 0o755)
    assert paneclient.runtime_dir() is None  # not private: nobody of ours would listen there


def test_copilot_hooks_are_a_file_of_their_own_in_its_hooks_folder(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Copilot CLI reads every *.json in $COPILOT_HOME/hooks: ours is panewatch.json there (version 1, `bash`
    commands running `pane hook`), the user's own hooks files are never touched, and uninstall removes ours
    and the folder install made."""
    from panewatch.core.hookevents import COPILOT_HOOK_STATES

    monkeypatch.delenv("COPILOT_HOME", raising=False)
    path = settings_file("copilot")
    assert path == home / ".copilot" / "hooks" / "panewatch.json"
    first = install("copilot", launcher=LAUNCHER)
    assert first.action == "installed" and "(a new file)" in first.message
    doc = json.loads(path.read_bytes())
    assert doc["version"] == 1 and set(doc["hooks"]) == set(COPILOT_HOOK_STATES)
    assert all(len(hooks) == 1 and hooks[0]["type"] == "command" and hooksinstall.OURS.search(hooks[0]["bash"])
               for hooks in doc["hooks"].values())
    assert doc["hooks"]["preToolUse"][0]["bash"].endswith(" pane hook report working --event preToolUse")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert install("copilot", launcher=LAUNCHER).action == "unchanged"
    state = status("copilot", launcher=LAUNCHER)
    assert state.installed and state.current
    assert uninstall("copilot").action == "restored"
    assert not path.exists() and not path.parent.exists()  # install made the folder: it goes too

    theirs = put(home / ".copilot" / "hooks" / "mine.json", b'{"version": 1, "hooks": {"preToolUse": []}}\n')
    monkeypatch.setenv("COPILOT_HOME", str(home / "elsewhere"))
    assert settings_file("copilot") == home / "elsewhere" / "hooks" / "panewatch.json"
    monkeypatch.delenv("COPILOT_HOME")
    install("copilot", launcher=LAUNCHER)
    # A hook the user added to our file since is kept; only ours go.
    doc = json.loads(path.read_bytes())
    doc["hooks"]["agentStop"].append({"type": "command", "bash": "my-notify.sh"})
    path.write_text(json.dumps(doc))
    assert uninstall("copilot").action == "cleaned"
    assert json.loads(path.read_bytes())["hooks"] == {"agentStop": [{"type": "command", "bash": "my-notify.sh"}]}
    assert theirs.read_bytes() == b'{"version": 1, "hooks": {"preToolUse": []}}\n'
