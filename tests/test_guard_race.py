"""The guard under pipelined input (issue 10, defect 1): writes that arrive faster than the agent draws
what the previous one caused. First against a scripted pane in virtual time (the wait and its bound),
then a real daemon with a real agent in a headless pane whose first key opens a dialog a moment later."""

from __future__ import annotations

import asyncio
import itertools
import json
import selectors
import socket
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from boardutil import ServeProcess, card, new_agent, wait_for, wait_state
from panewatch.board.client import socket_path
from panewatch.board.model import wire_error
from panewatch.core.cast import read_cast
from panewatch.core.combine import PaneState
from panewatch.core.panekind import PaneKind
from panewatch.core.screen import Snapshot
from panewatch.errors import (
    AgentExitedError,
    NotAnAgentError,
    NotSubmittedError,
    PaneBlockedError,
    PaneBusyError,
    PromptChangedError,
)
from panewatch.golden.cases import bundled_root
from panewatch.runtime.guard import (
    ANSWER_TIMEOUT,
    BUSY_TIMEOUT,
    QUIET,
    REACTION,
    AnswerResult,
    InputGuard,
    SendResult,
)

T = TypeVar("T")

DIALOG = """ Bash command
   {command}

 Do you want to proceed?
 ❯ 1. Yes
   2. No
 Esc to cancel"""


