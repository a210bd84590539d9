"""The Messages API's shapes: our messages and tools as its content blocks, and its
usage figures as ours (the whole prompt counted as input, cache reads and writes apart).
"""

from __future__ import annotations

from typing import Any

from conductor_kernel.interfaces import Message, ToolSpec, Usage
from experts.tool_wire import object_arguments


def wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def content_blocks(message: Message) -> list[dict[str, Any]]:
    """One message's content blocks: a user message after tool calls starts with their
    results (`tool_result`, one a call); an assistant message that made calls ends with
    them (`tool_use`). Text is a block of its own, left out when empty beside those."""
    text = [{"type": "text", "text": message.content}]
    if message.tool_results:
        results: list[dict[str, Any]] = [
            {
                "type": "tool_result",
                "tool_use_id": r.call_id,
                "content": r.content,
                **({"is_error": True} if r.is_error else {}),
            }
            for r in message.tool_results
        ]
        return results + (text if message.content else [])
    if message.tool_calls:
        uses: list[dict[str, Any]] = [
            {
                "type": "tool_use",
                "id": c.id,
                "name": c.name,
                "input": object_arguments(c.arguments) or {},
            }
            for c in message.tool_calls
        ]
        return (text if message.content else []) + uses
    return text


def reported_at_start(message: Any) -> Usage | None:
    """The prompt's tokens as `message_start` reported them (the output is not yet
    known): what an attempt that fails later spent at least, if the server said."""
    u = getattr(message, "usage", None)
    if u is None or not getattr(u, "input_tokens", None):
        return None
    return usage_of(
        u.input_tokens,
        0,
        getattr(u, "cache_read_input_tokens", 0),
        getattr(u, "cache_creation_input_tokens", 0),
    )


def picked(later: Any, earlier: Any, field: str) -> int:
    """A usage figure from `message_delta` (cumulative) if sent, else from `message_start`."""
    for source in (later, earlier):
        value = getattr(source, field, None) if source is not None else None
        if value is not None:
            return int(value)
    return 0


def usage_of(uncached: int, output: int, read: int | None, write: int | None) -> Usage:
    # Anthropic reports the uncached remainder as input_tokens; ours is the whole prompt.
    uncached, output, read, write = int(uncached), int(output), int(read or 0), int(write or 0)
    return Usage(
        input_tokens=uncached + read + write,
        output_tokens=output,
        cache_read_tokens=read,
        cache_write_tokens=write,
        calls=1,
    )
