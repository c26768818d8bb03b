"""The hook path end to end: real ReportServer on a real unix socket, `panewatch pane …` as real
subprocesses, the real hook payloads recorded from Claude Code 2.1.332."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from panewatch.core.combine import Report
from panewatch.golden.cases import bundled_root
from panewatch.runtime import paths
from panewatch.runtime.hooks import (
    CLAUDE_HOOKS,
    ENV_PANE_ID,
    ENV_SOCKET,
    ENV_TOKEN,
    ReportServer,
    claude_hook_settings,
    hook_launcher,
    inject_claude_hooks,
)
from panewatch.runtime.paneclient import MAX_MESSAGE

FIXTURES = bundled_root() / "claude-code" / "2.1.332"
PANEWATCH = [sys.executable, "-m", "panewatch"]

Received = list[tuple[str, Report]]
LATE = 0.05  # seconds


@pytest.fixture(autouse=True)
def late_judging(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server judges each message LATE after reading it, as a loaded machine may: a test that reads
    the counters before the last message was judged then fails every time, not once in a while."""
    accept = ReportServer._accept

    def late(server: ReportServer, data: bytes) -> None:
        asyncio.get_running_loop().call_later(LATE, accept, server, data)

    monkeypatch.setattr(ReportServer, "_accept", late)


async def until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


def serve(body: Callable[[ReportServer, Received], Awaitable[None]]) -> None:
    async def main() -> None:
        received: Received = []
        server = ReportServer(lambda pane, report: received.append((pane, report)))
        await server.start()
        try:
            await body(server, received)
        finally:
            await server.close()
        assert not server.path.exists()

    asyncio.run(main())


async def send_raw(server: ReportServer, data: bytes) -> None:
    _, writer = await asyncio.open_unix_connection(str(server.path))
    writer.write(data)
    await writer.drain()
    writer.close()
    await writer.wait_closed()