class _JumpingSelector(selectors.SelectSelector):
    """Never waits: when nothing is ready it moves its loop's clock to the next timer instead."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self.loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if not ready and timeout is None:
            raise RuntimeError("the virtual-time loop would wait forever: nothing scheduled")
        if not ready and timeout:
            self.loop.now += timeout
        return ready


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on a virtual clock: sleeps, timers and timeouts behave as on the real one, but
    take no real time, and what the scripted pane draws happens at exact virtual times."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self.now


def virtual(coro: Coroutine[Any, Any, T]) -> T:
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(coro)


def now() -> float:
    return asyncio.get_running_loop().time()


class ScriptedPane:
    """A GuardedPane for the virtual-time loop. `react(data)` says what the agent draws after a write:
    a list of (delay, state, screen text)."""

    def __init__(self, state: str = "idle", text: str = "> ") -> None:
        self.state, self.text = state, text
        self.last_output = self.last_input = float("-inf")
        self.written: list[tuple[float, bytes]] = []
        self.checked_at: list[float] = []
        self.react: Callable[[bytes], list[tuple[float, str, str]]] = lambda data: []
        self.spinner: asyncio.TimerHandle | None = None

    def clock(self) -> float:
        return now()

    def draw(self, state: str, text: str) -> None:
        self.state, self.text = state, text
        self.last_output = now()

    def frames_every(self, period: float) -> None:
        """A spinner: the same screen redrawn every `period`, from now on."""
        self.draw(self.state, self.text)
        self.spinner = asyncio.get_running_loop().call_later(period, self.frames_every, period)

    def classify_now(self) -> PaneState:
        self.checked_at.append(now())
        return PaneState(self.state, "screen", None)

    def snapshot(self) -> Snapshot:
        return Snapshot.from_text(self.text, height=12)

    def write(self, data: bytes) -> None:
        self.written.append((now(), data))
        self.last_input = now()
        for delay, state, text in self.react(data):
            asyncio.get_running_loop().call_later(delay, self.draw, state, text)

    @property
    def typed(self) -> list[bytes]:
        return [data for _, data in self.written]


def opens_dialog_after(delay: float, command: str = "rm -rf build/") -> Callable[[bytes], list[tuple[float, str, str]]]:
    return lambda data: [(delay, "blocked", DIALOG.format(command=command))]


def test_a_second_send_waits_for_the_dialog_the_first_one_opens_and_is_refused() -> None:
    pane = ScriptedPane()
    pane.react = opens_dialog_after(0.03)
    guard = InputGuard(pane, pane_id="p1")

    async def both() -> list[BaseException | None]:
        return await asyncio.gather(guard.send("d", enter=False), guard.send("1"), return_exceptions=True)

    first, second = virtual(both())
    assert not isinstance(first, BaseException) and isinstance(second, PaneBlockedError), (first, second)
    assert second.prompt.question == "Do you want to proceed?"
    assert pane.typed == [b"d"]  # the "1" never reached the dialog
    # The refusal was decided on the screen as it was a reaction window after the write, not before.
    assert pane.checked_at[-1] - pane.written[0][0] >= REACTION


def composer(paste_window: float) -> Callable[[ScriptedPane], Callable[[bytes], list[tuple[float, str, str]]]]:
    """Codex's and Gemini's paste rule: an Enter within `paste_window` of the last typed text is a pasted newline
    (it stays in the input box); alone after the window it submits, and the agent shows working."""
    def react_of(pane: ScriptedPane) -> Callable[[bytes], list[tuple[float, str, str]]]:
        box: list[str] = []
        typed_at = [float("-inf")]

        def react(data: bytes) -> list[tuple[float, str, str]]:
            if data == b"\r" and now() - typed_at[0] >= paste_window:
                return [(0.05, "working", "✻ Working… (esc to interrupt)\n› ")]
            box.append("⏎" if data == b"\r" else data.decode())
            typed_at[0] = now()
            return [(0.005, "idle", "› " + "".join(box))]
        return react
    return react_of


def test_send_presses_enter_as_a_key_of_its_own_after_the_agents_paste_window() -> None:
    pane = ScriptedPane("idle", "› ")
    pane.react = composer(0.12)(pane)
    pane.submit_gap = lambda: 0.2  # type: ignore[attr-defined]  # the agent's manifest says so

    async def sent() -> SendResult:
        return await InputGuard(pane).send("add a test for greet")

    result = virtual(sent())
    assert pane.typed == [b"add a test for greet", b"\r"]
    (typed, _), (entered, _) = pane.written
    assert entered - typed >= 0.2 and result.submitted is True and result.state == "working", result


def test_send_fails_saying_so_when_the_turn_does_not_start() -> None:
    """Enter swallowed (an agent whose paste window is longer than its manifest says): typed, not submitted."""
    pane = ScriptedPane("idle", "› ")
    pane.react = composer(0.5)(pane)
    pane.submit_gap = lambda: 0.2  # type: ignore[attr-defined]

    async def sent() -> None:
        await InputGuard(pane, pane_id="p4").send("add a test for greet")

    with pytest.raises(NotSubmittedError) as info:
        virtual(sent())
    assert "pane p4" in str(info.value) and "add a test for greet⏎" in info.value.line
    assert pane.typed == [b"add a test for greet", b"\r"]


def test_a_dialog_drawn_while_the_text_settles_gets_no_enter() -> None:
    """The agent opened a dialog by itself between the text and its Enter: the Enter would answer it."""
    pane = ScriptedPane("idle", "› ")
    pane.react = opens_dialog_after(0.1)
    pane.submit_gap = lambda: 0.2  # type: ignore[attr-defined]

    async def sent() -> None:
        await InputGuard(pane).send("hello")

    with pytest.raises(PaneBlockedError):
        virtual(sent())
    assert pane.typed == [b"hello"]


def test_nothing_is_sent_or_answered_into_a_pane_that_holds_no_agent() -> None:
    """A shell that printed a dialog's words (`panewatch ls`): the screen says blocked, the process says bash."""
    pane = ScriptedPane("blocked", DIALOG.format(command="rm -rf build/"))
    pane.kind = PaneKind("other", "bash")  # type: ignore[attr-defined]
    guard = InputGuard(pane, pane_id="2")

    async def tries() -> list[BaseException | None]:
        return await asyncio.gather(guard.send("hi"), guard.answer(1, guard.prompt().fingerprint),
                                    return_exceptions=True)

    results = virtual(tries())
    assert all(isinstance(r, NotAnAgentError) for r in results), results
    assert "pane 2 runs bash, not an agent" in str(results[0]) and pane.typed == []


