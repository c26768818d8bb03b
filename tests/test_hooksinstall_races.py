"""`hooks install` and the user's file (issue 23, item 9b): the user's numbers written back as their own
text (`1e400` became `Infinity`, not JSON; long numbers lost digits), an error names the user's file
(not panewatch's temp file), and another writer — the agent rewriting its own settings — neither
removes the hooks (it takes the file's lock: install waits for it) nor loses its own change (it takes
none: install sees the file changed before its rename and edits the new bytes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from panewatch.core.hooksettings import load_json
from panewatch.errors import AgentSettingsError
from panewatch.runtime import hooksinstall
from panewatch.runtime.hooksinstall import install, settings_file, uninstall

LAUNCHER = ["/opt/pw/bin/python", "-I", "-S", "-c", "from panewatch.cli import main"]
NUMBERS = (b'{\n  "huge": 1e400,\n  "long": 12345678901234567890.123456789,\n  "tiny": 5e-400,\n'
           b'  "exact": 0.1000000000000000055511151231257827,\n  "minus_zero": -0,\n'
           b'  "int": 123456789012345678901234567890\n}\n')


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "QWEN_HOME"):
        monkeypatch.delenv(var, raising=False)
    return home


def has_hooks(path: Path) -> bool:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return any(hooksinstall.OURS.search(h["command"]) for groups in doc.get("hooks", {}).values()
               for g in groups for h in g["hooks"])


@pytest.mark.parametrize("agent", ["claude", "gemini", "qwen"])
def test_the_users_numbers_go_back_as_their_own_text(home: Path, agent: str) -> None:
    path = settings_file(agent)
    path.parent.mkdir(parents=True)
    path.write_bytes(NUMBERS)
    install(agent, launcher=LAUNCHER)
    text = path.read_text(encoding="utf-8")
    for number in ("1e400", "12345678901234567890.123456789", "5e-400", "0.1000000000000000055511151231257827",
                   '"minus_zero": -0,', "123456789012345678901234567890"):
        assert number in text, text
    assert "Infinity" not in text
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))  # strict JSON still
    assert uninstall(agent).action == "restored" and path.read_bytes() == NUMBERS
    # Edited since install (not byte for byte): only the hooks go, the numbers' text stays.
    install(agent, launcher=LAUNCHER)
    path.write_text(path.read_text(encoding="utf-8").replace('"int":', '"added": 7,\n  "int":'), encoding="utf-8")
    assert uninstall(agent).action == "cleaned"
    assert load_json(str(path), path.read_bytes())["huge"].text == "1e400" and "Infinity" not in path.read_text()


def immutable(path: Path) -> Callable[[], None]:
    """Nothing can be created in the folder `path` (not even by root); the undo."""
    if os.geteuid() != 0:
        path.chmod(0o500)
        return lambda: path.chmod(0o700)
    chattr = shutil.which("chattr")
    assert chattr is not None, "root needs chattr (e2fsprogs) to make a folder unwritable for itself"
    subprocess.run([chattr, "+i", str(path)], check=True)
    return lambda: subprocess.run([chattr, "-i", str(path)], check=True)


def test_an_error_names_the_users_file_not_a_temp_file(home: Path, tmp_path: Path) -> None:
    """The settings file links into a dotfiles folder nothing can be written in: before, the error named
    `.settings.json.panewatch-PID` there, a file the user never heard of."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude.json").write_bytes(b'{"model": "opus"}\n')
    path = settings_file("claude")
    path.parent.mkdir(parents=True)
    path.symlink_to(dotfiles / "claude.json")
    undo = immutable(dotfiles)
    try:
        with pytest.raises(AgentSettingsError) as caught:
            install("claude", launcher=LAUNCHER)
    finally:
        undo()
    message = str(caught.value)
    assert message.startswith(f"{path}: cannot write it (") and ".panewatch-" not in message, message
    assert (dotfiles / "claude.json").read_bytes() == b'{"model": "opus"}\n' and path.is_symlink()
    assert not path.with_name("settings.json.lock").exists()  # the lock let go


