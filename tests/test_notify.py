"""Notifier on a fake clock with real child processes; settings from real files."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from panewatch.errors import SettingsError
from panewatch.runtime.notify import Notifier, clean
from panewatch.runtime.settings import NotifySettings, Settings, load_settings, settings_path


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def no_desktop(name: str) -> str | None:
    return None


def terminal_only(writes: list[bytes], **kw: object) -> tuple[Notifier, FakeClock]:
    clock = FakeClock()
    settings = NotifySettings(backends=("terminal",), **kw)  # type: ignore[arg-type]
    return Notifier(settings, clock, terminal_writer=writes.append, which=no_desktop), clock


def test_blocked_fires_once_per_cooldown_per_pane_and_state() -> None:
    writes: list[bytes] = []
    notifier, clock = terminal_only(writes)
    assert notifier.on_change("p1", "claude", "working", "blocked", "Do you want to proceed?") == ["terminal"]
    assert notifier.on_change("p1", "claude", "blocked", "blocked") == []  # not an entry into blocked
    clock.now += 10
    notifier.on_change("p1", "claude", "blocked", "working")
    assert notifier.on_change("p1", "claude", "working", "blocked") == []  # within 30 s
    assert notifier.on_change("p2", "claude", "working", "blocked") == ["terminal"]  # other pane
    clock.now += 20  # 30 s after the first
    assert notifier.on_change("p1", "claude", "working", "blocked") == ["terminal"]
    assert notifier.suppressed == 1
    assert len(writes) == 3


def test_turn_end_only_when_configured() -> None:
    writes: list[bytes] = []
    notifier, _ = terminal_only(writes)
    assert notifier.on_change("p", "claude", "working", "idle") == []
    notifier, _ = terminal_only(writes, on_turn_end=True)
    assert notifier.on_change("p", "claude", "working", "idle") == ["terminal"]
    assert notifier.on_change("p", "claude", "working", "idle") == []  # cooldown per (pane, idle)
    assert notifier.on_change("p", "claude", "working", "blocked") == ["terminal"]  # its own cooldown
    assert notifier.on_change("p", "claude", "blocked", "idle") == []  # not a working turn ending


@pytest.mark.parametrize(("kind", "start"), [("osc9", b"\x1b]9;"), ("osc777", b"\x1b]777;notify;"), ("bell", b"\x07")])
def test_terminal_sequences_and_no_escape_injection(kind: str, start: bytes) -> None:
    writes: list[bytes] = []
    notifier, _ = terminal_only(writes, terminal=kind)
    notifier.on_change("p", "claude", "working", "blocked", "Run `rm`?\x07\x1b]0;pwned\x1b\\ ok")
    (data,) = writes
    assert data.startswith(start) and data.endswith(b"\x07")
    assert data.count(b"\x1b") == (0 if kind == "bell" else 1)
    assert data.count(b"\x07") == 1
    if kind != "bell":
        assert b"Run `rm`?" in data and b"pwned" in data


def test_clean_makes_one_bounded_line() -> None:
    assert clean("a\nb\tc\x1b[31m\x9b") == "a b c [31m"
    assert len(clean("x" * 1000)) == 240


def test_a_failing_backend_does_not_raise_and_is_counted(tmp_path: Path) -> None:
    def broken_writer(data: bytes) -> None:
        raise OSError("terminal gone")

    notifier = Notifier(NotifySettings(backends=("desktop", "terminal")), FakeClock(),
                        terminal_writer=broken_writer, which=lambda name: str(tmp_path / "no-such-binary"))
    assert notifier.on_change("p", "claude", "idle", "blocked") == []
    assert dict(notifier.failures) == {"desktop": 1, "terminal": 1}


def test_user_command_gets_the_environment(tmp_path: Path) -> None:
    out = tmp_path / "env.txt"
    cmd = script(tmp_path / "hook.sh", f'env | grep ^PANEWATCH_ > "{out}.tmp" && mv "{out}.tmp" "{out}"\n')
    notifier = Notifier(NotifySettings(backends=(), command=str(cmd)), FakeClock(), which=no_desktop)
    assert notifier.on_change("pane-3", "codex", "working", "blocked", "Would you like to run `ls`?") == ["command"]
    until(lambda: out.exists())
    env = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert env["PANEWATCH_PANE"] == "pane-3"
    assert env["PANEWATCH_STATE"] == "blocked"
    assert env["PANEWATCH_AGENT"] == "codex"
    assert env["PANEWATCH_PROMPT"] == "Would you like to run `ls`?"
    until(lambda: notifier.running() == 0)
    assert not notifier.failures


def test_failing_and_hanging_commands_are_reaped_and_counted(tmp_path: Path) -> None:
    notifier = Notifier(NotifySettings(backends=(), command="exit 3"), FakeClock(), which=no_desktop)
    assert notifier.on_change("p", "a", "idle", "blocked") == ["command"]
    until(lambda: notifier.failures["command"] == 1 and notifier.running() == 0)

    clock = FakeClock()
    pidfile = tmp_path / "pid"
    hanging = Notifier(NotifySettings(backends=(), command=f"echo $$ > {pidfile}; exec sleep 60", command_timeout=0.2),
                       clock, which=no_desktop)
    hanging.on_change("p", "a", "idle", "blocked")
    until(lambda: hanging.failures["command"] == 1 and hanging.running() == 0)
    until(lambda: pidfile.exists() and pidfile.read_text().strip() != "")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_desktop_uses_notify_send_or_osascript_and_skips_silently_without(tmp_path: Path) -> None:
    log = tmp_path / "args"
    fake = script(tmp_path / "fake", f'for a in "$@"; do echo "$a"; done > "{log}.tmp"; mv "{log}.tmp" "{log}"\n')
    settings = NotifySettings(backends=("desktop",))

    linux = Notifier(settings, FakeClock(), which=lambda name: str(fake) if name == "notify-send" else None,
                     platform="linux")
    assert linux.on_change("p", "gemini", "working", "blocked", "Allow execution of [Shell]?") == ["desktop"]
    until(lambda: log.exists())
    assert log.read_text().splitlines() == ["--app-name=panewatch", "gemini needs your answer (p)",
                                            "Allow execution of [Shell]?"]
    log.unlink()

    mac = Notifier(settings, FakeClock(), which=lambda name: str(fake) if name == "osascript" else None,
                   platform="darwin")
    assert mac.on_change("p", "claude", "working", "blocked", 'say "hi"') == ["desktop"]
    until(lambda: log.exists())
    args = log.read_text().splitlines()
    assert args[-2:] == ["claude needs your answer (p)", 'say "hi"']  # as argv: nothing to escape

    nothing = Notifier(settings, FakeClock(), which=no_desktop)
    assert nothing.on_change("p", "claude", "working", "blocked") == []
    assert not nothing.failures
    until(lambda: linux.running() == 0 and mac.running() == 0)


def test_a_click_on_the_desktop_notification_opens_the_board_at_that_pane(tmp_path: Path) -> None:
    """notify-send >= 0.7.10 prints the action picked: "default" (the body) or "open" (the button)."""
    log = tmp_path / "args"
    answer = tmp_path / "answer"  # what the fake user does: the action to print, or nothing (closed it)
    fake = script(tmp_path / "notify-send", f"""if [ "$1" = --help ]; then echo '  -A, --action=[NAME=]Text'; exit; fi