def test_an_answer_reports_whether_it_took_effect() -> None:
    applied = ScriptedPane("blocked", DIALOG.format(command="rm -rf build/"))
    applied.react = lambda data: [(0.03, "working", "✻ Running… (esc to interrupt)")]
    ignored = ScriptedPane("blocked", DIALOG.format(command="rm -rf build/"))  # the key went nowhere

    async def answer(pane: ScriptedPane) -> AnswerResult:
        guard = InputGuard(pane)
        return await guard.answer(1, guard.prompt().fingerprint)

    yes = virtual(answer(applied))
    assert yes.applied and yes.outcome == "applied: the agent is working" and yes.elapsed < ANSWER_TIMEOUT
    no = virtual(answer(ignored))
    assert not no.applied and no.outcome == "not applied: the prompt is still on screen: Do you want to proceed?"
    assert no.elapsed >= ANSWER_TIMEOUT


def test_guards_of_one_pane_share_its_turn() -> None:
    """The board's guard and the demo bot's guard of the same pane queue on one lock."""
    pane = ScriptedPane()
    pane.react = lambda data: [(0.005, "idle", "> " + data.decode())]  # the echo
    board, bot = InputGuard(pane), InputGuard(pane)

    async def interleaved() -> None:
        await asyncio.gather(board.send("a", enter=False), bot.send("b", enter=False), bot.send("c", enter=False),
                             board.keys(b"d"))

    virtual(interleaved())
    assert pane.typed == [b"a", b"b", b"c", b"d"]  # in the order asked, whichever guard asked


def test_queued_writes_keep_their_order_and_a_reaction_window_apart() -> None:
    pane = ScriptedPane()
    pane.react = lambda data: [(0.005, "idle", "> " + data.decode())]  # the echo
    guard = InputGuard(pane)

    async def three() -> None:
        await asyncio.gather(guard.send("a", enter=False), guard.keys(b"\x1b[A"), guard.send("c", enter=False))

    virtual(three())
    assert pane.typed == [b"a", b"\x1b[A", b"c"]
    times = [t for t, _ in pane.written]
    assert all(later - earlier >= REACTION for earlier, later in itertools.pairwise(times))


def test_a_working_pane_with_a_10_hz_spinner_still_takes_text() -> None:
    pane = ScriptedPane("working", "✻ Thinking… (esc to interrupt)")

    async def typed_while_spinning() -> float:
        pane.frames_every(0.1)
        await InputGuard(pane).send("also run the linter", enter=False)
        return pane.last_output

    last_frame = virtual(typed_while_spinning())
    assert pane.typed == [b"also run the linter"]
    assert pane.written[0][0] - last_frame >= QUIET  # typed in a gap between frames


def test_a_frame_half_drawn_is_waited_for_even_when_its_output_paused() -> None:
    """Inside a synchronized update a pause is not a gap between frames: Qwen's redraw after a grant
    came in reads 70 ms apart. The guard types once the program has ended the update."""
    pane = ScriptedPane("idle", "> ")
    ends = 0.2
    pane.mid_frame = lambda: now() < ends  # type: ignore[attr-defined]

    async def typed() -> None:
        await InputGuard(pane).send("hello", enter=False)

    virtual(typed())
    assert pane.typed == [b"hello"] and pane.written[0][0] >= ends
    assert pane.checked_at and min(pane.checked_at) >= ends  # not even judged before


class RoundTripPane(ScriptedPane):
    """A ScriptedPane with the tmux panes' step before the check: a round trip taking `rtt`, during which the
    output the link held back arrives (`held`: what the agent drew while nobody saw it), or which fails."""

    def __init__(self, rtt: float, held: tuple[str, str] | None = None, fails: Exception | None = None) -> None:
        super().__init__()
        self.rtt, self.held, self.fails = rtt, held, fails
        self.trips: list[tuple[float, float]] = []  # (started, answered)

    async def before_write(self) -> None:
        started = now()
        await asyncio.sleep(self.rtt)
        if self.fails is not None:
            raise self.fails
        if self.held is not None:
            self.draw(*self.held)  # tmux sent it before the reply
        self.trips.append((started, now()))


def test_the_round_trip_before_a_write_runs_in_the_turn_and_its_output_is_judged_first() -> None:
    """Item 2 of issue 23, the guard's side: a pane's `before_write` (tmux: a round trip that brings in all the
    output tmux had) runs in the pane's turn before the check; the dialog it brings in is judged (and refused),
    after settling like any output. Without the step the stale idle screen was judged and the key typed."""
    pane = RoundTripPane(0.05, held=("blocked", DIALOG.format(command="rm -rf build/")))

    async def send() -> None:
        with pytest.raises(PaneBlockedError):
            await InputGuard(pane, pane_id="remote:%1").send("1")

    virtual(send())
    assert pane.typed == [] and len(pane.trips) == 1
    assert pane.checked_at and min(pane.checked_at) >= pane.trips[0][1] + QUIET


