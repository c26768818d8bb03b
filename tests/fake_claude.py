"""A scripted fake agent for the live and run tests: draws Claude-Code-like screens, one phase per key.

Phases: working (`esc to interrupt`) → key → permission dialog below a rule → key (`q` exits with the
dialog still drawn) → idle (`? for shortcuts`) → key → exit 0. `--inline` stays on the main screen.
"""

from pathlib import Path

FAKE = r'''
import os, sys, termios, tty
inline = "--inline" in sys.argv
tty.setcbreak(0)
w = sys.stdout.write
RULE = "─" * 70

def box(footer):
    w("\x1b[24;1H\x1b[J" + RULE + "\x1b[25;1H> \x1b[26;1H" + RULE + "\x1b[27;1H  " + footer)

def key():
    sys.stdout.flush()
    return os.read(0, 1)

if not inline:
    w("\x1b[?1049h")
w("\x1b[2J\x1b[H Claude Code v2.1.332\r\n\r\n> fix the tests")
w("\x1b]0;◐ Claude Code\x07")
box("esc to interrupt")
key()
w("\x1b]0;✳ Claude Code\x07")
w("\x1b[24;1H\x1b[J" + RULE + "\x1b[25;1H Bash command\x1b[26;1H   rm -rf build/")
w("\x1b[28;1H Do you want to proceed?\x1b[29;1H ❯ 1. Yes\x1b[30;1H   2. No")
w("\x1b[31;1H Esc to cancel · Tab to amend")
if key() == b"q":
    sys.exit(3)  # leave the dialog on screen, as a crashed agent would
box("? for shortcuts")
key()
if not inline:
    w("\x1b[?1049l")
sys.stdout.flush()
'''



def write_fake(folder: Path) -> Path:
    """The fake as `FOLDER/claude-code/cli.js`: panewatch names its process Claude Code, as it would the real
    CLI's (core/identity.py), so its pane is an agent's (a `fake_claude.py` would be "another program")."""
    script = folder / "claude-code" / "cli.js"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(FAKE, encoding="utf-8")
    return script
