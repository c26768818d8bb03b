"""`panewatch bench core`: ingest throughput, cost of one classification, memory per pane.

The raw pyghostty feed rate is measured in the same run on the same chunks, so our layer's
overhead is a ratio that does not depend on how busy the machine is.
"""

from __future__ import annotations

import gc
import os
import random
import time
from collections.abc import Callable

import psutil
import pyghostty

from panewatch.core.classify import classify
from panewatch.core.detector import PaneDetector
from panewatch.core.manifest import load_all
from panewatch.core.policy import ChangeDrivenSchedule
from panewatch.core.replay import replay
from panewatch.core.screen import Screen
from panewatch.golden.cases import find_cases


def synthetic_log(size: int = 10_000_000, seed: int = 1) -> list[bytes]:
    """A 10 MB colourful build log in 4 KB writes: scrolling text, SGR colours, progress lines with \\r."""
    rng = random.Random(seed)
    words = ["compiling", "linking", "warning:", "src/module.rs", "test", "ok", "FAILED", "├──", "✓", "µs"]
    chunks, buf, total = [], bytearray(), 0
    while total < size:
        colour = rng.choice([b"\x1b[32m", b"\x1b[33m", b"\x1b[1;31m", b"\x1b[38;5;244m", b""])
        line = " ".join(rng.choice(words) for _ in range(rng.randint(3, 18))).encode()
        buf += colour + line + b"\x1b[0m" + (b"\r" if rng.random() < 0.2 else b"\r\n")
        if len(buf) >= 4096:
            chunks.append(bytes(buf))
            total += len(buf)
            buf.clear()
    return chunks


def _rate(total_bytes: int, fn: Callable[[], None], repeat: int = 3) -> float:
    """Best-of-`repeat` MB/s."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return total_bytes / best / 1e6


def ingest(chunks: list[bytes], cols: int, rows: int) -> dict[str, float]:
    total = sum(map(len, chunks))
    manifests = load_all().list()

    def raw() -> None:
        term = pyghostty.Terminal(cols=cols, rows=rows, scrollback=0)
        for c in chunks:
            term.feed(c)

    def screen() -> None:
        s = Screen(cols, rows)
        for c in chunks:
            s.feed(c)

    def detector() -> None:  # our per-write path: screen + timing-policy bookkeeping (checks measured apart)
        det = PaneDetector(lambda: manifests, Screen(cols, rows), ChangeDrivenSchedule())
        for i, c in enumerate(chunks):
            det.feed(i * 0.01, c)

    return {"raw": _rate(total, raw), "screen": _rate(total, screen), "detector": _rate(total, detector)}


def classification_cost(cols: int, rows: int, n: int = 2000, until: float = 12.0) -> dict[str, float]:
    """µs per classification of a real Claude screen re-laid at the given size: its output up to `until`
    seconds (12 s: a permission dialog, decided by the first rule; the end: idle, every rule tried)."""
    case = next(c for c in find_cases() if c.name.endswith("full_bash"))
    manifests = load_all().list()
    claude = next(m for m in manifests if m.id == "claude")
    screen = Screen(cols, rows)
    for event in case.cast().events:
        if event.kind == "o" and event.t < until:
            screen.feed(event.data.encode("utf-8", "surrogateescape"))
    snapshot = screen.snapshot()
    classify(snapshot, claude)  # warm-up: RE2 builds its DFA states on first use
    start = time.perf_counter()
    for _ in range(n):
        classify(snapshot, claude)
    rules_us = (time.perf_counter() - start) / n * 1e6
    start = time.perf_counter()
    for _ in range(n):
        screen.invalidate()  # a fresh snapshot from the engine, as after a write
        classify(screen.snapshot(), claude)
    full_us = (time.perf_counter() - start) / n * 1e6
    return {"rules_us": rules_us, "snapshot_and_rules_us": full_us,
            "state": 1.0 if classify(snapshot, claude).state == "blocked" else 0.0}


def memory_per_pane(panes: int = 200) -> float:
    """RSS growth per pane (MB) with every pane holding a real agent screen."""
    data = next(c for c in find_cases() if c.agent == "gemini").cast().output_bytes()
    manifests = load_all().list()
    gc.collect()
    proc = psutil.Process(os.getpid())
    before = proc.memory_info().rss
    keep = []
    for _ in range(panes):
        det = PaneDetector(lambda: manifests, Screen(120, 32))
        det.feed(0.0, data)
        det.tick(1.0)
        keep.append(det)
    gc.collect()
    return (proc.memory_info().rss - before) / panes / 1e6


def run() -> str:
    casts = [c.cast() for c in find_cases()]
    cast_chunks = [e.data.encode("utf-8", "surrogateescape") for c in casts for e in c.events if e.kind == "o"]
    out = ["Ingest (best of 3, same chunks for each column):", "",
           "| input | bytes | raw pyghostty MB/s | Screen.feed MB/s | PaneDetector.feed MB/s | screen/raw "
           "| detector/raw |",
           "|---|---|---|---|---|---|---|"]
    for name, chunks in (("all corpus casts (real writes)", cast_chunks), ("10 MB synthetic log (4 KB writes)",
                                                                          synthetic_log())):
        r = ingest(chunks, 120, 32)
        out.append(f"| {name} | {sum(map(len, chunks)):,} | {r['raw']:.1f} | {r['screen']:.1f} | "
                   f"{r['detector']:.1f} | {r['screen'] / r['raw']:.2f} | {r['detector'] / r['raw']:.2f} |")
    out += ["", "Classification of a real Claude Code screen (rules run on RE2, see pattern.py):", "",
            "| screen | size | rules only (µs) | snapshot + rules (µs) |", "|---|---|---|---|"]
    for name, until in (("blocked (first rule decides)", 12.0), ("idle (every rule tried)", float("inf"))):
        for cols, rows in ((120, 32), (200, 50)):
            c = classification_cost(cols, rows, until=until)
            out.append(f"| {name} | {rows}×{cols} | {c['rules_us']:.1f} | {c['snapshot_and_rules_us']:.1f} |")
    replay_start = time.perf_counter()
    results = [replay(c, load_all().list()) for c in casts]
    replay_s = time.perf_counter() - replay_start
    virtual = sum(r.duration for r in results)
    out += ["", f"Memory per pane (200 panes with a real Gemini screen each): {memory_per_pane():.3f} MB",
            f"Replaying the whole corpus ({virtual:.0f} s of sessions): {replay_s:.2f} s wall, "
            f"{sum(r.checks for r in results)} checks, {sum(r.classifications for r in results)} rule runs"]
    return "\n".join(out)
