"""Claude Code's hooks installed by `panewatch hooks install` into a private HOME (tests/test_tmux_hooks.py,
tests/test_hookonly.py): the `installed` fixture and the settings file it starts from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from panewatch.runtime.hooksinstall import OURS

ORIGINAL = b'{\n  "permissions": {"defaultMode": "default"}\n}\n'


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """`hooks install --agent claude` into a private HOME; the installed command of each hook event."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_bytes(ORIGINAL)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    out = subprocess.run([sys.executable, "-m", "panewatch", "hooks", "install", "--agent", "claude"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads((home / ".claude" / "settings.json").read_bytes())
    found = {event: h["command"] for event, groups in doc["hooks"].items() for g in groups for h in g["hooks"]
             if OURS.search(h["command"])}
    assert set(found) >= {"PreToolUse", "PermissionRequest", "Stop", "Notification"}
    return found
