"""What the wire server answers: scripted replies and injected faults.

A `Reply` is a scripted answer; a `Fault` is served instead of one (a status with an
error body, a malformed body, a delay, a stream cut or carrying an error part-way, a
connection reset). `equipment.wire_server` plays them; tests build them with the class
methods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class WireCall:
    """A tool call a scripted reply makes. `arguments` is sent as written (it may be
    malformed JSON, or cut off); an empty `id` gets one made up."""

    name: str
    arguments: str
    id: str = ""


@dataclass
class Reply:
    """A scripted answer. `stop_reason` None means the API's normal end of turn (or,
    with tool calls, the end of a turn that made calls)."""

    text: str
    stop_reason: str | None = None
    # Sent apart from the text, as a reasoning model's server does (`reasoning_content`,
    # Anthropic `thinking` blocks), before it.
    reasoning: str = ""
    # Tool calls made after the text (streamed as each API streams them: an id and a
    # name, then the arguments in pieces).
    tool_calls: list[WireCall] = field(default_factory=list)


@dataclass
class Fault:
    """A failure served instead of a reply; build one with the class methods."""

    status: int = 500
    retry_after: float | None = None
    retry_after_ms: bool = False  # send `retry-after-ms` instead of `retry-after`
    raw_body: str | None = None  # sent as is with a 200 and a JSON content type
    delay_s: float = 0.0  # answer only after this long (past the client's timeout)
    cut_after: int | None = None  # send this many stream events, then drop the connection
    message: str = ""  # the error message in the body (default: names the injected fault)
    stream_error: str | None = None  # after `cut_after` events, this error type in-stream
    reset: bool = False  # abort the connection (TCP reset) before answering
    ends_cleanly: bool = False  # after `cut_after` events, end the body in good order
    insert: bytes | None = None  # after `cut_after` events, these bytes; the stream goes on
    text: str | None = None  # what a cut or odd stream streams (default: FILLER)
    stall_s: float = 0.0  # after `cut_after` events, go silent this long before the cut

    @classmethod
    def rate_limit(cls, retry_after: float | None = 1.0, *, in_ms: bool = False) -> Fault:
        return cls(429, retry_after=retry_after, retry_after_ms=in_ms)

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        return cls(status)

    @classmethod
    def overloaded(cls) -> Fault:
        return cls(529)

    @classmethod
    def unauthorized(cls) -> Fault:
        return cls(401)

    @classmethod
    def malformed(cls, body: str = "<html><body>502 Bad Gateway</body></html>") -> Fault:
        return cls(200, raw_body=body)

    @classmethod
    def delay(cls, seconds: float) -> Fault:
        return cls(200, delay_s=seconds)

    @classmethod
    def disconnect(cls, after_events: int = 4) -> Fault:
        """Start the reply, then hang up part-way (a dropped connection)."""
        return cls(200, cut_after=after_events)

    @classmethod
    def error_in_stream(cls, error_type: str = "overloaded_error", after_events: int = 1) -> Fault:
        """A 200 stream that carries an error part-way: Anthropic's `event: error`, or
        the `data: {"error": ...}` chunk OpenAI-compatible servers send."""
        return cls(200, cut_after=after_events, stream_error=error_type)

    @classmethod
    def connection_reset(cls) -> Fault:
        return cls(0, reset=True)

    @classmethod
    def ends_early(cls, after_events: int = 4, text: str | None = None) -> Fault:
        """A stream that ends in good order part-way, before saying how the reply ended
        (no stop reason, no error): a proxy that closes its upstream's reply cleanly."""
        return cls(200, cut_after=after_events, ends_cleanly=True, text=text)

    @classmethod
    def odd_event(cls, data: bytes, after_events: int = 4, text: str | None = None) -> Fault:
        """A stream with one event the API never sends (`data`, sent as it is: bytes that
        are not UTF-8, JSON of another shape) after `after_events` events; the reply then
        goes on to its normal end."""
        return cls(200, cut_after=after_events, insert=data, text=text)

    @classmethod
    def stall(cls, after_events: int = 4, seconds: float = 5.0) -> Fault:
        """Start the reply, then go silent part-way (past the client's read timeout)."""
        return cls(200, cut_after=after_events, stall_s=seconds)

    @property
    def name(self) -> str:
        if self.reset:
            return "reset"
        if self.stream_error is not None:
            return f"stream_error:{self.stream_error}"
        if self.ends_cleanly:
            return "ends_early"
        if self.insert is not None:
            return "odd_event"
        if self.raw_body is not None:
            return "malformed"
        if self.delay_s:
            return "delay"
        if self.stall_s:
            return "stall"
        if self.cut_after is not None:
            return "disconnect"
        return str(self.status)


Answer = str | Reply | Fault
FILLER = "This reply is cut off part-way by an injected disconnect. " * 2
Responder = Callable[[dict[str, Any]], Answer]
