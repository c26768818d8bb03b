"""How fast a blocked pane shows on the board at N panes (default 200), in a real browser.

    python -m panewatch.lab.bench.board [--panes 200] [--seconds 40] [--seed 7] [--screenshot F.png]

A real `panewatch serve` (subprocess) owns N headless panes, each a real PTY running `cat FIFO`;
one `panewatch.lab.loadgen` process draws N seeded fake Claude Code agents into the FIFOs (its bot
answers every prompt after 3-8 s) and writes the true states to a side file. Headless Chromium
(Debian's `chromium`, driven by Playwright) keeps the board open; the page records, for every card
whose state changed, when it was received and when the next animation frame (the paint) ran.

Printed: for each prompt, the latency from the daemon's detection (the card's `since`) to the
painted card, and from the true moment the prompt was drawn (loadgen's truth) to the painted card;
the daemon's CPU; misses (prompts that never showed as blocked). Numbers only, nothing asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from panewatch.board import client
from panewatch.lab.loadgen import fifo_path

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _row(name: str, values: list[float]) -> str:
    if not values:
        return f"| {name} | 0 | - | - | - |"
    ms = [v * 1000 for v in values]
    return f"| {name} | {len(ms)} | {statistics.median(ms):.0f} | {_pct(ms, 0.95):.0f} | {max(ms):.0f} |"


async def _make_panes(fifo_dir: Path, panes: int) -> dict[str, int]:
    """Headless panes over one connection; pane id -> loadgen index."""
    peer = await client.connect()
    peer.start()
    ids: dict[str, int] = {}
    try:
        for i in range(panes):
            os.mkfifo(fifo_path(fifo_dir, i))
            reply = await peer.request("new", argv=["cat", str(fifo_path(fifo_dir, i))], name=f"fake-{i:03d}",
                                       agent="claude", cwd=str(fifo_dir), cols=120, rows=32)
            ids[reply["card"]["id"]] = i
    finally:
        await peer.close()
    return ids


def run(panes: int = 200, seconds: float = 40.0, seed: int = 7, screenshot: Path | None = None,
        chromium: str | None = None) -> str:
    from playwright.sync_api import sync_playwright

    chromium = chromium or shutil.which("chromium") or "/usr/bin/chromium"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8 * panes + 256)), hard))
    with tempfile.TemporaryDirectory(prefix="panewatch-board-bench-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "PANEWATCH_RUNTIME_DIR": str(work / "run"), "PANEWATCH_BOARD": "off"}
        (work / "run").mkdir(mode=0o700)
        os.environ.update(PANEWATCH_RUNTIME_DIR=env["PANEWATCH_RUNTIME_DIR"])
        serve = subprocess.Popen([sys.executable, "-m", "panewatch", "serve"], stdout=subprocess.PIPE, env=env,
                                 text=True)
        assert serve.stdout is not None
        url = serve.stdout.readline().strip().split(": ", 1)[1]
        gen: subprocess.Popen[bytes] | None = None
        try:
            ids = asyncio.run(_make_panes(work, panes))
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                page.goto(url)
                page.wait_for_selector(".card")
                truth_path = work / "truth.jsonl"
                daemon = psutil.Process(serve.pid)
                cpu0, t0 = sum(daemon.cpu_times()[:2]), time.monotonic()
                gen = subprocess.Popen([sys.executable, "-m", "panewatch.lab.loadgen", "--fifo-dir", str(work),
                                        "--panes",
                                        str(panes), "--truth", str(truth_path), "--seconds", str(seconds),
                                        "--seed", str(seed)], env=env)
                shot_at = time.monotonic() + seconds / 2
                while gen.poll() is None:
                    page.wait_for_timeout(250)  # keeps the page's event loop turning while we wait
                    if screenshot is not None and time.monotonic() >= shot_at:
                        page.screenshot(path=str(screenshot))
                        shot_at = float("inf")
                window = time.monotonic() - t0
                cpu = (sum(daemon.cpu_times()[:2]) - cpu0) / window * 100
                page.wait_for_timeout(1000)  # the last frames
                log: list[dict[str, Any]] = page.evaluate("window.panewatchBoard.renderLog")
                browser.close()
        finally:
            if gen is not None and gen.poll() is None:
                gen.kill()
                gen.wait()
            serve.terminate()
            serve.wait(30)
            serve.stdout.close()
        truth = [json.loads(line) for line in truth_path.read_text().splitlines() if line.strip()]
    return _report(panes, seconds, ids, log, truth, cpu)


def _report(panes: int, seconds: float, ids: dict[str, int], log: list[dict[str, Any]],
            truth: list[dict[str, Any]], cpu: float) -> str:
    shown = [e for e in log if e.get("shown")]
    blocked = [e for e in shown if e["state"] == "blocked"]
    detect_to_card = [e["shown"] / 1000 - e["since"] for e in blocked]
    detect_to_sent = [e["sent"] - e["since"] for e in blocked if e.get("sent")]
    sent_to_received = [e["received"] / 1000 - e["sent"] for e in blocked if e.get("sent")]
    received_to_painted = [(e["shown"] - e["received"]) / 1000 for e in blocked]
    by_pane: dict[int, list[dict[str, Any]]] = {}
    for e in shown:
        if e["id"] in ids:
            by_pane.setdefault(ids[e["id"]], []).append(e)
    timelines: dict[int, list[tuple[float, str]]] = {}
    for line in truth:
        timelines.setdefault(int(line["pane"]), []).append((float(line["t"]), str(line["state"])))
    truth_to_card: list[float] = []
    prompts = missed = 0
    for pane, timeline in timelines.items():
        for i, (t, state) in enumerate(timeline):
            if state != "blocked" or i + 1 >= len(timeline) or timeline[i + 1][1] == "exited":
                continue  # the run's end cut this prompt off: not scored
            prompts += 1
            end = timeline[i + 1][0]
            hit = next((e for e in by_pane.get(pane, []) if e["state"] == "blocked"
                        and t - 0.05 <= e["since"] <= end + 0.05), None)
            if hit is None:
                missed += 1
            else:
                truth_to_card.append(max(0.0, hit["shown"] / 1000 - t))
    out = [f"board at {panes} panes, {seconds:.0f} s of load: {prompts} prompts, {missed} never shown as blocked; "
           f"daemon CPU {cpu:.0f}% of one core",
           "", "| latency | n | median ms | p95 ms | max ms |", "|---|---|---|---|---|",
           _row("daemon detects blocked → card painted in the browser", detect_to_card),
           _row("  of which: detection → sent on the websocket (daemon)", detect_to_sent),
           _row("  of which: sent → handled by the page's script", sent_to_received),
           _row("  of which: handled → rendered in the next animation frame", received_to_painted),
           _row("prompt drawn (truth) → card painted in the browser", truth_to_card)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m panewatch.lab.bench.board")
    parser.add_argument("--panes", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--screenshot", type=Path, help="save a screenshot of the board mid-run")
    parser.add_argument("--chromium", help="the browser binary (default: chromium on PATH)")
    ns = parser.parse_args(argv)
    print(run(ns.panes, ns.seconds, ns.seed, ns.screenshot, ns.chromium))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
