"""OpenAI Chat Completions mock (`POST /v1/chat/completions`, SSE `data:` chunks ending in `[DONE]`).

Qwen Code's `openai` auth and Aider (through litellm / the openai SDK) call it. Qwen offers tools;
Aider offers none and edits through text blocks, so a request without tools that carries the
scenario's control string is Aider's turn, and one without it is a side call (titles, summaries).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from panewatch.testing.mock.exchange import Exchange
from panewatch.testing.mock.gemini import value_for
from panewatch.testing.mock.scenario import Reply, dialect_for, has_control, next_reply, parse_control, pieces


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))


def _tool_name(tool: Any) -> str:
    fn = tool.get("function") if isinstance(tool, dict) else None
    return str(fn.get("name")) if isinstance(fn, dict) else ""


def conversation_position(body: dict[str, Any]) -> tuple[str, int]:
    """(prompt text, tool results since the prompt) from the request's `messages`."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    users = [(n, _text_of(m.get("content"))) for n, m in enumerate(messages) if m.get("role") == "user"]
    candidates = [(n, t) for n, t in users if has_control(t)] or [(n, t) for n, t in users if t.strip()]
    if not candidates:
        return "", 0
    start, prompt = candidates[-1]
    return prompt, sum(1 for m in messages[start + 1:] if m.get("role") == "tool")


def _is_side_call(body: dict[str, Any], prompt: str) -> bool:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    last = messages[-1] if messages else {}
    # A turn ends with the user's prompt (control string) or a tool result. A later user message without
    # the control string is the agent asking something of its own: Qwen Code's "[SUGGESTION MODE: …]"
    # after the turn, which offers the same tools and history as the turn did.
    if last.get("role") == "user" and not has_control(_text_of(last.get("content"))):
        return True
    if body.get("tools"):
        return False
    system = " ".join(_text_of(m.get("content")) for m in body.get("messages") or []
                      if isinstance(m, dict) and m.get("role") == "system")
    # Aider's commit-message call quotes the chat (control string included) under its own system prompt.
    return not has_control(prompt) or "commit message" in system.lower()


def _cwd(body: dict[str, Any]) -> str | None:
    marker = "working in the directory: "  # Qwen Code's environment context
    for m in body.get("messages") or []:
        text = _text_of(m.get("content")) if isinstance(m, dict) else ""
        at = text.find(marker)
        if at >= 0:
            rest = text[at + len(marker):].split()
            return rest[0] if rest else None
    return None


def handle(ex: Exchange) -> None:
    if ex.method == "GET" and ex.path.endswith("/models"):
        ex.send_json({"object": "list", "data": [{"id": "mock", "object": "model", "owned_by": "mock"}]})
        return
    if ex.answer_probe():
        return
    if not ex.path.endswith("/chat/completions"):
        ex.send_json({})
        return
    body = ex.body if isinstance(ex.body, dict) else {}
    prompt, results = conversation_position(body)
    if _is_side_call(body, prompt):
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") if isinstance(fmt, dict) else None
        ex.record("side_request", stream=bool(body.get("stream")))
        _send(ex, body, Reply(text=json.dumps(value_for(schema)) if schema else "Mock summary."))
        return
    control = parse_control(prompt, default_scenario=ex.mock.default_scenario, default_delay=ex.mock.default_delay)
    names = [_tool_name(t) for t in body.get("tools") or []]
    reply = next_reply("chat", control, results, _cwd(body), dialect_for("chat", names))
    ex.record("request", step=reply.step, scenario=reply.scenario, stop_reason=None, tools=None)
    ex.when_sent(lambda: ex.record("reply_sent", step=reply.step, scenario=reply.scenario,
                                   stop_reason=reply.stop_reason, tools=reply.tool_names))
    _send(ex, body, reply)


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 42, "completion_tokens": 10, "total_tokens": 52}


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [{"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
             "function": {"name": t.name, "arguments": json.dumps(dict(t.args), ensure_ascii=False)}}
            for t in reply.tools]


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.tools else "stop"


def _send(ex: Exchange, body: dict[str, Any], reply: Reply) -> None:
    cid, model, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", body.get("model", "mock"), int(time.time())
    if not body.get("stream"):
        ex.wait(reply.delay)
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tools:
            message["tool_calls"] = _calls(reply)
        ex.send_json({"id": cid, "object": "chat.completion", "created": created, "model": model,
                      "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
                      "usage": _usage()})
        return

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        ex.sse({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    ex.start_sse()
    chunk({"role": "assistant", "content": ""})
    # SSE comments keep the stream alive while "thinking"; the SDKs' SSE readers skip them.
    ex.wait(reply.delay, lambda: ex.chunk(b": keepalive\n\n"))
    text_pieces = pieces(reply.text, reply.stream_seconds) if reply.text else []
    for piece in text_pieces:
        chunk({"content": piece})
        if reply.stream_seconds:
            ex.wait(reply.stream_seconds / len(text_pieces), lambda: ex.chunk(b": keepalive\n\n"))
    for index, call in enumerate(_calls(reply)):
        fn = call["function"]
        chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                               "function": {"name": fn["name"], "arguments": ""}}]})
        for piece in pieces(fn["arguments"], 0):
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    chunk({}, _finish(reply))
    if (body.get("stream_options") or {}).get("include_usage"):
        ex.sse({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [], "usage": _usage()})
    ex.sse("[DONE]")
