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
from typing import Any

from conductor_kernel.interfaces import TextCallback


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
