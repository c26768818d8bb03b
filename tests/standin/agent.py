"""A stand-in agent for tmux and remote tests: panewatch names it by its path (…/claude-code/cli.js is
Claude Code, …/codex/cli.js Codex, …/gemini-cli/cli.js Gemini CLI: core/identity.py), as it names the real
CLI, so its pane is an agent's (core/panekind.py), not "another program" whose screen is never judged.

    python3 tests/standin/claude-code/cli.js show FILE...   write the files' bytes to the terminal, then hold
    python3 tests/standin/codex/cli.js play FILE.cast      play a cast's output in real time (raw), then hold
    python3 tests/standin/claude-code/cli.js sh 'STEPS'    run STEPS with /bin/sh (as the agent runs its hooks)
                                                           then hold
    python3 tests/standin/claude-code/cli.js answer FILE   show FILE (a dialog), read one key raw, then show
                                                           "answered KEY" (an answer visibly clears the dialog)
    python3 tests/standin/claude-code/cli.js dialogs FILE  show FILE (a dialog); a key answers it ("answered KEY");
                                                           the next key shows it again, and so on
    python3 tests/standin/codex/cli.js compose             a composer: echoes typed text after its prompt; a CR read
                                                           alone submits it ("SUBMITTED: TEXT", a busy line for
                                                           1.5 s, a fresh prompt)
"""

import json
import os
import subprocess
import sys
import termios
import time
import tty


def play(path: str) -> None:
    fd = sys.stdout.fileno()
    tty.setraw(fd)
    with open(path, encoding="utf-8") as fh:
        next(fh)
        events = [json.loads(line) for line in fh if line.strip()]
    start = time.monotonic()
    for t, kind, data in events:
        if kind != "o":
            continue
        delay = start + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        os.write(fd, data.encode("utf-8", "surrogateescape"))


def compose() -> None:
    fd = sys.stdin.fileno()
    tty.setraw(fd)
    os.write(1, "› ".encode())
    buf = ""
    while data := os.read(fd, 4096):
        if data == b"\r":  # a turn: the text taken, a busy line that moves for a while (as Claude's), the prompt again
            os.write(1, f"\r\nSUBMITTED: {buf}\r\n".encode())
            for tick in range(15):
                os.write(1, f"\r\x1b[K{'·✢*✶✻✽'[tick % 6]} Working… ({tick // 10}s · esc to interrupt)".encode())
                time.sleep(0.1)
            os.write(1, "\r\x1b[K› ".encode())
            buf = ""
        elif data == b"\x03":
            return
        else:
            text = data.decode("utf-8", "replace").replace("\r", "⏎")
            buf += text
            os.write(1, text.encode())


def answer(path: str) -> None:
    with open(path, "rb") as fh:
        os.write(1, fh.read())
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        key = os.read(fd, 1)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    os.write(1, b"\x1b[2J\x1b[H" + b"answered " + key + b"\r\n")


def dialogs(path: str) -> None:
    with open(path, "rb") as fh:
        dialog = fh.read()
    fd = sys.stdin.fileno()
    tty.setraw(fd)
    while True:
        os.write(1, b"\x1b[2J\x1b[H" + dialog)
        key = os.read(fd, 1)
        os.write(1, b"\x1b[2J\x1b[H" + b"answered " + key + b"\r\n")
        if not os.read(fd, 1):
            return


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "show":
        for path in args:
            with open(path, "rb") as fh:
                data = fh.read()
            while data:
                data = data[os.write(1, data):]
    elif mode == "play":
        play(args[0])
    elif mode == "answer":
        answer(args[0])
    elif mode == "dialogs":
        dialogs(args[0])
    elif mode == "compose":
        compose()
        return
    elif mode == "sh":
        subprocess.run(["/bin/sh", "-c", args[0]], check=False)
    else:
        sys.exit(f"unknown mode {mode!r}")
    time.sleep(3600)


if __name__ == "__main__":
    main()
