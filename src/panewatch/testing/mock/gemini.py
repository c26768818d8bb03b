"""Gemini API mock (`:streamGenerateContent?alt=sse` plus `:generateContent` side calls)."""

from __future__ import annotations

import json
import re
from typing import Any

from panewatch.testing.mock.exchange import Exchange
from panewatch.testing.mock.scenario import Reply, has_control, next_reply, parse_control, pieces

# Enum values preferred when a side call's schema offers them: "user" ends the turn in the
# next-speaker check, "flash" is a harmless router choice.
_PREFERRED = ("user", "flash")
_CWD_RE = re.compile(r"Workspace Directories:\**\s*\n\s*- (\S+)")


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    parts = content.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def conversation_position(body: dict[str, Any]) -> tuple[str, int]:
    """(prompt text, function responses since the prompt) from the request's `contents`."""
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    users = [(n, "\n".join(str(p.get("text", "")) for p in _parts(c)))
             for n, c in enumerate(contents)
             if c.get("role", "user") == "user" and not any("functionResponse" in p for p in _parts(c))]
    candidates = [(n, t) for n, t in users if has_control(t)] or [(n, t) for n, t in users if t.strip()]
    if not candidates:
        return "", 0
    start, prompt = candidates[-1]
    return prompt, sum(1 for c in contents[start + 1:] for p in _parts(c) if "functionResponse" in p)


def _cwd(body: dict[str, Any]) -> str | None:
    # The first user turn carries <session_context> with "Workspace Directories:" then "  - /path".
    for content in body.get("contents") or []:
        for part in _parts(content) if isinstance(content, dict) else []:
            m = _CWD_RE.search(str(part.get("text", "")))
            if m:
                return m.group(1)
    return None


def value_for(schema: Any, depth: int = 0) -> Any:
    """A plausible value matching a (JSON or OpenAPI-style) schema."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return next((v for v in _PREFERRED if v in enum), enum[0])
    kind = str(schema.get("type", "object" if "properties" in schema else "string")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: value_for(v, depth + 1) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        low = schema.get("minimum", 0)
        return low if isinstance(low, int | float) else 0
    if kind == "boolean":
        return False
    return "Mock answer."


def _schema(body: dict[str, Any]) -> Any:
    config = body.get("generationConfig") or body.get("generation_config") or {}
    return config.get("responseJsonSchema") or config.get("responseSchema") or config.get("response_schema")


def handle(ex: Exchange) -> None:
    if ex.answer_probe():
        return
    body = ex.body if isinstance(ex.body, dict) else {}
    action = ex.path.rsplit(":", 1)[-1] if ":" in ex.path else ""
    if action == "countTokens":
        ex.send_json({"totalTokens": 42})
        return
    if action not in ("streamGenerateContent", "generateContent"):
        ex.send_json({})
        return
    streaming = action == "streamGenerateContent"
    if not body.get("tools"):
        schema = _schema(body)
        text = json.dumps(value_for(schema)) if schema else "Mock summary."
        ex.record("side_request", stream=streaming, schema=schema is not None)
        _send(ex, Reply(text=text), streaming)
        return
    prompt, results = conversation_position(body)
    control = parse_control(prompt, default_scenario=ex.mock.default_scenario,
                            default_delay=ex.mock.default_delay)
    reply = next_reply("gemini", control, results, _cwd(body))
    ex.record("request", step=reply.step, scenario=reply.scenario, stop_reason=None, tools=None)
    ex.when_sent(lambda: ex.record("reply_sent", step=reply.step, scenario=reply.scenario,
                                   stop_reason=reply.stop_reason, tools=reply.tool_names))
    _send(ex, reply, streaming)


def _chunk(parts: list[dict[str, Any]], finish: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    out: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-mock"}
    if finish:
        candidate["finishReason"] = "STOP"
        out["usageMetadata"] = {"promptTokenCount": 42, "candidatesTokenCount": 10, "totalTokenCount": 52}
    return out


def _call_parts(reply: Reply) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": t.name, "args": dict(t.args)}} for t in reply.tools]


def _send(ex: Exchange, reply: Reply, streaming: bool) -> None:
    if not streaming:
        ex.wait(reply.delay)
        parts = ([{"text": reply.text}] if reply.text else []) + _call_parts(reply)
        ex.send_json(_chunk(parts, True))
        return
    ex.start_sse()
    # No keepalive bytes: the SDK's SSE reader only understands `data:` lines.
    ex.wait(reply.delay)
    chunks: list[list[dict[str, Any]]] = []
    if reply.text:
        chunks += [[{"text": piece}] for piece in pieces(reply.text, reply.stream_seconds)]
    if reply.tools:
        chunks.append(_call_parts(reply))
    for n, parts in enumerate(chunks):
        ex.sse(_chunk(parts, n == len(chunks) - 1))
        if reply.stream_seconds and n < len(chunks) - 1:
            ex.wait(reply.stream_seconds / len(chunks))
