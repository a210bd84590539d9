"""Letting the run close a provider's stream from another thread.

When the run is cancelled or hits a limit, it must not wait for the server's next piece
of text (a stalled or slow server may send none for a long time). The `on_text` the
loop passes (`conductor_kernel.limits.streaming.StreamWatch`) accepts a closer; the provider gives it
one that shuts the response's socket down, so the read blocked on it ends at once and
the server sees the connection go (and stops generating). A plain callback has no
`attach`, and nothing changes.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conductor_kernel.interfaces import TextCallback, ToolCall


def attach_closer(on_text: TextCallback, http_response: Any) -> Callable[[], None]:
    """Register how to close `http_response`'s connection; returns the detach call."""
    attach = getattr(on_text, "attach", None)
    if attach is None:
        return lambda: None
    stream = getattr(http_response, "extensions", {}).get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None

    def close() -> None:
        if isinstance(sock, socket.socket):
            # shutdown, not close: it wakes a read blocked in another thread.
            sock.shutdown(socket.SHUT_RDWR)
        else:
            http_response.close()

    attach(close)
    return getattr(on_text, "detach", lambda: None)


def stop_reason(on_text: TextCallback | None) -> str | None:
    """Why the run stopped this call's stream, if it did (its read then failed or
    ended early because the connection was closed under it)."""
    return getattr(on_text, "stop_reason", None) if on_text is not None else None


@dataclass
class _Pending:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamedCalls:
    """The tool calls of one streamed reply, put together from their pieces by position:
    an id and a name first, then the arguments' JSON in fragments."""

    def __init__(self) -> None:
        self._calls: dict[int, _Pending] = {}

    def start(self, index: int, call_id: str, name: str) -> None:
        pending = self._calls.setdefault(index, _Pending())
        pending.id = pending.id or call_id
        if name and not pending.name.endswith(name):  # some servers repeat the name
            pending.name += name

    def arguments(self, index: int, fragment: str) -> None:
        self._calls.setdefault(index, _Pending()).arguments.append(fragment)

    def add_openai(self, part: Any) -> None:
        """One `delta.tool_calls` entry of a Chat Completions chunk."""
        index = part.index if isinstance(part.index, int) else len(self._calls)
        function = getattr(part, "function", None)
        self.start(index, str(part.id or ""), str(getattr(function, "name", None) or ""))
        if function is not None and function.arguments:
            self.arguments(index, str(function.arguments))

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall(p.name, "".join(p.arguments), p.id) for _, p in sorted(self._calls.items())
        ]
