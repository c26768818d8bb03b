"""Mock model servers for running the real agent CLIs offline (tests and captures).

    with MockServer("anthropic") as mock:   # or "openai" (Codex: Responses), "gemini", "chat" (Chat Completions)
        mock.url        # http://127.0.0.1:PORT
        mock.events     # [{"t", "event": "request" | "reply_sent" | ..., "step", ...}]

The scenario comes from the prompt text: ``SCN=bash DELAY=5`` (see scenario.py).
"""

from panewatch.testing.mock.exchange import ClientGone, Event, Recorder
from panewatch.testing.mock.scenario import KINDS, SCENARIOS, Control, Reply, ToolCall, next_reply, parse_control
from panewatch.testing.mock.server import MockServer

__all__ = [
    "KINDS",
    "SCENARIOS",
    "ClientGone",
    "Control",
    "Event",
    "MockServer",
    "Recorder",
    "Reply",
    "ToolCall",
    "next_reply",
    "parse_control",
]
