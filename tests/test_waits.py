"""core/waits.py: waits from state changes (pure), and their summary."""

from __future__ import annotations

from panewatch.core.waits import Wait, WaitTracker, summarize


def run(tracker: WaitTracker, pane: str, changes: list[tuple[float, str]], agent: str = "claude") -> list[Wait]:
    out: list[Wait] = []
    for t, state in changes:
        out += tracker.change(pane, t, state, pane_id=pane, name=f"n{pane}", agent=agent)
    return out


def spans(waits: list[Wait]) -> list[tuple[str, float, float, str]]:
    return [(w.kind, w.start, w.end, w.ended_by) for w in waits]


def test_a_turn_with_a_prompt_gives_a_blocked_wait_then_an_idle_wait() -> None:
    tracker = WaitTracker()
    waits = run(tracker, "a", [(0, "idle"), (10, "working"), (12, "blocked"), (47.5, "working"), (60, "idle"),
                               (100, "working"), (130, "idle")])
    assert spans(waits) == [("blocked", 12, 47.5, "working"), ("idle", 60, 100, "working")]
    assert all(w.counted for w in waits) and waits[0].seconds == 35.5
    assert [(w.kind, w.start, w.end) for w in tracker.ongoing(150)] == [("idle", 130, 150)]


def test_a_refusal_ends_the_turn_a_new_pane_waits_for_no_one_and_exits_are_not_counted() -> None:
    tracker = WaitTracker()
    # Idle from its start: no turn ended, no wait. Refused at the dialog: blocked → idle, then idle waits.
    waits = run(tracker, "b", [(0, "idle"), (5, "blocked"), (9, "idle"), (20, "blocked"), (30, "exited")])
    assert spans(waits) == [("blocked", 5, 9, "idle"), ("idle", 9, 20, "blocked"), ("blocked", 20, 30, "exited")]
    assert [w.counted for w in waits] == [True, True, False]


def test_panes_are_apart_and_a_pane_that_leaves_ends_its_wait_unanswered() -> None:
    tracker = WaitTracker()
    run(tracker, "a", [(0, "working"), (1, "blocked")])
    assert spans(run(tracker, "b", [(0, "working"), (2, "idle"), (3, "working")])) == [("idle", 2, 3, "working")]
    gone = tracker.gone("a", 8)
    assert spans(gone) == [("blocked", 1, 8, "gone")] and not gone[0].counted
    assert tracker.gone("a", 9) == [] and tracker.ongoing(10) == []


def test_a_pane_first_seen_blocked_waits_from_when_it_became_blocked() -> None:
    tracker = WaitTracker()  # a `run` pane registering with a new daemon: its card says since when
    assert tracker.change("r", 100.0, "blocked", old=None) == []
    assert spans(tracker.change("r", 130.0, "working")) == [("blocked", 100.0, 130.0, "working")]
    # First seen idle, with the state it came from: a turn had ended.
    assert tracker.change("s", 5.0, "idle", old="working") == []
    assert spans(tracker.change("s", 7.0, "working")) == [("idle", 5.0, 7.0, "working")]


def test_the_summary_adds_up_per_agent_pane_and_day_and_lists_the_longest() -> None:
    def wait(kind: str, pane: str, agent: str | None, start: float, seconds: float, ended_by: str = "working") -> Wait:
        return Wait(kind, pane, pane, f"n{pane}", agent, start, start + seconds, ended_by)  # type: ignore[arg-type]

    waits = [wait("blocked", "a", "claude", 0, 30), wait("blocked", "a", "claude", 100, 90),
             wait("idle", "b", "codex", 86400 + 5, 600), wait("blocked", "b", "codex", 86400 + 700, 5),
             wait("idle", "c", None, 50, 1000, "exited")]
    summary = summarize(waits, lambda t: f"day{int(t // 86400)}", since=0, until=2 * 86400)
    assert summary["totals"]["blocked"] == {"seconds": 125.0, "count": 3, "longest": 90.0}
    assert summary["totals"]["idle"] == {"seconds": 600.0, "count": 1, "longest": 600.0}  # the exit not counted
    assert [(a["agent"], a["blocked"]["seconds"], a["idle"]["seconds"]) for a in summary["agents"]] == [
        ("claude", 120.0, 0.0), ("codex", 5.0, 600.0)]
    assert [(p["pane"], p["name"]) for p in summary["panes"]] == [("b", "nb"), ("a", "na")]  # most lost first
    assert [(d["day"], d["blocked"]["count"], d["idle"]["count"]) for d in summary["days"]] == [
        ("day0", 2, 0), ("day1", 1, 1)]
    assert [w["seconds"] for w in summary["longest"]] == [600.0, 90.0, 30.0, 5.0]
    assert summary["ongoing"] == []