for a in "$@"; do echo "$a"; done > "{log}.tmp"; mv "{log}.tmp" "{log}"
cat "{answer}"
""")
    opened: list[str] = []
    notifier = Notifier(NotifySettings(backends=("desktop",)), FakeClock(), platform="linux", open_board=opened.append,
                        which=lambda name: str(fake) if name == "notify-send" else None)
    for i, picked in enumerate(["default\n", "open\n", ""]):
        answer.write_text(picked)
        assert notifier.on_change(f"p{i}", "claude", "working", "blocked", "Proceed?", board_pane=str(i)) == ["desktop"]
        until(lambda: log.exists() and notifier.running() == 0)
        assert log.read_text().splitlines() == ["--app-name=panewatch", "--action=default=Open in board",
                                                "--action=open=Open in board", f"claude needs your answer (p{i})",
                                                "Proceed?"]
        log.unlink()
    assert opened == ["0", "1"]  # the third was closed without a click

    # No board id (a `run` pane not on the board): a plain notification, nothing to click.
    answer.write_text("default\n")
    notifier.on_change("p9", "claude", "working", "blocked", board_pane=None)
    until(lambda: log.exists() and notifier.running() == 0)
    assert not any(a.startswith("--action") for a in log.read_text().splitlines()) and opened == ["0", "1"]
    assert not notifier.failures

    # An older notify-send without --action: the plain notification (--action would make it fail).
    old = script(tmp_path / "old-notify-send", f"""if [ "$1" = --help ]; then echo '  -u, --urgency=LEVEL'; exit; fi
