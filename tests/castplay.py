"""Play a cast's output into this terminal in real time (raw: no onlcr), then hold: a stand-in agent in a
tmux pane for tests/test_tmux_equal.py.  usage: castplay.py FILE.cast"""

import json
import os
import sys
import time
import tty


def main() -> None:
    fd = sys.stdout.fileno()
    tty.setraw(fd)
    with open(sys.argv[1], encoding="utf-8") as fh:
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
    time.sleep(600)


if __name__ == "__main__":
    main()
