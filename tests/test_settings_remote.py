"""`[[remote]]` in config.toml: hosts as configuration, each problem naming the entry and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from panewatch.errors import SettingsError
from panewatch.runtime.settings import RemoteSettings, Settings, load_settings


def load(tmp_path: Path, text: str, strict: bool = False) -> Settings:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_settings(path, strict=strict)


def test_hosts_with_their_optional_keys(tmp_path: Path) -> None:
    s = load(tmp_path, '[[remote]]\nhost = "me@devbox"\n\n[[remote]]\nhost = "build"\ntmux_socket = "/tmp/t/s"\n'
                       'name = "ci"\nalive_interval = 2\nalive_count = 4\nconnect_timeout = 7\n')
    assert s.remotes == (RemoteSettings("me@devbox"),
                         RemoteSettings("build", "/tmp/t/s", "ci", 2, 4, 7))
    assert s.remotes[0].label == "me@devbox" and s.remotes[1].label == "ci"
    assert s.warnings == ()


@pytest.mark.parametrize(("text", "words"), [
    ('[[remote]]\nname = "x"\n', "remote[0].host: required"),
    ('[[remote]]\nhost = "-oProxyCommand=evil"\n', "remote[0].host: '-oProxyCommand=evil' is not a host name"),
    ('[[remote]]\nhost = "a b"\n', "is not a host name"),
    ('[[remote]]\nhost = "a"\nname = "x:y"\n', "remote[0].name: must be a word"),
    ('[[remote]]\nhost = "a"\n[[remote]]\nhost = "a"\n', "remote[1]: a second host named 'a'"),
    ('remote = "a"\n', "remote: must be an array of tables"),
    ('[[remote]]\nhost = "a"\nport = 22\n', "remote[0].port: unknown key"),
])
def test_a_bad_entry_is_left_out_and_named(tmp_path: Path, text: str, words: str) -> None:
    s = load(tmp_path, text)
    assert any(words in w for w in s.warnings), s.warnings
    with pytest.raises(SettingsError, match="remote"):
        load(tmp_path, text, strict=True)


def test_a_bad_optional_value_keeps_the_host_with_the_default(tmp_path: Path) -> None:
    s = load(tmp_path, '[[remote]]\nhost = "a"\nalive_interval = 0\nconnect_timeout = "5"\n')
    assert s.remotes == (RemoteSettings("a"),)
    assert len(s.warnings) == 2