def test_a_stale_lock_is_taken_over_and_one_that_cannot_be_is_named(home: Path) -> None:
    path = settings_file("claude")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{}\n")
    lock = path.with_name("settings.json.lock")
    lock.mkdir()
    os.utime(lock, (0, 0))  # left by a writer that died long ago
    assert install("claude", launcher=LAUNCHER).action == "installed" and not lock.exists()
    lock.mkdir()
    (lock / "x").write_text("")  # not an empty directory: not ours to remove
    os.utime(lock, (0, 0))
    with pytest.raises(AgentSettingsError, match="was left by a writer that is gone and cannot be removed"):
        uninstall("claude")


# An agent that rewrites its settings the way the Node tools do: under `FILE.lock` (a directory made by
# mkdir), read, change, write. It takes the lock and reads, says so, and writes what it read plus its own
# change only when told: in between, `hooks install` runs.
AGENT = textwrap.dedent("""
    import json, os, sys
    path = sys.argv[1]
    os.mkdir(path + ".lock")
    doc = json.load(open(path))
    print("read", flush=True)
    sys.stdin.readline()
    doc["agentRuns"] = doc.get("agentRuns", 0) + 1
    tmp = path + ".agent-tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)
    os.rmdir(path + ".lock")
    print("wrote", flush=True)
""")


@pytest.fixture
def agent_file(home: Path) -> Iterator[Path]:
    path = settings_file("claude")
    path.parent.mkdir(parents=True)
    path.write_text('{"model": "opus"}\n', encoding="utf-8")
    yield path


def test_an_agent_rewriting_its_settings_under_its_lock_does_not_remove_the_hooks(agent_file: Path) -> None:
    """Before: install wrote while the agent held what it had read; the agent's write, a moment later,
    removed the hooks, 10 times out of 10."""
    lost, waited = [], 0
    for run in range(1, 11):
        uninstall("claude")
        agent = subprocess.Popen([sys.executable, "-c", AGENT, str(agent_file)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        assert agent.stdout is not None and agent.stdin is not None
        assert agent.stdout.readline().strip() == "read"
        cli = subprocess.Popen([sys.executable, "-m", "panewatch", "hooks", "install", "--agent", "claude"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert cli.stderr is not None
        said = cli.stderr.readline()  # install says it waits for the agent's lock, or (before) finishes
        agent.stdin.write("\n")
        agent.stdin.flush()
        assert agent.stdout.readline().strip() == "wrote" and agent.wait(10) == 0
        agent.stdout.close()
        agent.stdin.close()
        _out, err = cli.communicate(timeout=60)
        assert cli.returncode == 0, err
        waited += "waiting for" in said and "another program is writing" in said
        doc = json.loads(agent_file.read_text(encoding="utf-8"))
        assert doc["agentRuns"] == run  # the agent's own change is always there
        if not has_hooks(agent_file):
            lost.append(run)
    assert not lost, f"the agent's write removed the hooks in {len(lost)} of 10 runs"
    assert waited == 10


def test_an_agent_writing_without_a_lock_keeps_its_change_and_the_hooks_are_added_to_it(
        agent_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that takes no lock writes between install's read and its rename: before, install renamed
    its copy over the agent's change; now it sees the file changed and edits the new bytes."""
    real_read = hooksinstall._read
    writes = {"left": 1}

    def read_then_the_agent_writes(path: Path) -> bytes | None:
        data = real_read(path)
        if path == agent_file and writes["left"]:
            writes["left"] -= 1
            subprocess.run([sys.executable, "-c", "import json, sys; p = sys.argv[1]; d = json.load(open(p)); "
                            "d['theme'] = 'dark'; open(p, 'w').write(json.dumps(d))", str(agent_file)], check=True)
        return data

    monkeypatch.setattr(hooksinstall, "_read", read_then_the_agent_writes)
    assert install("claude", launcher=LAUNCHER).action == "installed"
    doc = json.loads(agent_file.read_text(encoding="utf-8"))
    assert doc["theme"] == "dark" and doc["model"] == "opus" and has_hooks(agent_file)
