"""The mock model servers over real HTTP on loopback: framing, scenarios, tool flow, events."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
import tomllib
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from panewatch.testing.homes import prepare
from panewatch.testing.mock import MockServer, next_reply, parse_control
from panewatch.testing.mock.scenario import dialect_for

TRAP_PHRASES = ("Do you want to proceed? ❯ 1. Yes", "Would you like to run the following command?",
                "Allow execution")


def post(url: str, body: dict[str, Any]) -> tuple[int, str, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()


def sse(text: str) -> list[tuple[str | None, Any]]:
    """Parse an SSE body into (event name, decoded data) pairs; comments are dropped."""
    out: list[tuple[str | None, Any]] = []
    assert text.endswith("\n\n")
    for block in text.split("\n\n"):
        lines = [ln for ln in block.split("\n") if ln and not ln.startswith(":")]
        if not lines:
            continue
        event = next((ln[7:] for ln in lines if ln.startswith("event: ")), None)
        data = "".join(ln[6:] for ln in lines if ln.startswith("data: "))
        out.append((event, json.loads(data)))
    return out


def fake_clock() -> Any:
    counter = itertools.count(100)
    return lambda: float(next(counter))


# -- scenarios, no HTTP ------------------------------------------------------------------------

def test_parse_control() -> None:
    c = parse_control("SCN=edit DELAY=2.5 FILE=/x/y.py please")
    assert (c.scenario, c.delay, c.file) == ("edit", 2.5, "/x/y.py")
    d = parse_control("no control here", default_scenario="trap", default_delay=0.25)
    assert (d.scenario, d.delay, d.file) == ("trap", 0.25, None)


def test_state_machine_steps() -> None:
    plan = parse_control("SCN=plan DELAY=0")
    assert next_reply("anthropic", plan, 0).tool_names == ["ToolSearch"]
    assert dict(next_reply("anthropic", plan, 0).tools[0].args)["query"] == "select:ExitPlanMode"
    assert next_reply("anthropic", plan, 1).tool_names == ["ExitPlanMode"]
    final = next_reply("anthropic", plan, 2)
    assert (final.step, final.stop_reason, final.tools) == (2, "end_turn", ())
    multi = parse_control("SCN=multi")
    assert next_reply("gemini", multi, 0).tool_names == ["run_shell_command"] * 2
    assert next_reply("gemini", multi, 2).stop_reason == "end_turn"
    edit = next_reply("anthropic", parse_control("SCN=edit"), 0, "/w")
    assert edit.tool_names == ["Read"] and edit.tools[0].args["file_path"] == "/w/hello.py"


@pytest.mark.parametrize("kind", ["anthropic", "openai", "gemini"])
def test_trap_quotes_prompt_text_without_tools(kind: str) -> None:
    reply = next_reply(kind, parse_control("SCN=trap"), 0)
    assert reply.stop_reason == "end_turn" and not reply.tools
    flat = " ".join(reply.text.split())
    for phrase in TRAP_PHRASES:
        assert phrase in flat or phrase in reply.text, (kind, phrase)


@pytest.mark.parametrize(("dialect", "own"), [
    ("opencode", "△ Permission required"), ("copilot", "Do you want to run this command?"),
    ("qwen", "Allow execution of: 'rm'?"), ("aider", "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:")])
def test_each_dialect_has_a_trap_quoting_its_own_dialog(dialect: str, own: str) -> None:
    kind = {"opencode": "anthropic", "copilot": "anthropic", "qwen": "chat", "aider": "chat"}[dialect]
    reply = next_reply(kind, parse_control("SCN=trap"), 0, None, dialect)
    assert reply.stop_reason == "end_turn" and not reply.tools and own in reply.text
    if dialect == "aider":  # a fenced shell block or an edit block would be acted on, not just shown
        assert "```" not in reply.text and "<<<<<<<" not in reply.text


def test_unknown_scenario_answers_with_text() -> None:
    reply = next_reply("openai", parse_control("SCN=nope"), 0)
    assert reply.stop_reason == "end_turn" and "Unknown scenario 'nope'" in reply.text


# -- Anthropic ---------------------------------------------------------------------------------

def _claude_body(*messages: dict[str, Any], stream: bool = True) -> dict[str, Any]:
    return {"model": "claude-mock", "stream": stream, "max_tokens": 100, "tools": [{"name": "Bash"}],
            "messages": list(messages)}


def test_anthropic_tool_call_then_final_reply(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    prompt = {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                          {"type": "text", "text": "SCN=bash DELAY=0.7 make the file"}]}
    with MockServer("anthropic", clock=fake_clock(), events_path=log) as m:
        status, ctype, text = post(m.url + "/v1/messages?beta=true", _claude_body(prompt))
        assert status == 200 and ctype.startswith("text/event-stream")
        events = sse(text)
        names = [e for e, _ in events]
        assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
        assert "ping" in names  # keepalive during the 0.7 s delay
        assert all(e == data["type"] for e, data in events)
        start = next(d for e, d in events if e == "content_block_start")
        assert start["content_block"]["type"] == "tool_use" and start["content_block"]["name"] == "Bash"
        args = "".join(d["delta"]["partial_json"] for e, d in events if e == "content_block_delta")
        assert json.loads(args)["command"].startswith("touch ")
        assert events[-2][1]["delta"]["stop_reason"] == "tool_use"

        tool_id = start["content_block"]["id"]
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": ""}]}
        assistant = {"role": "assistant", "content": [start["content_block"] | {"input": json.loads(args)}]}
        _, _, text2 = post(m.url + "/v1/messages", _claude_body(prompt, assistant, result))
        events2 = sse(text2)
        final = "".join(d["delta"]["text"] for e, d in events2 if e == "content_block_delta")
        assert "scenario 'bash' is complete" in final
        assert events2[-2][1]["delta"]["stop_reason"] == "end_turn"

        recorded = [e for e in m.events if e["event"] in ("request", "reply_sent")]
    assert [(e["event"], e["step"]) for e in recorded] == [
        ("request", 0), ("reply_sent", 0), ("request", 1), ("reply_sent", 1)]
    assert recorded[1]["tools"] == ["Bash"] and recorded[1]["stop_reason"] == "tool_use"
    assert recorded[3]["tools"] == [] and recorded[3]["stop_reason"] == "end_turn"
    assert [e["t"] for e in recorded] == sorted(e["t"] for e in recorded)
    assert all(isinstance(e["t"], float) and e["t"] >= 100 for e in recorded)  # the injected clock
    on_disk = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["event"] for e in on_disk] == [e["event"] for e in m.events]


def test_anthropic_side_calls_and_non_streaming() -> None:
    with MockServer("anthropic", default_delay=0) as m:
        req = urllib.request.Request(m.url + "/", method="HEAD")
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 200
        _, _, text = post(m.url + "/v1/messages/count_tokens", {"messages": []})
        assert json.loads(text) == {"input_tokens": 42}
        _, _, text = post(m.url + "/v1/messages", {"messages": [{"role": "user", "content": "title?"}]})
        assert json.loads(text)["content"][0]["type"] == "text"  # no tools: a side call
        prompt = {"role": "user", "content": "SCN=ask DELAY=0"}
        _, ctype, text = post(m.url + "/v1/messages", _claude_body(prompt, stream=False))
        msg = json.loads(text)
        assert ctype == "application/json" and msg["stop_reason"] == "tool_use"
        assert msg["content"][0]["name"] == "AskUserQuestion"
        assert [e["event"] for e in m.events] == ["side_request", "request", "reply_sent"]


# -- OpenAI Responses --------------------------------------------------------------------------

def _codex_body(*items: dict[str, Any]) -> dict[str, Any]:
    env = {"type": "message", "role": "user",
           "content": [{"type": "input_text", "text": "<environment_context><cwd>/w</cwd></environment_context>"}]}
    return {"model": "gpt-5.1-codex", "stream": True, "tools": [{"type": "function", "name": "exec_command"}],
            "input": [env, *items]}


def test_openai_function_call_then_final_reply() -> None:
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "SCN=edit DELAY=0"}]}
    with MockServer("openai") as m:
        status, ctype, text = post(m.url + "/v1/responses", _codex_body(prompt))
        assert status == 200 and ctype.startswith("text/event-stream")
        events = sse(text)
        assert all(e == d["type"] for e, d in events)
        names = [e for e, _ in events]
        assert names[0] == "response.created" and names[-1] == "response.completed"
        assert "response.output_item.added" in names and "response.function_call_arguments.delta" in names
        item = next(d["item"] for e, d in events if e == "response.output_item.done")
        assert item["type"] == "function_call" and item["name"] == "exec_command"
        args = json.loads(item["arguments"])
        assert args["sandbox_permissions"] == "require_escalated" and "/w/hello.py" in args["cmd"]
        assert events[-1][1]["response"]["output"] == [item]

        output = {"type": "function_call_output", "call_id": item["call_id"], "output": "ok"}
        _, _, text2 = post(m.url + "/v1/responses", _codex_body(prompt, item, output))
        events2 = sse(text2)
        deltas = "".join(d["delta"] for e, d in events2 if e == "response.output_text.delta")
        assert "scenario 'edit' is complete" in deltas
        done = next(d["item"] for e, d in events2 if e == "response.output_item.done")
        assert done["type"] == "message" and done["content"][0]["text"] == deltas
    steps = [(e["event"], e["step"], e.get("stop_reason")) for e in m.events]
    assert steps == [("request", 0, None), ("reply_sent", 0, "tool_use"),
                     ("request", 1, None), ("reply_sent", 1, "end_turn")]


def test_openai_title_side_request_gets_json_text() -> None:
    with MockServer("openai") as m:
        body = {"model": "m", "stream": True, "tools": [], "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "name it"}]}]}
        events = sse(post(m.url + "/v1/responses", body)[2])
        text = "".join(d["delta"] for e, d in events if e == "response.output_text.delta")
        assert json.loads(text)["title"]
        assert [e["event"] for e in m.events] == ["side_request"]


# -- Gemini ------------------------------------------------------------------------------------

def _gemini_body(*contents: dict[str, Any]) -> dict[str, Any]:
    return {"contents": list(contents), "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}]}


def test_gemini_function_call_then_final_reply() -> None:
    ctx = "<session_context>\n- **Workspace Directories:**\n  - /w\n</session_context>"
    prompt = {"role": "user", "parts": [{"text": ctx}, {"text": "SCN=bash DELAY=0 go"}]}
    with MockServer("gemini") as m:
        url = m.url + "/v1beta/models/gemini-pro:streamGenerateContent?alt=sse"
        status, ctype, text = post(url, _gemini_body(prompt))
        assert status == 200 and ctype.startswith("text/event-stream")
        chunks = sse(text)
        assert all(e is None for e, _ in chunks)  # bare `data:` lines, as the Gemini API sends
        call = chunks[-1][1]["candidates"][0]["content"]["parts"][0]["functionCall"]
        assert call["name"] == "run_shell_command" and call["args"]["command"].startswith("touch ")
        assert chunks[-1][1]["candidates"][0]["finishReason"] == "STOP"

        model = {"role": "model", "parts": [{"functionCall": call}]}
        response = {"role": "user", "parts": [{"functionResponse": {"name": call["name"], "response": {}}}]}
        chunks2 = sse(post(url, _gemini_body(prompt, model, response))[2])
        text2 = "".join(p.get("text", "") for _, c in chunks2 for p in c["candidates"][0]["content"]["parts"])
        assert "scenario 'bash' is complete" in text2
    assert [e["event"] for e in m.events] == ["request", "reply_sent", "request", "reply_sent"]


def test_gemini_side_calls_follow_response_schema() -> None:
    schema = {"type": "OBJECT", "properties": {
        "complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER", "minimum": 1},
        "next_speaker": {"type": "STRING", "enum": ["model", "user"]}, "flag": {"type": "BOOLEAN"}}}
    with MockServer("gemini") as m:
        base = m.url + "/v1beta/models/gemini-flash-lite"
        body = {"contents": [{"role": "user", "parts": [{"text": "route this"}]}],
                "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema}}
        out = json.loads(post(base + ":generateContent", body)[2])
        value = json.loads(out["candidates"][0]["content"]["parts"][0]["text"])
        assert value == {"complexity_reasoning": "Mock answer.", "complexity_score": 1,
                         "next_speaker": "user", "flag": False}
        assert json.loads(post(base + ":countTokens", body)[2]) == {"totalTokens": 42}
        assert m.events[0]["event"] == "side_request" and m.events[0]["schema"] is True


# -- dialects: one wire format, several agents' tool names ------------------------------------

def test_dialect_follows_the_offered_tool_names() -> None:
    assert dialect_for("anthropic", ["Bash", "Edit", "Read"]) == "claude"
    assert dialect_for("anthropic", ["bash", "edit", "read", "write", "glob"]) == "opencode"
    assert dialect_for("anthropic", ["bash", "view", "create", "edit"]) == "copilot"
    assert dialect_for("openai", ["exec_command"]) == "codex"
    assert dialect_for("openai", ["bash", "view", "create"]) == "copilot"
    assert dialect_for("gemini", ["run_shell_command"]) == "gemini"
    assert dialect_for("chat", ["run_shell_command", "edit", "read_file"]) == "qwen"
    assert dialect_for("chat", []) == "aider"
    assert dialect_for("anthropic", ["Unknown"]) == "claude"  # the wire format's own agent by default


@pytest.mark.parametrize(("cwd_line", "names", "first", "second"), [
    ("  Working directory: /w", ["bash", "edit", "read", "write"], ("read", "filePath"), ("edit", "filePath")),
    ("* Current working directory: /w", ["bash", "view", "create", "edit"], ("view", "path"), ("edit", "path")),
])
def test_anthropic_mock_answers_in_the_agents_tool_names(cwd_line: str, names: list[str],
                                                          first: tuple[str, str], second: tuple[str, str]) -> None:
    body = {"model": "m", "stream": True, "max_tokens": 10, "system": [{"type": "text", "text": cwd_line + "\n"}],
            "tools": [{"name": n} for n in names], "messages": [{"role": "user", "content": "SCN=edit DELAY=0"}]}
    with MockServer("anthropic") as m:
        events = sse(post(m.url + "/v1/messages", body)[2])
        start = next(d for e, d in events if e == "content_block_start")["content_block"]
        args = json.loads("".join(d["delta"]["partial_json"] for e, d in events if e == "content_block_delta"))
        assert (start["name"], args[first[1]]) == (first[0], "/w/hello.py")
        body["messages"] += [{"role": "assistant", "content": [start | {"input": args}]},
                             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": start["id"],
                                                           "content": "print('hello')"}]}]
        events = sse(post(m.url + "/v1/messages", body)[2])
        start = next(d for e, d in events if e == "content_block_start")["content_block"]
        args = json.loads("".join(d["delta"]["partial_json"] for e, d in events if e == "content_block_delta"))
        assert (start["name"], args[second[1]]) == (second[0], "/w/hello.py")


# -- OpenAI Chat Completions -------------------------------------------------------------------

def chat_chunks(text: str) -> list[Any]:
    """`data:` payloads of a Chat Completions stream; it must end with [DONE]."""
    datas = [ln[6:] for ln in text.split("\n") if ln.startswith("data: ")]
    assert datas[-1] == "[DONE]"
    return [json.loads(d) for d in datas[:-1]]


def _qwen_body(*messages: dict[str, Any]) -> dict[str, Any]:
    system = {"role": "system", "content": "I'm currently working in the directory: /w\nok"}
    return {"model": "qwen3-coder-plus", "stream": True, "stream_options": {"include_usage": True},
            "tools": [{"type": "function", "function": {"name": n}} for n in ("run_shell_command", "read_file")],
            "messages": [system, *messages]}


def test_chat_tool_call_then_final_reply() -> None:
    prompt = {"role": "user", "content": [{"type": "text", "text": "SCN=bash DELAY=0.6 go"}]}
    with MockServer("chat") as m:
        status, ctype, text = post(m.url + "/v1/chat/completions", _qwen_body(prompt))
        assert status == 200 and ctype.startswith("text/event-stream")
        assert ": keepalive" in text  # during the 0.6 s delay
        chunks = chat_chunks(text)
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 52
        deltas = [c["choices"][0]["delta"] for c in chunks[:-1]]
        calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
        assert calls[0]["function"]["name"] == "run_shell_command" and calls[0]["id"].startswith("call_")
        args = json.loads("".join(c["function"]["arguments"] for c in calls))
        assert args["command"].startswith("touch ")
        assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"

        assistant = {"role": "assistant", "content": None, "tool_calls": [
            {"id": calls[0]["id"], "type": "function", "function": {"name": "run_shell_command",
                                                                    "arguments": json.dumps(args)}}]}
        result = {"role": "tool", "tool_call_id": calls[0]["id"], "content": ""}
        chunks2 = chat_chunks(post(m.url + "/v1/chat/completions", _qwen_body(prompt, assistant, result))[2])
        final = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks2 if c["choices"])
        assert "scenario 'bash' is complete" in final
        assert chunks2[-2]["choices"][0]["finish_reason"] == "stop"
    assert [(e["event"], e["step"]) for e in m.events] == [
        ("request", 0), ("reply_sent", 0), ("request", 1), ("reply_sent", 1)]


def test_chat_qwen_suggestion_after_the_turn_is_a_side_call() -> None:
    """Qwen Code asks for a suggested next prompt after each turn, with the turn's tools and history: answered
    as a side call, not as the scenario's final reply once more (that would be a second end_turn)."""
    prompt = {"role": "user", "content": "SCN=text DELAY=0 go"}
    done = {"role": "assistant", "content": "Done. The scripted scenario 'text' is complete."}
    ask = {"role": "user", "content": [{"type": "text", "text": "[SUGGESTION MODE: Suggest what the user might "
                                                                 "naturally type next.]"}]}
    with MockServer("chat") as m:
        chunks = chat_chunks(post(m.url + "/v1/chat/completions", _qwen_body(prompt, done, ask))[2])
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        assert text == "Mock summary."
    assert [e["event"] for e in m.events] == ["side_request"]


