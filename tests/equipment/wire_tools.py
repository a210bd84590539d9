"""Tool calls in the Anthropic and OpenAI wire formats, for `equipment.wire_formats`.

A plain reply carries them whole (`tool_use` content blocks; `message.tool_calls`); a
streamed one as the real APIs stream them: Anthropic opens a `tool_use` block with the
id and the name and sends the input as `input_json_delta` fragments; OpenAI sends a
`delta.tool_calls` entry with the index, id and name, then entries with the index and
argument fragments. Arguments go out exactly as scripted, malformed or cut ones too.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from equipment.wire_faults import WireCall

Sse = Callable[[str | None, Any], str]


def call_id(call: WireCall, api: str) -> str:
    if call.id:
        return call.id
    return ("toolu_" if api == "anthropic" else "call_") + uuid.uuid4().hex[:20]


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _input(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return {}


def anthropic_blocks(calls: Sequence[WireCall]) -> list[dict[str, Any]]:
    return [
        {
            "type": "tool_use",
            "id": call_id(c, "anthropic"),
            "name": c.name,
            "input": _input(c.arguments),
        }
        for c in calls
    ]


def openai_calls(calls: Sequence[WireCall]) -> list[dict[str, Any]]:
    return [
        {
            "id": call_id(c, "openai"),
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for c in calls
    ]


def anthropic_events(sse: Sse, calls: Sequence[WireCall], first: int, size: int) -> list[str]:
    """The content blocks of the calls, numbered on from `first`."""
    events: list[str] = []
    for n, call in enumerate(calls, start=first):
        block = {
            "type": "tool_use",
            "id": call_id(call, "anthropic"),
            "name": call.name,
            "input": {},
        }
        events.append(
            sse(
                "content_block_start",
                {"type": "content_block_start", "index": n, "content_block": block},
            )
        )
        for piece in pieces(call.arguments, size):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(
                sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": n, "delta": delta},
                )
            )
        events.append(sse("content_block_stop", {"type": "content_block_stop", "index": n}))
    return events


def openai_deltas(calls: Sequence[WireCall], size: int) -> list[dict[str, Any]]:
    """The `delta` of each chunk that carries a piece of the calls."""
    deltas: list[dict[str, Any]] = []
    for n, call in enumerate(calls):
        head = {
            "index": n,
            "id": call_id(call, "openai"),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        deltas.append({"tool_calls": [head]})
        for piece in pieces(call.arguments, size):
            deltas.append({"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
    return deltas
