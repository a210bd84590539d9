"""The connections an HTTP server holds: capped in number, and given a deadline for
their headers.

uvicorn holds a connection that has not finished its request line and headers for as
long as the client keeps it open (its keep-alive timeout starts only after a first
response), so a client trickling one byte every few seconds, times a thousand, uses up
the process's open files. Here each connection has `header_timeout_s` to send a whole
header block, counted from when it opened or its last response ended, however slowly
the bytes come; a connection past `max_connections` is answered 503 and closed at once,
before it costs more than the moment it took.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from dataclasses import dataclass, replace

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("conductor.serve")

# Open files a process needs besides its connections: its own modules, the run
# records, the notebook, a sandbox's pipes.
FILES_BESIDES = 256


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 2048  # open at once; more are answered 503 and closed
    header_timeout_s: float = 10.0  # to send a whole request line and headers
    keep_alive_s: int = 5  # an idle connection between requests


def _plain(status: str, message: str) -> bytes:
    body = json.dumps({"error": {"message": message, "type": "server_error"}}).encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


BUSY = _plain("503 Service Unavailable", "too many open connections; retry shortly")
TOO_SLOW = _plain("408 Request Timeout", "the request's headers took too long to arrive")


def protocol_for(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol held to `limits` (one class per server)."""

    class Guarded(_Guarded):
        pass

    Guarded.limits = limits
    return Guarded


class _Guarded(H11Protocol):
    limits: ConnectionLimits
    _refused = False
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            self._refused = True
            self.transport = transport
            transport.write(BUSY)
            transport.close()
            return
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self._refused:
            super().data_received(data)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's headers have their own deadline

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.limits.header_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        # IDLE: no whole request has arrived since the deadline was set.
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.write(TOO_SLOW)
            self.transport.close()


def fit_open_files(limits: ConnectionLimits) -> ConnectionLimits:
    """`limits`, with the process's open-file limit raised to hold them (up to its hard
    limit); where the hard limit is lower, fewer connections, said in the log."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = limits.max_connections + FILES_BESIDES
    ceiling = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < ceiling:
        resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
        soft = ceiling
    room = (wanted if soft == resource.RLIM_INFINITY else soft) - FILES_BESIDES
    if room >= limits.max_connections:
        return limits
    fewer = max(room, 1)
    log.warning(
        "the open-file limit (%s) holds %d connections, not %d: serving at most %d",
        soft,
        fewer,
        limits.max_connections,
        fewer,
    )
    return replace(limits, max_connections=fewer)
