"""The pure core: bytes and times in, verdicts and state changes out.

Nothing here reads a clock, opens a file descriptor or starts a process (no asyncio, os, socket,
subprocess, threading, time or psutil: `tests/test_layers.py` enforces it). The runtime moves bytes
and timers and calls in; replays and golden tests drive the very same objects in virtual time.
"""
