"""Go there: bring the terminal window of a hook-only pane's agent to the front, where its terminal allows it.

    kitty         remote control (`allow_remote_control yes` and `listen_on unix:…` in kitty.conf, so a window
                  has $KITTY_LISTEN_ON): `kitty @ --to SOCKET focus-window --match id:$KITTY_WINDOW_ID`
    WezTerm       `wezterm cli activate-pane --pane-id $WEZTERM_PANE` ($WEZTERM_UNIX_SOCKET names the GUI)
    iTerm2        AppleScript (macOS): the session whose unique id is $ITERM_SESSION_ID's, selected, its window
                  in front
    Terminal.app  AppleScript (macOS): the tab whose tty is the agent's, selected, its window in front

`goto_argv` says the command (pure: tests check each terminal's command without that terminal); `go` runs
it, bounded. Everything from the hook's environment is one argv word (no shell), ids checked for their
shape, and AppleScript takes its values as `argv` items, never spliced into the script's source. Other
terminals (GNOME Terminal, VS Code, Ghostty, …) have no such control: CannotGoThere says where the agent is.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil

from panewatch.errors import CannotGoThere
from panewatch.runtime import system
from panewatch.runtime.agentproc import Terminal

TIMEOUT = 5.0
_UUID = re.compile(r"[0-9A-Fa-f-]{8,64}")
_LOCAL_KITTY = re.compile(r"unix:.+|tcp:(localhost|127\.0\.0\.1|\[::1\]):\d{1,5}")

ITERM_SCRIPT = """on run argv
tell application "iTerm2"
  repeat with w in windows
    repeat with t in tabs of w
      repeat with s in sessions of t
        if unique id of s is (item 1 of argv) then
          select w
          select t
          select s
          activate
          return "ok"
        end if
      end repeat
    end repeat
  end repeat
end tell
return "none"
end run"""

TERMINAL_APP_SCRIPT = """on run argv
tell application "Terminal"
  repeat with w in windows
    repeat with t in tabs of w
      if tty of t is (item 1 of argv) then
        set selected of t to true
        set index of w to 1
        activate
        return "ok"
      end if
    end repeat
  end repeat
end tell
return "none"
end run"""


def goto_argv(terminal: Terminal, *, tty: str, where: str) -> tuple[list[str], dict[str, str]]:
    """The command (and the environment variables it needs) that shows this agent's window; CannotGoThere
    saying why not and where the agent is."""
    env, name = terminal.env, terminal.name
    if name == "kitty":
        window, listen = env.get("KITTY_WINDOW_ID", ""), env.get("KITTY_LISTEN_ON", "")
        if not window.isdigit():
            raise CannotGoThere(where, "kitty did not say which window ($KITTY_WINDOW_ID)")
        if not listen:
            raise CannotGoThere(where, "kitty's remote control is off (kitty.conf: allow_remote_control yes, "
                                       "listen_on unix:/tmp/kitty)")
        if not _LOCAL_KITTY.match(listen):  # only this machine's kitty: never a connection elsewhere
            raise CannotGoThere(where, "kitty listens somewhere other than a local socket or loopback port")
        return [_tool("kitty"), "@", "--to", listen, "focus-window", "--match", f"id:{window}"], {}
    if name == "WezTerm":
        pane = env.get("WEZTERM_PANE", "")
        if not pane.isdigit():
            raise CannotGoThere(where, "WezTerm did not say which pane ($WEZTERM_PANE)")
        extra = {"WEZTERM_UNIX_SOCKET": env["WEZTERM_UNIX_SOCKET"]} if env.get("WEZTERM_UNIX_SOCKET") else {}
        return [_tool("wezterm"), "cli", "activate-pane", "--pane-id", pane], extra
    if name == "iTerm2":
        session = env.get("ITERM_SESSION_ID", "").rpartition(":")[2]
        if not system.is_mac() or not _UUID.fullmatch(session):
            raise CannotGoThere(where, "iTerm2 is driven by AppleScript on macOS, with its session id")
        return [_tool("osascript"), "-e", ITERM_SCRIPT, session], {}
    if name == "Terminal.app":
        if not system.is_mac() or not tty.startswith("/dev/"):
            raise CannotGoThere(where, "Terminal.app is driven by AppleScript on macOS, by the tab's tty")
        return [_tool("osascript"), "-e", TERMINAL_APP_SCRIPT, tty], {}
    raise CannotGoThere(where, f"{name} cannot be told to show a window")


def _tool(name: str) -> str:
    return shutil.which(name) or name


async def go(terminal: Terminal, *, tty: str, where: str) -> None:
    """Run goto_argv's command; CannotGoThere with the terminal's own words when it fails."""
    import os

    argv, extra = goto_argv(terminal, tty=tty, where=where)
    try:
        proc = await asyncio.create_subprocess_exec(*argv, env={**os.environ, **extra},
                                                    stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    except OSError as exc:
        raise CannotGoThere(where, f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise CannotGoThere(where, f"{terminal.name} did not answer within {TIMEOUT:g} s") from None
    said = (err or out).decode("utf-8", "replace").strip()
    if proc.returncode != 0 or out.strip() == b"none":
        raise CannotGoThere(where, f"{terminal.name} could not show it: {said[:300] or f'exit {proc.returncode}'}")