def test_a_failed_round_trip_refuses_and_frees_the_turn() -> None:
    from panewatch.errors import PaneNotResyncedError

    pane = RoundTripPane(2.0, fails=PaneNotResyncedError("devbox:%1", "tmux did not answer within 2 s"))

    async def twice() -> None:
        with pytest.raises(PaneNotResyncedError, match="tmux did not answer"):
            await InputGuard(pane).send("1")
        pane.fails = None
        await InputGuard(pane).send("2", enter=False)  # the next write gets its turn

    virtual(twice())
    assert pane.typed == [b"2"] and pane.checked_at == [pane.written[0][0]]


def test_one_round_trip_per_write_so_a_spinning_remote_pane_still_takes_text() -> None:
    """Output during the round trip (a 10 Hz spinner over a 150 ms link) is waited out, not chased with more
    round trips: the text goes in a gap between frames after one."""
    pane = RoundTripPane(0.15)
    pane.state, pane.text = "working", "✻ Thinking… (esc to interrupt)"

    async def typed_while_spinning() -> None:
        pane.frames_every(0.1)
        await InputGuard(pane).send("also run the linter", enter=False)

    virtual(typed_while_spinning())
    assert pane.typed == [b"also run the linter"] and len(pane.trips) == 1


def test_a_pane_that_never_settles_is_refused_busy_and_nothing_is_typed() -> None:
    pane = ScriptedPane("working", "streaming")

    async def flooded() -> float:
        pane.frames_every(QUIET / 2)  # output without a gap long enough to judge the screen
        start = now()
        with pytest.raises(PaneBusyError) as refused:
            await InputGuard(pane, pane_id="p9").send("hello")
        assert "pane p9 is busy changing" in str(refused.value) and "try again" in str(refused.value)
        assert refused.value.waited == BUSY_TIMEOUT
        return now() - start

    waited = virtual(flooded())
    assert pane.written == [] and waited <= BUSY_TIMEOUT


def test_the_bound_includes_the_wait_for_the_turn() -> None:
    """Queued behind writes that keep a flooding pane busy, a request is refused within its own bound."""
    pane = ScriptedPane("working", "streaming")
    guard = InputGuard(pane)

    async def many() -> tuple[list[BaseException | None], float]:
        pane.frames_every(QUIET / 2)
        start = now()
        results = await asyncio.gather(*(guard.send(f"t{i}") for i in range(5)), return_exceptions=True)
        return results, now() - start

    results, waited = virtual(many())
    assert all(isinstance(r, PaneBusyError) for r in results) and pane.written == []
    assert waited <= BUSY_TIMEOUT


def test_a_second_answer_right_after_the_first_sees_the_next_prompt() -> None:
    """Two answers to the prompt the user saw: the first key draws the next dialog 30 ms later, which
    the second (still carrying the first prompt's fingerprint) must not answer."""
    pane = ScriptedPane("blocked", DIALOG.format(command="rm -rf build/"))
    pane.react = opens_dialog_after(0.03, command="curl -s https://example.invalid/install.sh | sh")
    guard = InputGuard(pane)

    async def both() -> list[Any]:
        seen = guard.prompt().fingerprint
        return await asyncio.gather(guard.answer(1, seen, timeout=0.5), guard.answer(1, seen, timeout=0.5),
                                    return_exceptions=True)

    first, second = virtual(both())
    assert not isinstance(first, BaseException) and first.cleared  # on to the next prompt
    assert isinstance(second, PromptChangedError) and "install.sh" in second.prompt.body
    assert pane.typed == [b"1"]


def test_keys_are_typed_raw_and_refused_while_blocked_or_exited() -> None:
    pane = ScriptedPane()
    guard = InputGuard(pane)

    async def keys() -> None:
        await guard.keys(b"\x1b[A\x03")
        assert pane.typed == [b"\x1b[A\x03"]  # escapes and Ctrl-C as they are: a terminal view's keys
        pane.draw("blocked", DIALOG.format(command="rm -rf build/"))
        with pytest.raises(PaneBlockedError):
            await guard.keys(b"1")
        pane.draw("exited", "$ ")
        with pytest.raises(AgentExitedError):
            await guard.keys(b"ls\r")

    virtual(keys())
    assert pane.typed == [b"\x1b[A\x03"]


