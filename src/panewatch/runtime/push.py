"""Notifications to phones and chats: every `[notify] urls` entry is an Apprise URL (ntfy, Pushover, Telegram,
Slack, Discord, Matrix, e-mail, …: https://github.com/caronc/apprise/wiki), one Notifier backend ("push").

    secrets   a URL may name environment variables, `${NAME}` (`ntfys://${NTFY_TOKEN}@ntfy.sh/my-agents`), read
              when its worker starts; `$PANEWATCH_NOTIFY_URLS` (whitespace-separated) adds URLs kept out of the
              config file altogether. A URL is never logged: a target is named by its scheme and host only
              (`label`), and Apprise's and urllib3's own loggers (which print URLs) are kept quiet.
    isolation each URL has its own worker thread and queue: a service that hangs (Apprise's own timeouts bound
              it) delays no other service, no other backend and never detection; `send` only queues.
    spacing   Apprise spaces requests to some services (ntfy, Pushover: 5.5 s apart, their rate limits); what
              queues meanwhile goes out as one notification when the service may be asked again.
    failures  a URL Apprise refuses, a variable not set, or a delivery that fails is reported once per target
              (a warning naming its label and what went wrong, its secrets masked) and counted; after a
              success it would be reported again.

Apprise is imported in each worker as it starts (~0.1 s), so the first notification does not wait for it.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("panewatch.notify")

ENV_URLS = "PANEWATCH_NOTIFY_URLS"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SCHEME = re.compile(r"([a-z][a-z0-9+.-]{0,31})://", re.IGNORECASE)
_PIECES = re.compile(r"[/:@?&=#,]+")

_LOAD = threading.Lock()  # Apprise loads its plugins lazily, and two threads at once got an empty Apprise
OnResult = Callable[[str, bool, str], None]  # (label, delivered, why) per delivery


def env_urls(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The URLs in $PANEWATCH_NOTIFY_URLS."""
    return tuple((environ if environ is not None else os.environ).get(ENV_URLS, "").split())


def label(url: str) -> str:
    """How a target is named in logs and on the board: scheme and host, never a token, topic or password."""
    match = _SCHEME.match(url)
    if match is None:
        return "(not a URL)"
    rest = url[match.end():]
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    host = "${…}" if "${" in host else host.split("?", 1)[0]
    return f"{match[1].lower()}://{host}/…" if host else f"{match[1].lower()}://…"


