"""Anthropic Messages API mock (`POST /v1/messages`, SSE), as Claude Code calls it (and OpenCode's and
Copilot CLI's Anthropic providers: their tool names pick the dialect)."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from panewatch.testing.mock.exchange import Exchange
from panewatch.testing.mock.scenario import Control, Reply, dialect_for, has_control, next_reply, parse_control, pieces

# The cwd sits in the environment section of the system prompt; search the raw JSON. Claude Code:
# "Primary working directory:", OpenCode: "Working directory:", Copilot: "Current working directory:".
_CWD_RE = re.compile(r"(?:Primary|Current)? ?[Ww]orking directory: ([^\s\\\"]+)")


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text_of(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def conversation_position(body: dict[str, Any]) -> tuple[str, int]:
    """(prompt text, tool results since the prompt). The prompt is the last user message carrying a
    control string, else the last user text that is not a tool result."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    user_texts = [(i, _text_of(_blocks(m.get("content")))) for i, m in enumerate(messages)
                  if m.get("role") == "user"
                  and not any(b.get("type") == "tool_result" for b in _blocks(m.get("content")))]
    with_control = [(i, t) for i, t in user_texts if has_control(t)]
    candidates = with_control or [(i, t) for i, t in user_texts if t.strip()]
    if not candidates:
        return "", 0
    start, prompt = candidates[-1]
    results = sum(1 for m in messages[start + 1:] for b in _blocks(m.get("content"))
                  if b.get("type") == "tool_result")
    return prompt, results


def handle(ex: Exchange) -> None:
    if ex.answer_probe():
        return
    body = ex.body if isinstance(ex.body, dict) else {}
    if ex.path.endswith("/count_tokens"):
        ex.send_json({"input_tokens": 42})
        return
    if not ex.path.endswith("/v1/messages"):
        ex.send_json({})
        return
    if not body.get("tools"):
        # Side calls (titles, summaries, quota checks) carry no tools: a short text keeps them happy.
        _side(ex, body)
        return
    prompt, results = conversation_position(body)
    control: Control = parse_control(prompt, default_scenario=ex.mock.default_scenario,
                                     default_delay=ex.mock.default_delay)
    m = _CWD_RE.search(ex.raw.decode("utf-8", "replace"))
    names = [str(t.get("name")) for t in body["tools"] if isinstance(t, dict)]
    reply = next_reply("anthropic", control, results, m.group(1) if m else None,
                       dialect_for("anthropic", names))
    ex.record("request", step=reply.step, scenario=reply.scenario, stop_reason=None, tools=None)
    ex.when_sent(lambda: ex.record("reply_sent", step=reply.step, scenario=reply.scenario,
                                   stop_reason=reply.stop_reason, tools=reply.tool_names))
    if body.get("stream"):
        _stream(ex, body, reply)
    else:
        ex.wait(reply.delay)
        ex.send_json(_message(body, reply))


def _side(ex: Exchange, body: dict[str, Any]) -> None:
    reply = Reply(text="Mock session")
    ex.record("side_request", stream=bool(body.get("stream")))
    if body.get("stream"):
        _stream(ex, body, reply)
    else:
        ex.send_json(_message(body, reply))


def _usage(out: int) -> dict[str, int]:
    return {"input_tokens": 42, "output_tokens": out, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}


def _content(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    blocks += [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": t.name,
                "input": dict(t.args)} for t in reply.tools]
    return blocks


def _message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": body.get("model", "claude-mock"), "content": _content(reply),
            "stop_reason": reply.stop_reason, "stop_sequence": None, "usage": _usage(10)}


def _stream(ex: Exchange, body: dict[str, Any], reply: Reply) -> None:
    ex.start_sse()
    start = _message(body, reply) | {"content": [], "stop_reason": None, "usage": _usage(1)}
    ex.sse({"type": "message_start", "message": start}, "message_start")
    ping = {"type": "ping"}
    # Pings while "thinking": the CLI shows its spinner and does not time out.
    ex.wait(reply.delay, lambda: ex.sse(ping, "ping"))
    for index, block in enumerate(_content(reply)):
        if block["type"] == "text":
            ex.sse({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}, "content_block_start")
            text_pieces = pieces(block["text"], reply.stream_seconds)
            for piece in text_pieces:
                ex.sse({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
                if reply.stream_seconds:
                    ex.wait(reply.stream_seconds / len(text_pieces), lambda: ex.sse(ping, "ping"))
        else:
            ex.sse({"type": "content_block_start", "index": index,
                    "content_block": block | {"input": {}}}, "content_block_start")
            args = json.dumps(block["input"], ensure_ascii=False)
            for piece in pieces(args, 0):
                ex.sse({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}, "content_block_delta")
        ex.sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    ex.sse({"type": "message_delta", "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 10}}, "message_delta")
    ex.sse({"type": "message_stop"}, "message_stop")
