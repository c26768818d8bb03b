"""Push notifications through Apprise (issue 26, item 3), against real HTTP receivers on loopback, through
Apprise's own URL schemes (`ntfy://`, `json://`): what arrives (agent, host:target, the question, its options, how
long it waited, where), one worker per URL (a hanging service delays no other and never the caller), a failure
said once and without the URL's secrets, secrets from the environment, bad URLs in config.toml refused by index."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from panewatch.board.notices import LOCAL_HOST, message
from panewatch.runtime.notify import Notifier
from panewatch.runtime.push import ENV_URLS, Pusher, label
from panewatch.runtime.settings import NotifySettings, load_settings
from pushutil import Receiver, wait_until

PROMPT = "Do you want to proceed? — 1. Yes · 2. Yes, and don't ask again · 3. No"


def notifier(urls: tuple[str, ...], environ: dict[str, str] | None = None) -> Notifier:
    return Notifier(NotifySettings(backends=(), urls=urls), time.monotonic, environ=environ or {})


def test_a_blocked_pane_reaches_ntfy_and_a_json_webhook_with_its_question_and_options() -> None:
    with Receiver() as ntfy, Receiver() as hook:
        notify = notifier((f"ntfy://127.0.0.1:{ntfy.port}/agents-topic", f"json://127.0.0.1:{hook.port}/in"))
        try:
            fired = notify.on_change("work:1.0", "claude", "working", "blocked", PROMPT, host=LOCAL_HOST)
            assert fired == ["push"]
            wait_until(lambda: ntfy.got and hook.got, 10, "both receivers")
            sent = ntfy.got[0]["body"]
            assert sent["topic"] == "agents-topic"
            assert sent["title"] == f"claude needs your answer ({LOCAL_HOST}:work:1.0)"
            assert sent["message"] == PROMPT
            posted = hook.got[0]
            assert posted["path"] == "/in" and posted["body"]["title"] == sent["title"]
            assert posted["body"]["message"] == PROMPT
            assert notify.pusher.delivered == {f"ntfy://127.0.0.1:{ntfy.port}/…": 1,
                                               f"json://127.0.0.1:{hook.port}/…": 1}
            # the cooldown per pane and state, as for every backend
            assert notify.on_change("work:1.0", "claude", "idle", "blocked", PROMPT, host=LOCAL_HOST) == []
        finally:
            notify.close()


def test_a_hanging_service_delays_no_other_and_never_the_caller() -> None:
    with Receiver(hold=True) as stuck, Receiver() as good:
        notify = notifier((f"json://127.0.0.1:{stuck.port}/", f"json://127.0.0.1:{good.port}/"))
        try:
            notify.on_change("p", "codex", "working", "blocked", "Allow?")  # returns with the first still held
            wait_until(lambda: stuck.waiting == 1, 10, "the stuck service holding the first")
            notify.on_change("q", "codex", "working", "blocked", "Allow again?")
            wait_until(lambda: len(good.got) == 2, 10, "both at the good service")
            assert stuck.waiting == 1 and len(stuck.got) == 1  # still holding the first one, nothing else let in
        finally:
            stuck.release()
            notify.close()


def test_a_failing_service_is_said_once_and_its_secrets_never(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    token = "tk_5ecr3tT0ken"
    with Receiver() as good:
        refused = f"json://bob:hunter2pass@127.0.0.1:1/{token}"  # nothing listens on port 1
        notify = notifier((refused, f"json://127.0.0.1:{good.port}/" + "${PW_HOOK_PATH}"),
                          environ={"PW_HOOK_PATH": "p4thsecret"})
        try:
            for i, pane in enumerate(("a", "b", "c"), 1):  # one at a time (what queues meanwhile would go as one)
                notify.on_change(pane, "claude", "working", "blocked", "Allow?")
                wait_until(lambda i=i: sum(notify.pusher.failed.values()) == i and len(good.got) == i, 15, "a try")
            assert good.got[0]["path"] == "/p4thsecret"  # the variable read from the environment
        finally:
            notify.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "push" in r.getMessage()]
    assert len(warnings) == 1 and "json://127.0.0.1:1/…" in warnings[0] and "onnection" in warnings[0], warnings
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for secret in (token, "hunter2pass", "p4thsecret"):
        assert secret not in logged


def test_urls_from_the_environment_and_what_cannot_deliver_is_said() -> None:
    pusher = Pusher(["json://127.0.0.1:9/${NOT_SET_HERE}", "nosuchscheme://x/y"],
                    environ={ENV_URLS: "ntfy://127.0.0.1:9/extra"})
    try:
        said = {name: (ok, how) for name, ok, how in pusher.availability(wait=10)}
        assert said["json://127.0.0.1:9/…"] == (False, "environment variable NOT_SET_HERE not set")
        assert said["nosuchscheme://x/…"][0] is False
    finally:
        pusher.close()
    via_env = Notifier(NotifySettings(backends=()), time.monotonic, environ={ENV_URLS: "ntfy://127.0.0.1:9/extra"})
    try:
        assert [t.label for t in via_env.pusher.targets] == ["ntfy://127.0.0.1:9/…"]
    finally:
        via_env.close()
    assert label("tgram://123456:ABCDEF@/-100200") == "tgram://…"  # a bot token before the '@': never shown


def test_config_urls_are_checked_and_never_quoted_back(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[notify]\nurls = ["ntfys://tok_abc@ntfy.sh/mine", "not a url tok_def", 3]\n')
    settings = load_settings(path)
    assert settings.notify.urls == ()
    assert any("notify.urls: must be a list" in w for w in settings.warnings)
    path.write_text('[notify]\nurls = ["ntfys://tok_abc@ntfy.sh/mine", "not a url tok_def"]\n')
    settings = load_settings(path)
    assert settings.notify.urls == ("ntfys://tok_abc@ntfy.sh/mine",)
    assert settings.warnings == (f"{path}: notify.urls[1]: not a URL (scheme://…); left out",)


def test_the_message_says_question_options_how_long_and_where() -> None:
    now = time.time()
    card = {"state": "blocked", "since": now - 75, "where": "kitty window 3 · /dev/pts/4 · ~/src/app",
            "prompt": {"question": "Do you want to proceed?",
                       "options": [{"number": "1", "label": "Yes"}, {"number": "2", "label": "No"}]}}
    assert message(card, now) == "Do you want to proceed? — 1. Yes · 2. No — waiting 1m15s · kitty window 3 · " \
                                 "/dev/pts/4 · ~/src/app"


def test_what_queues_behind_a_slow_request_goes_out_as_one() -> None:
    """Apprise spaces requests to ntfy and Pushover 5.5 s apart: what arrives meanwhile is one notification then,
    not a queue that drains one by one, each later than the last. Here the first request is held (deterministic)."""
    with Receiver(hold=True) as hook:
        notify = notifier((f"json://127.0.0.1:{hook.port}/",))
        try:
            notify.on_change("a", "claude", "working", "blocked", "First?")
            wait_until(lambda: hook.waiting == 1, 10, "the first request held")
            notify.on_change("b", "codex", "working", "blocked", "Second?")
            notify.on_change("c", "gemini", "working", "blocked", "Third?")
            hook.release()
            wait_until(lambda: len(hook.got) == 2, 10, "the second request")
            assert hook.got[0]["body"]["message"] == "First?"
            second = hook.got[1]["body"]
            assert second["title"] == "2 notifications from panewatch"
            assert second["message"] == "codex needs your answer (b): Second?\ngemini needs your answer (c): Third?"
            assert notify.pusher.delivered == {f"json://127.0.0.1:{hook.port}/…": 2}
        finally:
            notify.close()
