"""The JSON and server-sent-event shapes of the Anthropic and OpenAI chat APIs.

Pure functions used by `equipment.wire_server` to build replies the real SDKs accept:
Anthropic Messages (`message_start`, `content_block_start`, `ping`,
`content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`) and OpenAI
Chat Completions (`chat.completion.chunk` lines ending with `data: [DONE]`, and a final
usage chunk when `stream_options.include_usage` is set).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from equipment import wire_tools
from equipment.wire_faults import WireCall

Api = Literal["anthropic", "openai"]

ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class UsageCounts:
    """Prompt tokens (all of them), output tokens, and the cached parts of the prompt."""

    prompt: int
    output: int
    cache_read: int = 0
    cache_write: int = 0


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _block_text(block: Any) -> str:
    if isinstance(block, dict):
        if block.get("type") == "text" or "text" in block:
            return str(block.get("text", ""))
        return json.dumps(block, sort_keys=True)
    return str(block)


def prompt_segments(api: Api, body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The prompt as ordered (text, carries a cache_control mark) pieces.

    Each piece starts with its role so that equal text under another role is another
    prefix; prefixes of this list are what a provider's prompt cache keys on.
    """
    segments: list[tuple[str, bool]] = []
    if api == "anthropic":
        system = body.get("system")
        if isinstance(system, str) and system:
            segments.append(("system:" + system, False))
        elif isinstance(system, list):
            for block in system:
                marked = isinstance(block, dict) and bool(block.get("cache_control"))
                segments.append(("system:" + _block_text(block), marked))
    for message in body.get("messages") or []:
        role = str(message.get("role", "")) if isinstance(message, dict) else ""
        content = message.get("content") if isinstance(message, dict) else message
        if isinstance(content, list):
            for block in content:
                marked = isinstance(block, dict) and bool(block.get("cache_control"))
                segments.append((f"{role}:" + _block_text(block), marked))
        else:
            segments.append((f"{role}:" + str(content or ""), False))
    return segments


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of either API's request (for responders)."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(_block_text(b) for b in content)
            return str(content or "")
    return ""


def system_text(body: dict[str, Any]) -> str:
    """The system prompt of either API's request, or ''."""
    system = body.get("system")
    if isinstance(system, list):
        return "".join(_block_text(b) for b in system)
    if isinstance(system, str):
        return system
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            return str(message.get("content") or "")
    return ""


def presented_key(api: Api, headers: dict[str, str]) -> str | None:
    if api == "anthropic" and "x-api-key" in headers:
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else None


def error_body(api: Api, status: int, message: str = "") -> dict[str, Any]:
    message = message or f"injected fault: HTTP {status}"
    if api == "anthropic":
        kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = "rate_limit_exceeded" if status == 429 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def apply_max_tokens(api: Api, body: dict[str, Any], reply: Any) -> tuple[str, str]:
    """The reply text cut to the request's token limit, and the stop reason to send."""
    limit = body.get("max_tokens") or body.get("max_completion_tokens")
    text = reply.text
    if isinstance(limit, int) and estimate_tokens(text) > limit:
        return text[: limit * 4], "max_tokens" if api == "anthropic" else "length"
    if getattr(reply, "tool_calls", None) and not reply.stop_reason:
        return text, "tool_use" if api == "anthropic" else "tool_calls"
    return text, reply.stop_reason or ("end_turn" if api == "anthropic" else "stop")


def _anthropic_usage(usage: UsageCounts, *, output: int) -> dict[str, int]:
    # Anthropic's input_tokens excludes the cached parts; the three together are the prompt.
    return {
        "input_tokens": usage.prompt - usage.cache_read - usage.cache_write,
        "output_tokens": output,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
    }


def _openai_usage(usage: UsageCounts) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt,
        "completion_tokens": usage.output,
        "total_tokens": usage.prompt + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def full_reply(
    api: Api,
    msg_id: str,
    model: str,
    text: str,
    stop: str,
    usage: UsageCounts,
    reasoning: str = "",
    calls: Sequence[WireCall] = (),
) -> dict[str, Any]:
    """A non-streamed reply body (`reasoning` sent apart from the text when given)."""
    if api == "anthropic":
        thinking = [{"type": "thinking", "thinking": reasoning, "signature": "sig"}]
        said = [{"type": "text", "text": text}] if text or not calls else []
        return {
            "id": f"msg_{msg_id}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": (thinking if reasoning else []) + said + wire_tools.anthropic_blocks(calls),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": _anthropic_usage(usage, output=usage.output),
        }
    return {
        "id": f"chatcmpl-{msg_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": text if text or not calls else None,
                    "refusal": None,
                    **({"reasoning_content": reasoning} if reasoning else {}),
                    **({"tool_calls": wire_tools.openai_calls(calls)} if calls else {}),
                },
                "finish_reason": stop,
                "logprobs": None,
            }
        ],
        "usage": _openai_usage(usage),
    }


def _sse(event: str | None, data: Any) -> str:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n"


def stream_events(
    api: Api,
    msg_id: str,
    model: str,
    pieces: list[str],
    stop: str,
    usage: UsageCounts,
    include_usage: bool,
    reasoning: list[str] | None = None,
    calls: Sequence[WireCall] = (),
    chunk_chars: int = 8,
) -> list[str]:
    """The server-sent events of a streamed reply, in the order the real API sends them;
    `reasoning` pieces come first, apart from the text (a thinking block, or
    `reasoning_content` deltas); tool calls come after the text."""
    reasoning = reasoning or []
    if api == "anthropic":
        start = full_reply(api, msg_id, model, "", "", usage)
        start.update(content=[], stop_reason=None)
        start["usage"] = _anthropic_usage(usage, output=1)
        events = [
            _sse("message_start", {"type": "message_start", "message": start}),
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            _sse("ping", {"type": "ping"}),
        ]
        events += [
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": p},
                },
            )
            for p in reasoning
        ]
        events += [
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": p},
                },
            )
            for p in pieces
        ]
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events += wire_tools.anthropic_events(_sse, calls, 1, chunk_chars)
        events += [
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": usage.output},
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
        return events

    def chunk(delta: dict[str, Any], finish: str | None) -> str:
        return _sse(
            None,
            {
                "id": f"chatcmpl-{msg_id}",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
                ],
                **({"usage": None} if include_usage else {}),
            },
        )

    events = [chunk({"role": "assistant", "content": ""}, None)]
    events += [chunk({"reasoning_content": p}, None) for p in reasoning]
    events += [chunk({"content": p}, None) for p in pieces]
    events += [chunk(delta, None) for delta in wire_tools.openai_deltas(calls, chunk_chars)]
    events.append(chunk({}, stop))
    if include_usage:
        events.append(
            _sse(
                None,
                {
                    "id": f"chatcmpl-{msg_id}",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [],
                    "usage": _openai_usage(usage),
                },
            )
        )
    events.append(_sse(None, "[DONE]"))
    return events


def stream_error_event(api: Api, error_type: str) -> str:
    """An error sent inside a 200 stream, as each API's servers send one."""
    message = f"injected in-stream error: {error_type}"
    if api == "anthropic":
        return _sse("error", {"type": "error", "error": {"type": error_type, "message": message}})
    return _sse(None, {"error": {"message": message, "type": error_type, "code": None}})
