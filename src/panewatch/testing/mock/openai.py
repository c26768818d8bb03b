"""OpenAI Responses API mock (`POST /v1/responses`, SSE), as Codex CLI calls it."""

from __future__ import annotations

import json
import uuid
from typing import Any

from panewatch.testing.mock.exchange import Exchange
from panewatch.testing.mock.scenario import Reply, dialect_for, has_control, next_reply, parse_control, pieces

_RESULT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def _text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))


def conversation_position(body: dict[str, Any]) -> tuple[str, int]:
    """(prompt text, tool results since the prompt) from the request's `input` items."""
    raw = body.get("input")
    if isinstance(raw, str):
        return raw, 0
    items = [i for i in raw or [] if isinstance(i, dict)]
    users = [(n, _text_of(i)) for n, i in enumerate(items)
             if i.get("role") == "user" and i.get("type", "message") == "message"]
    # Codex injects context as user messages (<environment_context>...): skip those when no control.
    candidates = [(n, t) for n, t in users if has_control(t)] or \
        [(n, t) for n, t in users if t.strip() and not t.lstrip().startswith("<")]
    if not candidates:
        return "", 0
    start, prompt = candidates[-1]
    return prompt, sum(1 for i in items[start + 1:] if i.get("type") in _RESULT_TYPES)


def handle(ex: Exchange) -> None:
    if ex.method == "GET" and ex.path.endswith("/models"):
        ex.send_json({"object": "list", "data": [], "models": []})
        return
    if ex.answer_probe():
        return
    if not ex.path.endswith("/responses"):
        ex.send_json({})
        return
    body = ex.body if isinstance(ex.body, dict) else {}
    if not body.get("tools"):
        # The thread-title side request has no tools and wants JSON text back.
        ex.record("side_request", stream=bool(body.get("stream")))
        _stream(ex, body, Reply(text=json.dumps({"title": "Mock scripted task"})))
        return
    prompt, results = conversation_position(body)
    control = parse_control(prompt, default_scenario=ex.mock.default_scenario,
                            default_delay=ex.mock.default_delay)
    cwd = _cwd(body)
    names = [str(t.get("name")) for t in body["tools"] if isinstance(t, dict)]
    reply = next_reply("openai", control, results, cwd, dialect_for("openai", names))
    ex.record("request", step=reply.step, scenario=reply.scenario, stop_reason=None, tools=None)
    ex.when_sent(lambda: ex.record("reply_sent", step=reply.step, scenario=reply.scenario,
                                   stop_reason=reply.stop_reason, tools=reply.tool_names))
    _stream(ex, body, reply)


def _cwd(body: dict[str, Any]) -> str | None:
    for item in body.get("input") or []:
        text = _text_of(item) if isinstance(item, dict) else ""
        start = text.find("<cwd>")
        if start >= 0:
            end = text.find("</cwd>", start)
            return text[start + 5:end].strip() if end > start else None
    return None


def _usage() -> dict[str, Any]:
    return {"input_tokens": 42, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 52}


def _stream(ex: Exchange, body: dict[str, Any], reply: Reply) -> None:
    rid = f"resp_{uuid.uuid4().hex[:24]}"
    response: dict[str, Any] = {"id": rid, "object": "response", "status": "in_progress",
                                "model": body.get("model", "mock"), "output": []}
    ex.start_sse()
    ex.sse({"type": "response.created", "response": response}, "response.created")
    # SSE comments keep the stream alive during the delay; the CLI shows it is working.
    ex.wait(reply.delay, lambda: ex.chunk(b": keepalive\n\n"))
    output: list[dict[str, Any]] = []
    if reply.text:
        msg_id = f"msg_{uuid.uuid4().hex[:24]}"
        index = len(output)
        item: dict[str, Any] = {"type": "message", "id": msg_id, "role": "assistant",
                                "status": "in_progress", "content": []}
        ex.sse({"type": "response.output_item.added", "output_index": index, "item": item},
               "response.output_item.added")
        text_pieces = pieces(reply.text, reply.stream_seconds)
        for piece in text_pieces:
            ex.sse({"type": "response.output_text.delta", "item_id": msg_id, "output_index": index,
                    "content_index": 0, "delta": piece}, "response.output_text.delta")
            if reply.stream_seconds:
                ex.wait(reply.stream_seconds / len(text_pieces), lambda: ex.chunk(b": keepalive\n\n"))
        ex.sse({"type": "response.output_text.done", "item_id": msg_id, "output_index": index,
                "content_index": 0, "text": reply.text}, "response.output_text.done")
        done = item | {"status": "completed",
                       "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
        ex.sse({"type": "response.output_item.done", "output_index": index, "item": done},
               "response.output_item.done")
        output.append(done)
    for call in reply.tools:
        index = len(output)
        fc_id, call_id = f"fc_{uuid.uuid4().hex[:24]}", f"call_{uuid.uuid4().hex[:24]}"
        args = json.dumps(dict(call.args), ensure_ascii=False)
        item = {"type": "function_call", "id": fc_id, "call_id": call_id, "name": call.name,
                "arguments": "", "status": "in_progress"}
        ex.sse({"type": "response.output_item.added", "output_index": index, "item": item},
               "response.output_item.added")
        for piece in pieces(args, 0):
            ex.sse({"type": "response.function_call_arguments.delta", "item_id": fc_id,
                    "output_index": index, "delta": piece}, "response.function_call_arguments.delta")
        ex.sse({"type": "response.function_call_arguments.done", "item_id": fc_id, "output_index": index,
                "arguments": args}, "response.function_call_arguments.done")
        done = item | {"arguments": args, "status": "completed"}
        ex.sse({"type": "response.output_item.done", "output_index": index, "item": done},
               "response.output_item.done")
        output.append(done)
    final = response | {"status": "completed", "output": output, "usage": _usage()}
    ex.sse({"type": "response.completed", "response": final}, "response.completed")