def test_chat_qwen_edit_reads_first_in_the_cwd() -> None:
    reply = next_reply("chat", parse_control("SCN=edit"), 0, "/w", dialect_for("chat", ["run_shell_command"]))
    assert reply.tool_names == ["read_file"] and reply.tools[0].args["file_path"] == "/w/hello.py"
    with MockServer("chat") as m:
        body = _qwen_body({"role": "user", "content": "SCN=edit DELAY=0"}) | {"stream": False}
        msg = json.loads(post(m.url + "/v1/chat/completions", body)[2])
        call = msg["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call["name"] == "read_file" and json.loads(call["arguments"])["file_path"] == "/w/hello.py"
        assert msg["choices"][0]["finish_reason"] == "tool_calls"


def test_chat_without_tools_is_aiders_turn_or_a_side_call() -> None:
    prompt = {"role": "user", "content": "SCN=bash DELAY=0 run it"}
    with MockServer("chat") as m:
        body = {"model": "gpt-4o", "stream": True, "messages": [{"role": "system", "content": "Act as an expert"},
                                                                 prompt]}
        chunks = chat_chunks(post(m.url + "/v1/chat/completions", body)[2])
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
        assert "```bash\ntouch /tmp/panewatch_mock_x\n```" in text and "scenario 'bash' is complete" in text
        edit = next_reply("chat", parse_control("SCN=edit"), 0, None, "aider").text
        assert "hello.py\n```python\n<<<<<<< SEARCH\nprint('hello')\n=======\n" in edit
        # The commit-message call quotes the chat, control string included: still a side call.
        commit = {"model": "gpt-4o-mini", "stream": False, "messages": [
            {"role": "system", "content": "You are an expert software engineer that generates concise, one-line "
                                          "Git commit messages"},
            {"role": "user", "content": "# Context:\nUSER: SCN=bash DELAY=0 run it\n# Diffs:\n..."}]}
        msg = json.loads(post(m.url + "/v1/chat/completions", commit)[2])
        assert msg["choices"][0]["message"]["content"] == "Mock summary."
        schema = {"type": "object", "properties": {"next_speaker": {"type": "string", "enum": ["model", "user"]}}}
        side = {"model": "m", "messages": [{"role": "user", "content": "who speaks next?"}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}
        msg = json.loads(post(m.url + "/v1/chat/completions", side)[2])
        assert json.loads(msg["choices"][0]["message"]["content"]) == {"next_speaker": "user"}
        with urllib.request.urlopen(m.url + "/v1/models", timeout=5) as resp:
            assert json.loads(resp.read())["data"][0]["id"] == "mock"
    assert [e["event"] for e in m.events] == ["request", "reply_sent", "side_request", "side_request"]


# -- server lifecycle, CLI, homes --------------------------------------------------------------

def test_stop_interrupts_a_long_delay() -> None:
    m = MockServer("anthropic").start()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            post(m.url + "/v1/messages", _claude_body({"role": "user", "content": "SCN=bash DELAY=60"}))
        except Exception as exc:  # the stream is cut short: expected
            errors.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    deadline = time.monotonic() + 5
    while not m.events and time.monotonic() < deadline:
        time.sleep(0.02)
    m.stop()
    worker.join(10)  # the stream would run 60 s: ending within the join means stop() cut it
    assert not worker.is_alive()
    assert any(e["event"] == "client_gone" for e in m.events)


def test_module_cli_serves_until_terminated() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "panewatch.testing.mock", "gemini", "--delay", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        out = json.loads(post(url + "/v1beta/models/x:countTokens", {})[2])
        assert out == {"totalTokens": 42}
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_homes_have_the_documented_config(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9"
    claude = prepare("claude", tmp_path / "c", url, bin_dir="/bin", plan_mode=True)
    state = json.loads((Path(claude.home) / ".claude.json").read_text())
    assert state["hasCompletedOnboarding"] and state["hasSeenAutoDefaultNudge"]
    assert state["projects"][claude.cwd]["hasTrustDialogAccepted"] is True
    assert state["customApiKeyResponses"]["approved"] == [claude.env["ANTHROPIC_API_KEY"][-20:]]
    settings = json.loads((Path(claude.home) / ".claude" / "settings.json").read_text())
    assert settings == {"permissions": {"defaultMode": "default"}}
    assert claude.argv == ["/bin/claude", "--permission-mode", "plan"]
    assert claude.env["ANTHROPIC_BASE_URL"] == url and claude.env["DISABLE_AUTOUPDATER"] == "1"
    assert (Path(claude.cwd) / "hello.py").read_text() == "print('hello')\n"

    codex = prepare("codex", tmp_path / "x", url)
    assert codex.argv == ["codex", "--no-daemon"]
    config = tomllib.loads((Path(codex.home) / ".codex" / "config.toml").read_text())
    assert (config["approval_policy"], config["sandbox_mode"]) == ("on-request", "read-only")
    assert config["model_providers"]["mock"]["base_url"] == url + "/v1"
    assert config["projects"][codex.cwd]["trust_level"] == "trusted"
    assert codex.env["CODEX_HOME"] == str(Path(codex.home) / ".codex")

    gemini = prepare("gemini", tmp_path / "g", url)
    gs = json.loads((Path(gemini.home) / ".gemini" / "settings.json").read_text())
    assert gs["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert gs["security"]["folderTrust"]["enabled"] is False
    assert gemini.env["GOOGLE_GEMINI_BASE_URL"] == url and "ANTHROPIC_API_KEY" not in gemini.env


def test_homes_of_the_new_agents(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9"
    opencode = prepare("opencode", tmp_path / "o", url, bin_dir="/x")
    config = json.loads(opencode.env["OPENCODE_CONFIG_CONTENT"])
    assert config["provider"]["anthropic"]["options"]["baseURL"] == url + "/v1"
    assert config["permission"] == {"bash": "ask", "edit": "ask", "external_directory": "allow"}
    assert opencode.mock_kind == "anthropic"
    assert opencode.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1" and opencode.argv == ["/x/opencode"]

    copilot = prepare("copilot", tmp_path / "c", url)
    state = json.loads((Path(copilot.home) / ".copilot" / "config.json").read_text())
    assert state["trustedFolders"] == [copilot.cwd]
    assert (copilot.env["COPILOT_PROVIDER_BASE_URL"], copilot.env["COPILOT_PROVIDER_TYPE"]) == (url, "anthropic")
    assert not copilot.env["COPILOT_CACHE_HOME"].startswith(copilot.home)  # shared, not per home

    qwen = prepare("qwen", tmp_path / "q", url)
    settings = json.loads((Path(qwen.home) / ".qwen" / "settings.json").read_text())
    assert settings["tools"]["approvalMode"] == "default" and settings["security"]["auth"]["selectedType"] == "openai"
    assert qwen.env["OPENAI_BASE_URL"] == url + "/v1" and qwen.mock_kind == "chat"

    aider = prepare("aider", tmp_path / "a", url, bin_dir="/venv/bin")
    assert aider.argv == ["/venv/bin/aider", "--model", "openai/gpt-4o"] and aider.mock_kind == "chat"
    assert (Path(aider.cwd) / ".git").is_dir()  # else aider asks to create a repo
    cache = Path(aider.home) / ".aider" / "caches" / "model_prices_and_context_window.json"
    assert json.loads(cache.read_text())  # non-empty: an empty one is fetched again
    assert aider.env["OPENAI_API_BASE"] == url + "/v1" and aider.env["AIDER_CHECK_UPDATE"] == "false"


def test_unknown_paths_are_harmless() -> None:
    with MockServer("openai") as m:
        with urllib.request.urlopen(m.url + "/v1/models", timeout=5) as resp:
            assert json.loads(resp.read())["object"] == "list"
        assert json.loads(post(m.url + "/v1/other", {})[2]) == {}
    with pytest.raises(ValueError):
        MockServer("nope")


def test_a_client_resetting_its_connection_prints_no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    """A CLI stopped at the end of a capture resets its idle keep-alive connection (Aider under `agents
    verify`): socketserver would print a traceback into the verify table's output."""
    import socket
    import struct

    with MockServer("anthropic") as mock:
        port = int(mock.url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
            sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            sock.recv(65536)  # the reply; the handler now waits on the kept-alive connection
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and threading.active_count() > 2:
            time.sleep(0.02)  # the handler thread sees the reset and ends
    assert "Traceback" not in capfd.readouterr().err
