"""`python -m panewatch.testing.mock anthropic|openai|gemini [--port N]`: serve a mock until Ctrl-C."""

from __future__ import annotations

import argparse
import json
import sys
import threading

from panewatch.testing.mock.scenario import KINDS
from panewatch.testing.mock.server import MockServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m panewatch.testing.mock", description=__doc__)
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free)")
    parser.add_argument("--events", help="append events to this JSONL file")
    parser.add_argument("--scenario", default="bash", help="scenario when the prompt has no SCN=")
    parser.add_argument("--delay", type=float, default=1.0, help="delay when the prompt has no DELAY=")
    parser.add_argument("--dump-bodies", action="store_true", help="record request bodies as events")
    parser.add_argument("-v", "--verbose", action="store_true", help="log requests and echo events")
    args = parser.parse_args(argv)
    mock = MockServer(args.kind, port=args.port, events_path=args.events,
                      default_scenario=args.scenario, default_delay=args.delay,
                      dump_bodies=args.dump_bodies, verbose=args.verbose)
    with mock:
        print(mock.url, flush=True)
        seen = 0
        try:
            while not threading.Event().wait(0.2):
                events = mock.events
                if args.verbose:
                    for event in events[seen:]:
                        print(json.dumps(event, ensure_ascii=False)[:300], file=sys.stderr, flush=True)
                seen = len(events)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