def test_a_busy_refusal_travels_with_its_own_kind() -> None:
    refusal = wire_error(PaneBusyError("3", BUSY_TIMEOUT))
    assert refusal.kind == "pane_busy" and "pane 3 is busy changing" in str(refusal)
    assert refusal.data == {"prompt": None}


# NOT covered by REACTION (open question for the guard): captured on a machine at load 8-16, these CLIs
# drew a typed key up to this late (measured maxima 1.28 s, 3.68 s, 3.06 s); the bound catches worse.
SLOW_ECHO = {"qwen-code": 2.0, "opencode": 5.0, "copilot": 4.0}


def test_the_guard_constants_fit_every_captured_agent() -> None:
    """REACTION covers every real agent's first reaction to a key, and QUIET finds a gap between frames
    often enough that every capture settles well within BUSY_TIMEOUT (the reasons beside the constants)."""
    casts = sorted(bundled_root().glob("*/*/*/session.cast"))
    assert len(casts) > 50
    for path in casts:
        events = [e for e in read_cast(path).events if e.kind in ("o", "i")]
        outputs = [e.t for e in events if e.kind == "o"]
        bound = SLOW_ECHO.get(path.parts[-4], REACTION)
        for i, key in enumerate(events):
            reaction = next((e.t for e in events[i + 1:] if e.kind == "o"), None)
            if key.kind == "i" and reaction is not None:
                assert reaction - key.t < bound, f"{path.parent}: {key.data!r} drawn {reaction - key.t:.3f} s later"
        stretch = longest = 0.0
        for earlier, later in itertools.pairwise(outputs):
            stretch = stretch + later - earlier if later - earlier < QUIET else 0.0
            longest = max(longest, stretch)
        assert longest < BUSY_TIMEOUT / 4, f"{path.parent}: output without a {QUIET} s gap for {longest:.2f} s"


def log_lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def pipelined(*requests: dict[str, Any], timeout: float = 30.0) -> list[dict[str, Any]]:
    """Write all `requests` on one daemon connection in ONE write; their replies, in id order."""
    lines = b"".join(json.dumps({"id": i, **r}).encode() + b"\n" for i, r in enumerate(requests, 1))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(socket_path()))
        sock.sendall(lines)
        buffer = b""
        replies: dict[int, dict[str, Any]] = {}
        while len(replies) < len(requests):
            chunk = sock.recv(65536)
            assert chunk, f"the daemon hung up after {len(replies)} replies"
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                msg = json.loads(line)
                if "re" in msg:
                    replies[msg["re"]] = msg
    return [replies[i] for i in range(1, len(requests) + 1)]


def test_a_second_pipelined_send_never_answers_the_dialog_the_first_one_opened(serve: ServeProcess,
                                                                                 tmp_path: Path) -> None:
    log = tmp_path / "agent.log"
    pane = new_agent(log)
    wait_state(pane, "idle")
    # "d" makes the agent draw its permission dialog 30 ms later; "1" would answer it "Yes".
    first, second = pipelined({"op": "send", "pane": pane, "text": "d", "enter": False},
                              {"op": "send", "pane": pane, "text": "1", "enter": True})
    assert first["ok"] is True, first

    def answered() -> list[str]:
        return [line for line in log_lines(log) if line.startswith("answered")]

    wait_for(lambda: answered() or (card(pane) or {}).get("state") == "blocked", "the dialog drawn or answered")
    assert not answered(), f"the second send answered the dialog without the user: {answered()}; reply {second}"
    blocked = wait_state(pane, "blocked")
    assert second["ok"] is False and second["error"] in ("pane_blocked", "pane_busy"), second
    if second["error"] == "pane_blocked":
        assert second["prompt"]["fingerprint"] == blocked["prompt"]["fingerprint"]
    assert blocked["prompt"]["question"] == "Do you want to proceed?"  # still waiting for the user