def line(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


async def pane(argv: list[str], env: dict[str, str] | None, stdin: bytes = b"") -> tuple[int, bytes]:
    """Run `panewatch pane ARGV` as a real subprocess; (exit code, stdout)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("PANEWATCH_")} | (env or {})
    proc = await asyncio.create_subprocess_exec(*PANEWATCH, "pane", *argv, env=full_env,
                                                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.DEVNULL)
    out, _ = await asyncio.wait_for(proc.communicate(stdin), 30)
    assert proc.returncode is not None
    return proc.returncode, out


def test_socket_is_private() -> None:
    async def body(server: ReportServer, received: Received) -> None:
        assert server.path.parent == paths.runtime_dir()
        assert stat.S_IMODE(server.path.stat().st_mode) == 0o600
        assert stat.S_IMODE(server.path.parent.stat().st_mode) == 0o700
        assert stat.S_ISSOCK(server.path.stat().st_mode)

    serve(body)


def test_good_report_reaches_the_callback() -> None:
    async def body(server: ReportServer, received: Received) -> None:
        token = server.register("p1")
        await send_raw(server, line(pane="p1", token=token, event="PermissionRequest", state="blocked",
                                    payload={"tool_name": "Bash"}))
        await until(lambda: len(received) == 1)
        pane_id, report = received[0]
        assert pane_id == "p1"
        assert (report.state, report.source, report.detail) == ("blocked", "hook", "PermissionRequest Bash")
        assert server.accepted == 1 and not server.rejected

    serve(body)


def test_bad_messages_are_rejected_counted_and_harmless() -> None:
    async def body(server: ReportServer, received: Received) -> None:
        token = server.register("p1")
        other = server.register("p2")
        await send_raw(server, line(pane="p1", token=other, state="working"))
        await send_raw(server, line(pane="p1", token="", state="working"))
        await send_raw(server, line(pane="nope", token=token, state="working"))
        await send_raw(server, b"{not json\n")
        await send_raw(server, b"[1, 2]\n")
        await send_raw(server, line(pane=1, token=token, state="working"))
        await send_raw(server, line(pane="p1", token=token, state="working", payload={"x": "a" * MAX_MESSAGE}))
        await send_raw(server, line(pane="p1", token=token, state="exploded"))
        await send_raw(server, b"\xff\xfe garbage \x00\n")
        await until(lambda: sum(server.rejected.values()) == 9)
        assert dict(server.rejected) == {"bad_token": 2, "unknown_pane": 1, "bad_json": 4, "too_large": 1,
                                         "bad_state": 1}
        # Still serving.
        await send_raw(server, line(pane="p1", token=token, state="done", event="Stop"))
        await until(lambda: len(received) == 1)
        assert received[0][1].state == "done"

    serve(body)


def test_unregistered_pane_and_replaced_token_are_refused() -> None:
    async def body(server: ReportServer, received: Received) -> None:
        old = server.register("p1")
        new = server.register("p1")
        await send_raw(server, line(pane="p1", token=old, state="working"))
        await until(lambda: server.rejected["bad_token"] == 1)
        server.unregister("p1")
        await send_raw(server, line(pane="p1", token=new, state="working"))
        await until(lambda: sum(server.rejected.values()) == 2)
        assert dict(server.rejected) == {"bad_token": 1, "unknown_pane": 1}
        assert received == []

    serve(body)


def test_a_failing_callback_does_not_break_the_server() -> None:
    async def main() -> None:
        calls: list[str] = []

        def explode(pane_id: str, report: Report) -> None:
            calls.append(report.state)
            raise RuntimeError("runtime bug")

        server = ReportServer(explode)
        await server.start()
        try:
            token = server.register("p")
            await send_raw(server, line(pane="p", token=token, state="working"))
            await send_raw(server, line(pane="p", token=token, state="idle"))
            await until(lambda: len(calls) == 2)
            assert server.callback_errors == 2
        finally:
            await server.close()

    asyncio.run(main())


def test_pane_report_subprocess_reaches_the_server() -> None:
    async def body(server: ReportServer, received: Received) -> None:
        env = server.pane_env("pane-7")
        code, out = await pane(["report", "working", "--event", "PreToolUse"], env)
        assert (code, out) == (0, b"")
        await until(lambda: len(received) == 1)
        assert received[0][0] == "pane-7"
        assert (received[0][1].state, received[0][1].detail) == ("working", "PreToolUse")

    serve(body)


def _payloads(case: str) -> list[dict[str, object]]:
    return [json.loads(row) for row in (FIXTURES / case / "hooks.jsonl").read_text().splitlines() if row.strip()]


@pytest.mark.parametrize("case", ["full_bash", "edit", "plan", "ask"])
def test_real_hook_payloads_through_the_real_hook_commands(case: str) -> None:
    """Each recorded hook's stdin, fed to the exact command our --settings installs for it, run by a
    shell as Claude Code runs hook commands."""
    settings = claude_hook_settings(hook_launcher())["hooks"]  # the launcher `panewatch run` uses
    expected = {"UserPromptSubmit": "working", "PreToolUse": "working", "PostToolUse": "working", "Stop": "done"}

    async def body(server: ReportServer, received: Received) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PANEWATCH_")} | server.pane_env("c")
        wanted: list[str] = []
        messages: list[str] = []
        for record in _payloads(case):
            event = str(record["hook"])
            stdin = record["stdin"]
            assert isinstance(stdin, dict)
            command = settings[event][0]["hooks"][0]["command"]
            proc = await asyncio.create_subprocess_shell(command, env=env, stdin=asyncio.subprocess.PIPE,
                                                         stdout=asyncio.subprocess.PIPE)
            out, _ = await asyncio.wait_for(proc.communicate(json.dumps(stdin).encode()), 30)
            assert (proc.returncode, out) == (0, b"")
            if event == "Notification":
                messages.append(f"Notification ({stdin['message']})")
                wanted.append("blocked" if stdin.get("notification_type") == "permission_prompt" else "idle")
            else:
                wanted.append(expected[event])
            await until(lambda: len(received) == len(wanted))
        assert [r.state for _, r in received] == wanted
        assert [r.detail for _, r in received if r.detail.startswith("Notification")] == messages
        assert any(r.detail.startswith("PreToolUse ") for _, r in received)  # tool name from stdin

    serve(body)


def test_notify_maps_notification_types() -> None:
    async def body(server: ReportServer, received: Received) -> None:
        env = server.pane_env("n")
        for kind in ("auth_success", "idle_prompt", "permission_prompt", "elicitation_dialog"):
            payload = json.dumps({"hook_event_name": "Notification", "notification_type": kind, "message": kind})
            assert await pane(["notify"], env, payload.encode()) == (0, b"")
        await until(lambda: len(received) == 3)
        assert [r.state for _, r in received] == ["idle", "blocked", "blocked"]  # auth_success says nothing

    serve(body)


def test_pane_client_always_exits_0_silently(tmp_path: Path, late_judging: None) -> None:
    async def body(server: ReportServer, received: Received) -> None:
        good = server.pane_env("g")
        stale = tmp_path / "stale.sock"
        stale.touch()
        cases: list[tuple[list[str], dict[str, str] | None, bytes]] = [
            (["report", "working"], None, b""),  # not in a panewatch pane
            (["report", "working"], good | {ENV_SOCKET: str(tmp_path / "missing.sock")}, b""),  # no server
            (["report", "working"], good | {ENV_SOCKET: str(stale)}, b""),  # a file, not a socket
            (["report", "working"], good | {ENV_TOKEN: "forged"}, b""),
            (["report", "working"], good | {ENV_PANE_ID: "other"}, b""),
            (["report", "exploded"], good, b""),
            (["report"], good, b""),
            (["frobnicate"], good, b""),
            ([], good, b""),
            (["notify"], good, b"{not json"),
            (["notify"], good, b"\xff" * 5000),
            (["report", "working"], good, b"x" * (2 * MAX_MESSAGE)),
        ]
        for argv, env, stdin in cases:
            assert await pane(argv, env, stdin) == (0, b""), argv
        # Each client exits once it has written: wait for all four messages judged, not for the three
        # refusals only (the valid one is the last sent, and may be judged after them).
        await until(lambda: sum(server.rejected.values()) == 3 and len(received) >= 1)
        assert dict(server.rejected) == {"bad_token": 1, "unknown_pane": 1, "bad_state": 1}
        assert len(received) == 1  # the one with a big non-JSON stdin is still a valid report
        assert received[0][1].state == "working"

    serve(body)


def test_claude_hook_settings_shape() -> None:
    settings = claude_hook_settings(["/opt/pw env/bin/panewatch"])
    hooks = settings["hooks"]
    assert set(hooks) == set(CLAUDE_HOOKS)
    for name in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Notification", "Stop", "PermissionRequest"):
        assert name in hooks
    assert hooks["PreToolUse"][0]["matcher"] == "*"
    assert "matcher" not in hooks["Stop"][0]
    cmd = hooks["PermissionRequest"][0]["hooks"][0]
    assert cmd["type"] == "command"
    assert cmd["command"] == "'/opt/pw env/bin/panewatch' pane report blocked --event PermissionRequest"
    assert hooks["Notification"][0]["hooks"][0]["command"] == "'/opt/pw env/bin/panewatch' pane notify"
    json.dumps(settings)  # serialisable as the --settings value


def test_inject_adds_settings_after_the_program() -> None:
    argv = inject_claude_hooks(["claude", "--model", "x", "--", "--settings", "p"], ["pw"])
    assert argv[0] == "claude" and argv[1] == "--settings"
    assert json.loads(argv[2]) == claude_hook_settings(["pw"])
    assert argv[3:] == ["--model", "x", "--", "--settings", "p"]


def test_inject_merges_with_the_users_settings_json_and_file(tmp_path: Path) -> None:
    user_hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-audit"}]}
    theirs = {"model": "opus", "hooks": {"PreToolUse": [user_hook]}}
    for argv in (["claude", "--settings", json.dumps(theirs), "hi"], ["claude", f"--settings={json.dumps(theirs)}"]):
        out = inject_claude_hooks(argv, ["pw"])
        assert len(out) == len(argv) and out.count("--settings") == argv.count("--settings")
        value = out[2] if argv[1] == "--settings" else out[1].partition("=")[2]
        merged = json.loads(value)
        assert merged["model"] == "opus"
        assert merged["hooks"]["PreToolUse"][0] == user_hook
        assert len(merged["hooks"]["PreToolUse"]) == 2
        assert "Stop" in merged["hooks"]

    (tmp_path / "s.json").write_text(json.dumps(theirs))
    out = inject_claude_hooks(["claude", "--settings", "s.json"], ["pw"], cwd=str(tmp_path))
    assert json.loads(out[2])["hooks"]["PreToolUse"][0] == user_hook


def test_inject_leaves_an_unreadable_settings_value_alone(tmp_path: Path) -> None:
    for argv in (["claude", "--settings", str(tmp_path / "missing.json")], ["claude", "--settings", "{broken"]):
        assert inject_claude_hooks(argv, ["pw"]) == argv


def test_pane_hooks_wire_claude_only_and_share_one_report_socket() -> None:
    from panewatch.runtime.hooks import PaneHooks
    from panewatch.runtime.live import ManifestWatcher

    async def main() -> None:
        got: list[tuple[str, Report]] = []
        hooks = PaneHooks(lambda pane, report: got.append((pane, report)))
        manifests = ManifestWatcher().get
        try:
            env: dict[str, str] = {}
            assert await hooks.wire("1", ["npx", "claude"], env, cwd=None, manifests=manifests) == ["npx", "claude"]
            assert env == {} and hooks.server is None  # a wrapper would take --settings as its own
            first = await hooks.wire("1", ["claude", "-p", "x"], env, cwd=None, manifests=manifests)
            assert first[:2] == ["claude", "--settings"] and json.loads(first[2])["hooks"]["PermissionRequest"]
            other: dict[str, str] = {}
            await hooks.wire("2", ["/usr/bin/claude"], other, cwd=None, manifests=manifests)
            assert env["PANEWATCH_SOCKET"] == other["PANEWATCH_SOCKET"]  # one server
            assert env["PANEWATCH_TOKEN"] != other["PANEWATCH_TOKEN"]  # a token per pane
            assert hooks.server is not None and os.path.exists(env["PANEWATCH_SOCKET"])
        finally:
            await hooks.close()
        assert not os.path.exists(env["PANEWATCH_SOCKET"])

    asyncio.run(main())


# -- Codex and Gemini CLI ------------------------------------------------------------------------

def test_codex_overrides_carry_every_event_and_its_trust() -> None:
    import tomllib

    from panewatch.core.hookevents import CODEX_HOOK_STATES
    from panewatch.runtime.hookinject import codex_hook_overrides, codex_trust_hash

    args = codex_hook_overrides(["/opt/pw env/bin/panewatch"])
    assert args[::2] == ["-c"] * (len(CODEX_HOOK_STATES) + 1)
    doc = tomllib.loads("\n".join(args[1::2]))  # each value is a TOML `key=value` line, as codex parses it
    state = doc["hooks"].pop("state")
    assert set(doc["hooks"]) == set(CODEX_HOOK_STATES)
    [group] = doc["hooks"]["PermissionRequest"]
    [handler] = group["hooks"]
    assert handler == {"type": "command", "timeout": 5,
                       "command": "'/opt/pw env/bin/panewatch' pane report blocked --event PermissionRequest"}
    assert doc["hooks"]["Interrupt"][0]["hooks"][0]["timeout"] == 3  # what Codex clamps it to, and hashes
    key = "/<session-flags>/config.toml:permission_request:0:0"
    assert state[key] == {"trusted_hash": codex_trust_hash("PermissionRequest", handler["command"], 5)}
    assert len(state) == len(CODEX_HOOK_STATES)


def test_codex_trust_hash_is_the_canonical_identity() -> None:
    from panewatch.runtime.hookinject import codex_trust_hash

    # Canonical JSON: sorted keys, compact, non-ASCII left as is (serde_json's output).
    identity = '{"event_name":"stop","hooks":[{"async":false,"command":"say é","timeout":5,"type":"command"}]}'
    assert codex_trust_hash("Stop", "say é", 5) == "sha256:" + hashlib.sha256(identity.encode()).hexdigest()
    assert codex_trust_hash("UserPromptSubmit", "x", 5) != codex_trust_hash("UserPromptSubmit", "x", 6)


def test_inject_codex_goes_after_the_program_and_respects_the_users_hook_overrides() -> None:
    from panewatch.runtime.hookinject import codex_hook_overrides, inject_codex_hooks

    out = inject_codex_hooks(["codex", "--no-daemon", "exec", "hi"], ["pw"])
    assert out == ["codex", *codex_hook_overrides(["pw"]), "--no-daemon", "exec", "hi"]
    for theirs in (["-c", "hooks.state={}"], ["--config", "hooks.Stop=[]"], ["-chooks.Stop=[]"],
                   ["--config=hooks.Stop=[]"]):
        argv = ["codex", "-c", "model=\"x\"", *theirs]
        assert inject_codex_hooks(argv, ["pw"]) == argv  # theirs would replace our trust, or ours theirs
    assert inject_codex_hooks(["codex", "--", "-c", "hooks.Stop=[]"], ["pw"])[1] == "-c"  # a prompt, not a flag


def test_gemini_settings_file_merges_the_system_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from panewatch.core.hookevents import GEMINI_HOOK_STATES
    from panewatch.runtime import hookinject

    monkeypatch.setattr(hookinject.os, "geteuid", lambda: 0)
    monkeypatch.setattr(hookinject, "_insecure_for_gemini", lambda _d: None)
    defaults = tmp_path / "admin-defaults.json"
    admin_hook = {"hooks": [{"type": "command", "command": "audit"}]}
    defaults.write_text(json.dumps({"hooks": {"BeforeTool": [admin_hook]}, "hooksConfig": {"notifications": True},
                                    "ui": {"theme": "x"}}))
    env = {"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(defaults)}
    path = hookinject.inject_gemini_hooks(env, ["pw"], "g.json", tmp_path)
    assert env["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"] == str(path) and stat.S_IMODE(path.stat().st_mode) == 0o600
    merged = json.loads(path.read_text())
    assert merged["ui"] == {"theme": "x"} and merged["hooksConfig"] == {"notifications": True}  # theirs win
    assert merged["hooks"]["BeforeTool"][0] == admin_hook and len(merged["hooks"]["BeforeTool"]) == 2
    assert set(merged["hooks"]) == set(GEMINI_HOOK_STATES)
    assert merged["hooks"]["Notification"][0]["hooks"][0]["command"] == "pw pane notify"
    assert merged["hooks"]["AfterAgent"][0]["hooks"][0] == {
        "type": "command", "name": "panewatch AfterAgent", "command": "pw pane report done --event AfterAgent",
        "timeout": 5000}
    defaults.write_text("{broken")
    with pytest.raises(hookinject.HooksUnavailable, match="cannot merge"):
        hookinject.inject_gemini_hooks({"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(defaults)}, ["pw"], "h.json", tmp_path)


def test_gemini_hooks_need_a_root_owned_settings_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from panewatch.runtime import hookinject

    monkeypatch.setattr(hookinject.os, "geteuid", lambda: 1000)
    with pytest.raises(hookinject.HooksUnavailable, match="belongs to root"):
        hookinject.inject_gemini_hooks({}, ["pw"], "g.json", tmp_path)
    monkeypatch.setattr(hookinject.os, "geteuid", lambda: 0)
    # /tmp is writable by all: Gemini CLI would skip a settings file below it (as it does, with a warning).
    reason = hookinject._insecure_for_gemini(tmp_path)
    assert reason is not None and ("writable by group or others" in reason or "not owned by root" in reason)


def test_pane_hooks_wire_codex_gemini_and_qwen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from panewatch.runtime import hookinject
    from panewatch.runtime.hooks import PaneHooks
    from panewatch.runtime.live import ManifestWatcher

    monkeypatch.setattr(hookinject, "gemini_settings_dir", lambda: tmp_path)
    monkeypatch.setattr(paths, "runtime_dir", lambda: tmp_path)  # where Qwen's per-launch file goes
    monkeypatch.setattr(hookinject, "_insecure_for_gemini", lambda _d: None)
    monkeypatch.setattr(hookinject.os, "geteuid", lambda: 0)

    async def main() -> None:
        hooks = PaneHooks(lambda pane, report: None)
        manifests = ManifestWatcher().get
        try:
            env: dict[str, str] = {}
            argv = await hooks.wire("c", ["/usr/bin/codex", "--no-daemon"], env, cwd=None, manifests=manifests)
            assert argv[1] == "-c" and argv[2].startswith("hooks.") and argv[-1] == "--no-daemon"
            assert "PANEWATCH_TOKEN" in env
            for pane, agent, variable, event in (("g", "gemini", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "AfterAgent"),
                                                 ("q", "qwen", "QWEN_CODE_SYSTEM_DEFAULTS_PATH", "PermissionRequest")):
                penv: dict[str, str] = {}
                assert await hooks.wire(pane, [agent], penv, cwd=None, manifests=manifests) == [agent]
                settings = Path(penv[variable])
                assert settings.parent == tmp_path and event in json.loads(settings.read_text())["hooks"]
                assert "PANEWATCH_TOKEN" in penv
                hooks.unwire(pane)
                assert not settings.exists()  # the per-launch file goes with the pane
        finally:
            await hooks.close()

    asyncio.run(main())


def test_notify_maps_gemini_tool_permission_only() -> None:
    from panewatch.core.hookevents import hook_state

    assert hook_state("gemini", "Notification", "ToolPermission") == "blocked"
    assert hook_state("gemini", "Notification", "SomethingElse") is None  # not a permission request: not blocked
    assert hook_state("codex", "PermissionRequest") == "blocked" and hook_state("codex", "SessionStart") is None
    assert hook_state("gemini", "AfterAgent") == "done" and hook_state("nobody", "Stop") is None


def test_qwen_settings_file_merges_the_system_defaults_for_any_user(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from panewatch.core.hookevents import QWEN_HOOK_STATES
    from panewatch.runtime import hookinject

    monkeypatch.setattr(hookinject.os, "geteuid", lambda: 1000)  # no ownership rule in Qwen Code
    system = tmp_path / "etc" / "settings.json"
    defaults = system.parent / "system-defaults.json"  # found through QWEN_CODE_SYSTEM_SETTINGS_PATH's directory
    defaults.parent.mkdir()
    admin_hook = {"hooks": [{"type": "command", "command": "audit"}]}
    defaults.write_text(json.dumps({"hooks": {"PreToolUse": [admin_hook]}, "ui": {"theme": "x"}}))
    env = {"QWEN_CODE_SYSTEM_SETTINGS_PATH": str(system)}
    path = hookinject.inject_qwen_hooks(env, ["pw"], "q.json", tmp_path / "run")
    assert env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] == str(path) and stat.S_IMODE(path.stat().st_mode) == 0o600
    merged = json.loads(path.read_text())
    assert merged["ui"] == {"theme": "x"} and merged["$version"] == hookinject.QWEN_SETTINGS_VERSION
    assert merged["hooks"]["PreToolUse"][0] == admin_hook and len(merged["hooks"]["PreToolUse"]) == 2
    assert set(merged["hooks"]) == set(QWEN_HOOK_STATES)
    assert merged["hooks"]["PermissionRequest"][0]["hooks"][0] == {  # no matcher: every tool; seconds
        "type": "command", "name": "panewatch PermissionRequest",
        "command": "pw pane report blocked --event PermissionRequest", "timeout": 5}
    defaults.write_text("{broken")
    with pytest.raises(hookinject.HooksUnavailable, match="cannot merge"):
        hookinject.inject_qwen_hooks({"QWEN_CODE_SYSTEM_DEFAULTS_PATH": str(defaults)}, ["pw"], "r.json", tmp_path)


def test_qwen_blocks_by_its_awaited_permission_request_not_its_late_notification() -> None:
    from panewatch.core.hookevents import hook_state
    from panewatch.runtime.hookinject import qwen_hook_settings

    assert hook_state("qwen", "PermissionRequest") == "blocked"
    for kind in ("permission_prompt", "idle_prompt", "auth_success"):  # fired unawaited: may follow the grant
        assert hook_state("qwen", "Notification", kind) is None
    assert "Notification" not in qwen_hook_settings(["panewatch"])["hooks"]
    assert hook_state("qwen", "Stop") == "done" and hook_state("qwen", "SessionStart") is None
    assert hook_state("qwen", "MessageDisplay") is None  # every streamed chunk: not subscribed


def test_copilot_hooks_come_in_a_per_launch_plugin_dir_that_goes_with_the_pane(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Copilot CLI: `--plugin-dir` after the program, a plugin.json naming a hooks.json of version 1 with one
    `bash` command hook per subscribed event; the user's own `--plugin-dir` stays; unwire removes the plugin."""
    from panewatch.core.hookevents import COPILOT_HOOK_STATES
    from panewatch.runtime.hooks import PaneHooks
    from panewatch.runtime.live import ManifestWatcher

    monkeypatch.setattr(paths, "runtime_dir", lambda: tmp_path)

    async def main() -> None:
        hooks = PaneHooks(lambda pane, report: None)
        try:
            env: dict[str, str] = {}
            argv = await hooks.wire("p", ["copilot", "--plugin-dir", "mine", "-C", "ws"], env, cwd=None,
                                    manifests=ManifestWatcher().get)
            assert argv[:2] == ["copilot", "--plugin-dir"] and argv[3:] == ["--plugin-dir", "mine", "-C", "ws"]
            plugin = Path(argv[2])
            assert plugin.parent == tmp_path and "PANEWATCH_TOKEN" in env
            assert stat.S_IMODE(plugin.stat().st_mode) == 0o700
            assert json.loads((plugin / "plugin.json").read_text())["hooks"] == "hooks.json"
            doc = json.loads((plugin / "hooks.json").read_text())
            assert doc["version"] == 1 and set(doc["hooks"]) == set(COPILOT_HOOK_STATES)
            [notify] = doc["hooks"]["notification"]
            assert notify["type"] == "command" and notify["bash"].endswith(" pane notify") and notify["timeoutSec"] == 5
            [stop] = doc["hooks"]["agentStop"]
            assert stop["bash"].endswith(" pane report done --event agentStop")
            hooks.unwire("p")
            assert not plugin.exists()  # the plugin goes with the pane
        finally:
            await hooks.close()

    asyncio.run(main())


def test_copilot_blocks_on_its_prompt_shown_notification_not_on_permission_request() -> None:
    """permissionRequest fires before Copilot's own approval rules (an allowed call fires it too): it says
    nothing; the permission_prompt notification fires once the prompt is on screen."""
    from panewatch.core.hookevents import hook_detail, hook_state
    from panewatch.runtime.hookinject import copilot_hook_settings

    assert hook_state("copilot", "permissionRequest") is None
    assert "permissionRequest" not in copilot_hook_settings(["pw"])["hooks"]
    assert hook_state("copilot", "notification", "permission_prompt") == "blocked"
    assert hook_state("copilot", "notification", "elicitation_dialog") == "blocked"
    for kind in ("agent_idle", "agent_completed", "shell_completed"):  # background agents and shells
        assert hook_state("copilot", "notification", kind) is None
    assert hook_state("copilot", "agentStop") == "done" and hook_state("copilot", "subagentStop") is None
    assert hook_state("copilot", "preToolUse") == "working"
    assert hook_detail("preToolUse", {"toolName": "bash"}) == "preToolUse bash"
