"""Tell the user when a pane needs them: on entering `blocked` (and, if configured, when a working
turn ends), at most once per `cooldown` seconds per (pane, state) on the injected clock.

Backends:
  desktop   desktop-notifier (runtime/desktop.py: D-Bus on Linux when a session bus is there, Notification
            Center on macOS; a click or its "Open in board" button opens the board at the pane), else
            `notify-send` (Linux) or `osascript` (macOS); skipped silently when none can deliver.
            Clicking it opens the board at that pane where the desktop allows: given `open_board` and a
            board pane id, a notify-send that has `--action` (libnotify >= 0.7.10) shows an "Open in
            board" action (also the notification's default action, its body click); when the user
            picks it, `open_board(pane)` runs (`open_board_at`: `panewatch board --pane ID`). macOS's
            `display notification` and older notify-send have no click action: a plain notification.
  terminal  the terminal that shows the pane: BEL, OSC 9 or OSC 777 written to the outer terminal of a
            `panewatch run` (`terminal_writer`, or `ring()` when the daemon asks its run to), or, for a pane
            in tmux, a message to the tmux clients (the daemon passes `ring` per notification: an escape
            written into a tmux pane never reaches the user's terminal); the text is stripped of control
            characters first, so prompt text can never end the OSC early or inject escape sequences.
  command   the user's `notify.command` via /bin/sh -c, with PANEWATCH_PANE, PANEWATCH_STATE,
            PANEWATCH_AGENT, PANEWATCH_PROMPT, PANEWATCH_HOST in its environment (never spliced into the command).
  push      phones and chats through Apprise (runtime/push.py): every `notify.urls` entry and
            $PANEWATCH_NOTIFY_URLS, each in its own worker thread (set = enabled, like `command`).

Processes are started without waiting (Popen, own session, no stdin) and reaped by a watcher
thread that kills them after `command_timeout`. A failing backend is counted in `failures` and
logged at debug level, never raised: a notification must not break the runtime (and nothing is
printed: in `run` mode stderr is the user's terminal).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable

from panewatch.core.machine import StateChange
from panewatch.runtime.desktop import Desktop, usable
from panewatch.runtime.push import Pusher, env_urls
from panewatch.runtime.settings import NotifySettings, Settings

log = logging.getLogger(__name__)
log.addHandler(logging.NullHandler())  # no last-resort stderr output over the user's terminal

TITLE = "panewatch"
ACTION_WAIT = 900.0  # seconds a clickable notification's notify-send may wait for the click before it is ended
ACTIONS = ("default", "open")  # what notify-send prints for a click on the body / on the "Open in board" button
_CONTROL = dict.fromkeys([*range(0x20), 0x7F, *range(0x80, 0xA0)], " ")
_MAX_TEXT = 240
_MAX_PUSH = 1000  # a phone shows more than a desktop bubble: the question and every option

Which = Callable[[str], str | None]


def clean(text: str, limit: int = _MAX_TEXT) -> str:
    """One line, no control characters, bounded length."""
    text = " ".join(text.translate(_CONTROL).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Notifier:
    def __init__(
        self,
        settings: Settings | NotifySettings,
        clock: Callable[[], float],
        *,
        terminal_writer: Callable[[bytes], None] | None = None,
        which: Which = shutil.which,
        platform: str = sys.platform,
        open_board: Callable[[str], None] | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.settings = settings.notify if isinstance(settings, Settings) else settings
        env = dict(os.environ if environ is None else environ)
        self.pusher = Pusher([*self.settings.urls, *env_urls(env)], environ=env)
        # desktop-notifier where it can deliver (not with the platform forced for a test: no such desktop here)
        self.desktop = Desktop(self._desktop_result) if platform == sys.platform and usable(env) else None
        self._desktop_said = False
        self._clock = clock
        self._terminal_writer = terminal_writer
        self._which = which
        self._platform = platform
        self._open_board = open_board
        self._has_actions: dict[str, bool] = {}  # notify-send path → does it take --action
        self._last: dict[tuple[str, str], float] = {}
        self._children: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self.fired: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.suppressed = 0  # notifications skipped by the cooldown

    def wants(self, old_state: str, new_state: str) -> bool:
        """Is this change one the user asked to hear about?"""
        if new_state == "blocked":
            return old_state != "blocked"
        return self.settings.on_turn_end and old_state == "working" and new_state == "idle"

    def on_state_change(self, change: StateChange, *, name: str = "",
                        prompt_text: Callable[[], str] = lambda: "", board_pane: str | None = None) -> list[str]:
        """`on_change` for a pane's StateChange, the one way every pane source notifies: a pane's first
        state is no change, and the prompt text (`prompt_text()`) is read only when it will be shown.
        `board_pane`: the pane's id on the board, where a click on the notification goes."""
        if change.old is None or not self.wants(change.old.state, change.new.state):
            return []
        text = prompt_text() if change.new.state == "blocked" else ""
        return self.on_change(name or change.pane, change.agent or "", change.old.state, change.new.state, text,
                              board_pane=board_pane)

    def on_change(self, pane_id: str, agent: str, old_state: str, new_state: str, prompt_text: str = "", *,
                  board_pane: str | None = None, ring: Callable[[str, str], bool] | None = None,
                  host: str = "") -> list[str]:
        """Notify if this state change calls for it; returns the names of the backends that fired. `ring`: how
        the terminal backend reaches the terminal showing this pane (title, body → whether it rang). `host`: the
        machine the pane is on, for the title ("host:target": a phone is not at the desk)."""
        if not self.wants(old_state, new_state):
            return []
        now = self._clock()
        key = (pane_id, new_state)
        last = self._last.get(key)
        if last is not None and now - last < self.settings.cooldown:
            self.suppressed += 1
            return []
        self._last[key] = now
        title, body = self._message(f"{host}:{pane_id}" if host else pane_id, agent, new_state, prompt_text)
        env = {"PANEWATCH_PANE": pane_id, "PANEWATCH_STATE": new_state, "PANEWATCH_AGENT": agent,
               "PANEWATCH_PROMPT": prompt_text, "PANEWATCH_HOST": host}
        fired: list[str] = []
        backends: list[tuple[str, Callable[[], bool]]] = [
            ("desktop", lambda: self._desktop(title, body, board_pane)),
            ("terminal", lambda: ring(title, body) if ring is not None else self.ring(title, body)),
            ("command", lambda: self._command(env)),
            ("push", lambda: self.pusher.send(title, clean(prompt_text or body, _MAX_PUSH))),
        ]
        for name, send in backends:
            if name not in ("command", "push") and name not in self.settings.backends:
                continue
            try:
                if send():
                    fired.append(name)
                    self.fired[name] += 1
            except Exception as exc:
                with self._lock:
                    self.failures[name] += 1
                log.debug("notify backend %s failed: %s", name, exc)
        return fired

    @staticmethod
    def _message(pane_id: str, agent: str, state: str, prompt_text: str) -> tuple[str, str]:
        who = agent or "agent"
        if state == "blocked":
            title = f"{who} needs your answer ({pane_id})"
            body = prompt_text or "a permission prompt is waiting"
        else:
            title = f"{who} finished its turn ({pane_id})"
            body = prompt_text or f"now {state}"
        return clean(title, 80), clean(body)

    # -- backends: return True if they fired, False if skipped; raise on failure ------------------

    def _desktop(self, title: str, body: str, board_pane: str | None = None) -> bool:
        if self.desktop is not None and "desktop" in self.settings.backends:
            open_board, pane = self._open_board, board_pane
            click = (lambda: open_board(pane)) if open_board is not None and pane is not None else None
            self.desktop.send(title, body, click)
            return True
        if self._platform == "darwin":
            osascript = self._which("osascript")
            if osascript is None:
                return False
            # Text goes in as argv, not into the script source: no AppleScript quoting to get wrong.
            script = "on run argv\ndisplay notification (item 2 of argv) with title (item 1 of argv)\nend run"
            self._spawn("desktop", [osascript, "-e", script, title, body], None)
            return True
        notify_send = self._which("notify-send")
        if notify_send is None:
            return False
        argv = [notify_send, "--app-name=panewatch"]
        if board_pane is not None and self._open_board is not None and self._takes_actions(notify_send):
            argv += [f"--action={name}=Open in board" for name in ACTIONS]
            self._spawn("desktop", [*argv, title, body], None, on_output=lambda out: self._clicked(out, board_pane))
        else:
            self._spawn("desktop", [*argv, title, body], None)
        return True

    def _desktop_result(self, delivered: bool, why: str) -> None:
        """desktop-notifier's word on one notification (its thread): a failure said once, counted always."""
        if delivered:
            return
        with self._lock:
            self.failures["desktop"] += 1
            first, self._desktop_said = not self._desktop_said, True
        (log.warning if first else log.debug)("notifications: desktop failed: %s", why)

    def _takes_actions(self, notify_send: str) -> bool:
        """Does this notify-send have --action (libnotify >= 0.7.10)? Asked once per path."""
        if notify_send not in self._has_actions:
            try:
                out = subprocess.run([notify_send, "--help"], capture_output=True, text=True, timeout=5,
                                     stdin=subprocess.DEVNULL)
                self._has_actions[notify_send] = "--action" in out.stdout + out.stderr
            except (OSError, subprocess.TimeoutExpired):
                self._has_actions[notify_send] = False
        return self._has_actions[notify_send]

    def _clicked(self, output: bytes, board_pane: str) -> None:
        """notify-send printed the action the user picked (nothing if the notification was just closed)."""
        if output.decode("utf-8", "replace").strip() in ACTIONS and self._open_board is not None:
            self._open_board(board_pane)

    def ring(self, title: str, body: str) -> bool:
        """The terminal backend on this process's own terminal (`terminal_writer`): False without one."""
        if self._terminal_writer is None:
            return False
        title, body = clean(title, 80), clean(body)
        kind = self.settings.terminal
        if kind == "osc777":
            data = f"\x1b]777;notify;{title.replace(';', ',')};{body}\x07"
        elif kind == "osc9":
            data = f"\x1b]9;{title}: {body}\x07"
        else:
            data = "\x07"
        self._terminal_writer(data.encode("utf-8", "replace"))
        return True

    def _command(self, env: dict[str, str]) -> bool:
        command = self.settings.command
        if not command:
            return False
        self._spawn("command", ["/bin/sh", "-c", command], {**os.environ, **env})
        return True

    # -- child processes ------------------------------------------------------------------------

    def _spawn(self, backend: str, argv: list[str], env: dict[str, str] | None,
               on_output: Callable[[bytes], None] | None = None) -> None:
        """Start `argv`; with `on_output`, it may wait for the user (ACTION_WAIT) and its stdout goes there."""
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL if on_output is None else subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        with self._lock:
            self._children.add(proc)
        threading.Thread(target=self._reap, args=(backend, proc, on_output), name="panewatch-notify-reaper",
                         daemon=True).start()

    def _reap(self, backend: str, proc: subprocess.Popen[bytes], on_output: Callable[[bytes], None] | None) -> None:
        """Runs in a watcher thread: wait (bounded), kill on timeout, count a failed exit."""
        failed = True
        try:
            if on_output is None:
                failed = proc.wait(timeout=self.settings.command_timeout) != 0
            else:
                out, _ = proc.communicate(timeout=ACTION_WAIT)
                failed = proc.returncode != 0
                if not failed:
                    on_output(out)
        except subprocess.TimeoutExpired:
            self._kill(proc)
        finally:
            with self._lock:
                self._children.discard(proc)
                if failed:
                    self.failures[backend] += 1
            if failed:
                log.debug("notify backend %s: %s failed or timed out", backend, proc.args)

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: take its children too
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)

    def availability(self, *, terminal: str = "") -> list[tuple[str, bool, str]]:
        """Each configured backend: (name, can it deliver, how or why not). `terminal`: how this process's terminal
        backend reaches a terminal (the daemon: through tmux); "" = its own terminal, if it has one."""
        out: list[tuple[str, bool, str]] = []
        for name in self.settings.backends:
            if name == "desktop" and self.desktop is not None:
                out.append((name, True, "through desktop-notifier (Notification Center)" if self._platform == "darwin"
                            else "through desktop-notifier (D-Bus session bus)"))
            elif name == "desktop":
                tool = "osascript" if self._platform == "darwin" else "notify-send"
                found = self._which(tool)
                fix = "" if self._platform == "darwin" else " (Debian/Ubuntu: apt-get install libnotify-bin)"
                out.append((name, found is not None, f"through {found}" if found else f"no {tool}{fix}"))
            elif name == "terminal":
                how = terminal or ("your terminal" if self._terminal_writer is not None else "")
                out.append((name, bool(how), how or "no terminal to ring"))
        if self.settings.command:
            out.append(("command", True, f"runs {self.settings.command}"))
        elif "command" in self.settings.backends:
            out.append(("command", False, "[notify] command is empty"))
        out += [(f"push {name}", ok, how) for name, ok, how in self.pusher.availability()]
        return out

    def running(self) -> int:
        with self._lock:
            return len(self._children)

    def close(self) -> None:
        """Kill whatever notification processes are still running (runtime shutdown); push workers end."""
        self.pusher.close()
        if self.desktop is not None:
            self.desktop.close()
        with self._lock:
            children = list(self._children)
        for proc in children:
            if proc.poll() is None:
                self._kill(proc)


def open_board_at(pane: str) -> None:
    """Open the board at `pane` in the user's browser (`panewatch board --pane ID`), detached from us."""
    with contextlib.suppress(OSError):
        proc = subprocess.Popen([sys.executable, "-m", "panewatch", "board", "--pane", pane], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                close_fds=True)
        threading.Thread(target=proc.wait, name="panewatch-board-opener", daemon=True).start()
