"""Whom an HTTP server answers: one ASGI middleware in front of `serve` and `mcp --http`.

A web page can send a "simple" cross-site request (a POST of text/plain, no preflight)
to a server on this machine, and a host name rebound to 127.0.0.1 makes the page's own
origin read the replies. So, before the application sees a request: its `Host` must be a
name the server was bound to or the operator listed (a rebound name is not one); a
browser's `Origin` must be one the operator allowed (none by default); a POST must say
`application/json` (no simple request does); the key must come as `Authorization:
Bearer KEY`; and the body is read here, capped in bytes and time, before the
application gets it. Allowed origins get CORS headers and their preflights answered.
Each refusal is a JSON error and one line in the log.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from conductor.serve import wire

log = logging.getLogger("conductor.serve")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
ANY_HOST = "*"
JSON_METHODS = frozenset({"POST", "PUT", "PATCH"})  # a body, and it must be JSON
ALLOWED_HEADERS = "authorization, content-type, mcp-session-id, mcp-protocol-version, last-event-id"
EXPOSED_HEADERS = "x-conductor-run-id, x-conductor-run-status, mcp-session-id"
SHOWN = 120  # characters of a foreign header value in a refusal
MAX_BODY_BYTES = 1 << 20


def new_key() -> str:
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class Access:
    """Who may use a server. The defaults are the safe ones: loopback names only, no
    browser origin, a fresh key (`api_key=None` is the operator turning keys off)."""

    api_key: str | None = field(default_factory=new_key)
    hosts: frozenset[str] = LOOPBACK_NAMES  # Host names answered (`*`: any)
    origins: frozenset[str] = frozenset()  # browser origins, as `scheme://host[:port]`
    max_body_bytes: int = MAX_BODY_BYTES
    body_timeout_s: float = 30.0  # to send the whole body


class Refused(Exception):
    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def host_name(host: str) -> str:
    """The name of a `Host` value, without its port: `[::1]:8000` -> `::1`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    name, colon, port = host.rpartition(":")
    return name if colon and port.isdigit() and ":" not in name else host


def origin_of(value: str) -> str:
    return value.strip().lower().rstrip("/")


class Guard:
    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app, self.access = app, access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # neither server speaks websockets
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = _headers(scope)
        origin = headers.get("origin")
        allowed = origin is not None and origin_of(origin) in self.access.origins
        try:
            self._check_who(headers, origin, allowed)
            if allowed and scope["method"] == "OPTIONS":
                await _preflight(send, str(origin), headers.get("access-control-request-headers"))
                return
            self._check_key(headers)
            self._check_type(scope["method"], headers)
            body = await self._body(headers, receive)
        except Refused as refused:
            log_refusal(scope, refused.message)
            await _refuse(send, refused, str(origin) if allowed else None)
            return
        await self.app(scope, _replay(body, receive), _with_cors(send, origin) if allowed else send)

    def _check_who(self, headers: dict[str, str], origin: str | None, allowed: bool) -> None:
        host = headers.get("host", "")
        if ANY_HOST not in self.access.hosts and host_name(host) not in self.access.hosts:
            raise Refused(
                421,
                f"Host {_shown(host)} is not a name this server answers to "
                "(the operator lists others with --allowed-host)",
                "host_not_allowed",
            )
        if origin is not None and not allowed:
            raise Refused(
                403,
                f"Origin {_shown(origin)} is not allowed "
                "(the operator allows a web page's origin with --allowed-origin)",
                "origin_not_allowed",
            )
        if origin is None and headers.get("sec-fetch-site") in ("cross-site", "same-site"):
            raise Refused(403, "a request from another site is not allowed", "origin_not_allowed")

    def _check_key(self, headers: dict[str, str]) -> None:
        key = self.access.api_key
        if key is None:
            return
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode()):
            return
        raise Refused(
            401,
            "an API key is required: send it as `Authorization: Bearer KEY` (the server "
            "printed it when it started)",
            "invalid_api_key",
        )

    @staticmethod
    def _check_type(method: str, headers: dict[str, str]) -> None:
        if method not in JSON_METHODS:
            return
        media = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media != "application/json":
            raise Refused(
                415,
                f"a {method} body must be sent as `Content-Type: application/json`, "
                f"not {_shown(media) if media else 'none'}",
                "unsupported_media_type",
            )

    async def _body(self, headers: dict[str, str], receive: Receive) -> bytes:
        """The whole body, refused past its size or its time."""
        limit = self.access.max_body_bytes
        too_large = Refused(413, f"the request body is over {limit:,} bytes", "body_too_large")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        parts: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.access.body_timeout_s) as waited:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    break  # gone: the application sees an empty body, then the disconnect
                chunk = bytes(message.get("body", b""))
                size += len(chunk)
                if size > limit:
                    raise too_large
                parts.append(chunk)
                if not message.get("more_body", False):
                    break
        if waited.cancelled_caught:
            raise Refused(
                408,
                f"the request body took over {self.access.body_timeout_s:g} s to arrive",
                "body_timeout",
            )
        return b"".join(parts)


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lowercase name (the first of a repeated one)."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()  # what comes after: the client going away
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _cors(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", EXPOSED_HEADERS.encode()),
        (b"vary", b"Origin"),
    ]


def _with_cors(send: Send, origin: str | None) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *_cors(str(origin))]}
        await send(message)

    return sending


async def _preflight(send: Send, origin: str, asked: str | None) -> None:
    """An allowed origin's preflight: the headers it asks for (MCP's are open-ended,
    `Mcp-Param-*`), or those the servers read."""
    headers = [
        *_cors(origin),
        (b"access-control-allow-methods", b"GET, POST, DELETE, OPTIONS"),
        (b"access-control-allow-headers", (asked or ALLOWED_HEADERS).encode("latin-1")),
        (b"access-control-max-age", b"600"),
    ]
    await send({"type": "http.response.start", "status": 204, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send, refused: Refused, origin: str | None) -> None:
    body = json.dumps(wire.error(refused.message, "invalid_request_error", refused.code)).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    if refused.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    # The body may be unread, and a refused client could go on sending it for as long
    # as it liked: the connection ends with the refusal.
    headers.append((b"connection", b"close"))
    if origin is not None:
        headers += _cors(origin)
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def log_refusal(scope: Scope, message: str) -> None:
    """One line in the log for a refused request (its foreign parts escaped and cut)."""
    client = scope.get("client") or ("?", 0)
    path = _shown(str(scope.get("path", "")))
    said = message if len(message) <= 4 * SHOWN else message[: 4 * SHOWN] + "…"
    log.warning("refused %s %s from %s: %s", scope["method"], path, client[0], said)


def _shown(value: str) -> str:
    """A foreign value as it may appear in a message or the log: quoted, escaped, cut."""
    cut = value[:SHOWN] + ("…" if len(value) > SHOWN else "")
    return ascii(cut)