case "$*" in *--action*) exit 1;; esac; for a in "$@"; do echo "$a"; done > "{log}.tmp"; mv "{log}.tmp" "{log}"
""")
    log.unlink()
    plain = Notifier(NotifySettings(backends=("desktop",)), FakeClock(), platform="linux", open_board=opened.append,
                     which=lambda name: str(old) if name == "notify-send" else None)
    plain.on_change("p", "claude", "working", "blocked", board_pane="3")
    until(lambda: log.exists() and plain.running() == 0)
    assert log.read_text().splitlines()[0:2] == ["--app-name=panewatch", "claude needs your answer (p)"]
    assert not plain.failures and opened == ["0", "1"]


def test_close_kills_running_children() -> None:
    notifier = Notifier(NotifySettings(backends=(), command="exec sleep 60", command_timeout=60), FakeClock(),
                        which=no_desktop)
    notifier.on_change("p", "a", "idle", "blocked")
    assert notifier.running() == 1
    notifier.close()
    until(lambda: notifier.running() == 0)


# -- settings ----------------------------------------------------------------------------------


def test_defaults_need_no_file() -> None:
    assert not settings_path().exists()
    settings = load_settings()
    assert settings == Settings()
    assert settings.notify.backends == ("desktop", "terminal")
    assert (settings.notify.cooldown, settings.notify.on_turn_end, settings.notify.command) == (30.0, False, "")
    assert settings.notify.terminal == "osc9"


def test_a_good_file(tmp_path: Path) -> None:
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_text('[notify]\nbackends = ["terminal", "command"]\nterminal = "osc777"\non_turn_end = true\n'
                    'cooldown = 5\ncommand = "notify-me"\n')
    settings = load_settings()
    assert settings.warnings == ()
    assert settings.notify == NotifySettings(backends=("terminal", "command"), terminal="osc777", on_turn_end=True,
                                             cooldown=5.0, command="notify-me")


def test_bad_values_fall_back_per_key_with_warnings_naming_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('colour = 1\n[notify]\nbackends = ["desktop", "pager"]\nterminal = "kitty"\ncooldown = -1\n'
                    'on_turn_end = "yes"\ncommand = "ok"\nspeed = 2\n')
    settings = load_settings(path)
    assert settings.notify == NotifySettings(backends=("desktop",), command="ok")
    text = "\n".join(settings.warnings)
    keys = ("colour", "notify.backends", "notify.terminal", "notify.cooldown", "notify.on_turn_end", "notify.speed")
    for key in keys:
        assert f"{path}: {key}:" in text, key
    with pytest.raises(SettingsError) as info:
        load_settings(path, strict=True)
    assert len(info.value.problems) == 6


def test_not_toml_falls_back_to_defaults(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[notify\nbackends = \n")
    settings = load_settings(path)
    assert settings.notify == NotifySettings()
    assert len(settings.warnings) == 1 and str(path) in settings.warnings[0] and "TOML" in settings.warnings[0]


def test_agents_settings_are_known_and_checked(tmp_path: Path) -> None:
    from panewatch.runtime.settings import load_settings

    path = tmp_path / "config.toml"
    path.write_text('[agents]\nupdate_from = " https://example.org/agents/ "\ncolour = 3\n', encoding="utf-8")
    settings = load_settings(path)
    assert settings.agents.update_from == "https://example.org/agents/"
    assert any("agents.colour: unknown key" in w for w in settings.warnings)
    assert not any("agents: unknown setting" in w for w in settings.warnings)


def test_a_state_change_notifies_once_and_reads_the_prompt_only_when_shown() -> None:
    from panewatch.core.combine import PaneState
    from panewatch.core.machine import StateChange

    writes: list[bytes] = []
    notifier, _ = terminal_only(writes)
    reads: list[str] = []

    def prompt() -> str:
        reads.append("read")
        return "Do you want to proceed?"

    def change(old: str | None, new: str) -> StateChange:
        return StateChange(0.0, "%3", None if old is None else PaneState(old, "screen", None),  # type: ignore[arg-type]
                           PaneState(new, "screen", "permission-question"), "claude")  # type: ignore[arg-type]

    assert notifier.on_state_change(change(None, "blocked"), prompt_text=prompt) == []  # its first state: no change
    assert notifier.on_state_change(change("blocked", "idle"), prompt_text=prompt) == []  # not wanted
    assert reads == []
    assert notifier.on_state_change(change("working", "blocked"), name="api", prompt_text=prompt) == ["terminal"]
    assert reads == ["read"] and b"(api)" in writes[-1] and b"Do you want to proceed?" in writes[-1]