def resolve(url: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """`url` with its `${NAME}`s from `environ`; the names that are not set."""
    missing = [name for name in _VAR.findall(url) if name not in environ]
    return _VAR.sub(lambda m: environ.get(m[1], ""), url), missing


@dataclass
class _Said:
    """What Apprise said while one delivery ran (its warnings carry the reason, and URLs we mask)."""

    words: list[str]


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        said: _Said | None = getattr(self.local, "said", None)
        if said is not None:
            said.words.append(record.getMessage())


_CAPTURE = _Capture()


def _quiet_libraries() -> None:
    """Apprise and urllib3 log URLs (topics, tokens) at debug and warning levels: not into our logs. Apprise's
    warnings (the reason a delivery failed) reach only _CAPTURE, which masks them."""
    urllib3 = logging.getLogger("urllib3")
    urllib3.propagate = False
    urllib3.setLevel(logging.CRITICAL + 1)
    apprise = logging.getLogger("apprise")
    apprise.propagate = False
    apprise.setLevel(logging.WARNING)
    if _CAPTURE not in apprise.handlers:
        apprise.addHandler(_CAPTURE)


class PushTarget:
    """One Apprise URL and its worker thread."""

    def __init__(self, url: str, on_result: OnResult, environ: Mapping[str, str]) -> None:
        self.url = url
        self.label = label(url)
        self._environ = environ
        self._on_result = on_result
        self._queue: queue.SimpleQueue[tuple[str, str] | None] = queue.SimpleQueue()
        self.ready = threading.Event()  # the worker has Apprise loaded (or knows it cannot deliver)
        self.problem = ""  # why this target cannot deliver at all ("" while it can)
        self._thread = threading.Thread(target=self._run, name=f"panewatch-push {self.label}", daemon=True)
        self._thread.start()

    def send(self, title: str, body: str) -> None:
        self._queue.put((title, body))

    def close(self) -> None:
        self._queue.put(None)

    def _secrets(self, resolved: str) -> list[str]:
        """The pieces of the URL a message could leak (user, password, tokens, topics, the variables' values)."""
        values = [self._environ.get(name, "") for name in _VAR.findall(self.url)]
        match = _SCHEME.match(resolved)
        rest = resolved[match.end():] if match else resolved
        pieces = [p for p in _PIECES.split(rest) if len(p) >= 4]
        return sorted({v for v in [*values, *pieces] if v}, key=len, reverse=True)

    def _mask(self, text: str, secrets: Iterable[str]) -> str:
        for secret in secrets:
            text = text.replace(secret, "…")
        return " ".join(text.split())[:300]

    def _run(self) -> None:
        resolved, missing = resolve(self.url, self._environ)
        secrets = self._secrets(resolved)
        notifier: Any = None
        try:
            with _LOAD:
                import apprise

                _quiet_libraries()
                if missing:
                    self.problem = f"environment variable {', '.join(missing)} not set"
                else:
                    found = apprise.Apprise()
                    if not found.add(resolved) or len(found) != 1:
                        self.problem = "Apprise does not take this URL (see its wiki for the scheme's form)"
                    else:  # its one service, called in this thread (Apprise's own notify() runs a pool, whose
                        notifier = found[0]  # warnings, the reason a delivery failed, would escape our capture)
        except Exception as exc:  # Apprise missing or broken: this backend cannot deliver
            notifier = None
            self.problem = f"Apprise cannot load: {type(exc).__name__}"
        finally:
            self.ready.set()
        while (item := self._queue.get()) is not None:
            item, stop = self._coalesce(item)
            if notifier is None:
                self._on_result(self.label, False, self.problem)
            else:
                self._deliver(notifier, item, secrets)
            if stop:
                break

    def _coalesce(self, first: tuple[str, str]) -> tuple[tuple[str, str], bool]:
        """`first` and whatever queued behind it, as one notification (and whether close() came meanwhile). Apprise
        spaces requests to one service (ntfy, Pushover: 5.5 s): what arrives during that wait goes out together at
        its end, once, rather than one by one, each later than the last."""
        items, stop = [first], False
        while True:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                break
            if more is None:
                stop = True
                break
            items.append(more)
        if len(items) == 1:
            return first, stop
        return (f"{len(items)} notifications from panewatch", "\n".join(f"{t}: {b}" for t, b in items)), stop

    def _deliver(self, notifier: Any, item: tuple[str, str], secrets: list[str]) -> None:
        said = _Said([])
        _CAPTURE.local.said = said
        try:
            ok = bool(notifier.notify(title=item[0], body=item[1]))
        except Exception as exc:
            ok, said.words = False, [*said.words, f"{type(exc).__name__}: {exc}"]
        finally:
            _CAPTURE.local.said = None
        why = "" if ok else self._mask("; ".join(said.words) or "the service did not accept it", secrets)
        self._on_result(self.label, ok, why)


class Pusher:
    """Every push target of one [notify] table. `send` queues a notification for each and returns at once."""

    def __init__(self, urls: Iterable[str], *, environ: Mapping[str, str] | None = None) -> None:
        env = dict(os.environ if environ is None else environ)
        self._lock = threading.Lock()
        self.delivered: Counter[str] = Counter()  # by label
        self.failed: Counter[str] = Counter()
        self._reported: set[str] = set()  # labels whose failure was said (once, until a success)
        self.last: dict[str, tuple[float, bool]] = {}  # label -> (wall time, delivered) of its last try
        self.targets = [PushTarget(url, self._result, env) for url in dict.fromkeys(urls)]

    def __bool__(self) -> bool:
        return bool(self.targets)

    def send(self, title: str, body: str) -> bool:
        for target in self.targets:
            target.send(title, body)
        return bool(self.targets)

    def _result(self, name: str, ok: bool, why: str) -> None:
        with self._lock:
            self.last[name] = (time.time(), ok)
            if ok:
                self.delivered[name] += 1
                if name in self._reported:
                    self._reported.discard(name)
                    log.info("notifications: push to %s delivers again", name)
                return
            self.failed[name] += 1
            first = name not in self._reported
            self._reported.add(name)
        if first:
            log.warning("notifications: push to %s failed: %s (said once until it works again)", name, why)
        else:
            log.debug("notifications: push to %s failed again: %s", name, why)

    def availability(self, wait: float = 1.0) -> list[tuple[str, bool, str]]:
        """Each target: (label, can it deliver as far as we know, how or why not)."""
        out = []
        for target in self.targets:
            target.ready.wait(wait)
            if target.problem:
                out.append((target.label, False, target.problem))
            else:
                out.append((target.label, True, "through Apprise"))
        return out

    def close(self) -> None:
        for target in self.targets:
            target.close()
