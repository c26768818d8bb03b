"""A stand-in agent for the remote tests: draws a real Claude Code permission dialog, waits for one key,
then draws what it got (so an answer visibly clears the dialog) and waits."""

import os
import sys
import termios
import time
import tty

with open(sys.argv[1], "rb") as fh:
    dialog = fh.read()
os.write(1, dialog)
fd = sys.stdin.fileno()
saved = termios.tcgetattr(fd)
tty.setraw(fd)
try:
    key = os.read(fd, 1)
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, saved)
os.write(1, b"\x1b[2J\x1b[H" + b"answered " + key + b"\r\n")
time.sleep(600)
