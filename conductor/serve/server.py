"""Binding an HTTP server (`serve`, and `mcp --http` too): uvicorn on 127.0.0.1 by
default, behind the guard (guard.py), its connections held to their limits
(connections.py), a key asked of every request unless the operator turned keys off.

The key, when none is configured, is made at start and printed once with the URL, as
Jupyter prints its token: whoever started the server can paste it into a client, and a
web page cannot guess it.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from conductor.serve.connections import ConnectionLimits, fit_open_files, protocol_for
from conductor.serve.guard import (
    ANY_HOST,
    LOOPBACK_NAMES,
    MAX_BODY_BYTES,
    Access,
    ASGIApp,
    new_key,
    origin_of,
)
from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:
    from conductor.serve.app import ServeOptions

KEY_VARIABLE = "CONDUCTOR_SERVE_API_KEY"
WILDCARDS = ("0.0.0.0", "::", "")


def loopback_only(host: str) -> bool:
    """True if `host` is reachable from this machine alone."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to any address


def check_binding(host: str, api_key: str | None) -> None:
    if not api_key and not loopback_only(host):
        raise UserFacingError(
            f"serving on {host} with no API key lets other machines start runs: drop "
            f"--no-api-key (a key is made at start, or set ${KEY_VARIABLE}) or bind to 127.0.0.1"
        )


def choose_key(variable: str, no_key: bool) -> tuple[str | None, str]:
    """The key every request must send, and how the start-up line tells of it."""
    if no_key:
        return None, "no key asked (--no-api-key)"
    configured = os.environ.get(variable)
    if configured:
        return configured, f"key: from ${variable}"
    key = new_key()
    return key, f"key: {key} (made at start; set ${variable} to choose one)"


def access_for(
    host: str,
    api_key: str | None,
    *,
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    max_body_bytes: int = MAX_BODY_BYTES,
) -> Access:
    """Whom a server bound to `host` answers: the names it is bound to and those listed,
    the origins listed and no other, the key given."""
    listed = {name.strip().lower() for name in allowed_hosts if name.strip()}
    if loopback_only(host):
        names = set(LOOPBACK_NAMES)
    elif host in WILDCARDS:
        names = set()
    else:
        names = {host.lower()}
    names |= {name if name == ANY_HOST else name.strip("[]") for name in listed}
    if not names:
        raise UserFacingError(
            f"bound to {host or 'every address'}, the server would answer no Host: name "
            f"those clients reach it by with --allowed-host NAME (repeatable; {ANY_HOST} for any)"
        )
    origins = {_checked_origin(origin) for origin in allowed_origins}
    if max_body_bytes < 1:
        raise UserFacingError("--max-body-bytes must be at least 1")
    return Access(
        api_key=api_key,
        hosts=frozenset(names),
        origins=frozenset(origins),
        max_body_bytes=max_body_bytes,
    )


def _checked_origin(value: str) -> str:
    origin = origin_of(value)
    scheme, sep, rest = origin.partition("://")
    if scheme not in ("http", "https") or not sep or not rest or "/" in rest or origin == "*":
        raise UserFacingError(
            f"--allowed-origin {value!r} is not an origin: give scheme://host[:port], "
            "as a browser sends it (http://127.0.0.1:5173), with no path"
        )
    return origin


def listen(
    app: ASGIApp,
    host: str,
    port: int,
    limits: ConnectionLimits,
    *,
    announce: str,
    log_level: str = "info",
) -> None:
    """Serve `app` until stopped, after one line that says where and with what key."""
    import uvicorn

    if limits.max_connections < 1 or limits.header_timeout_s <= 0:
        raise UserFacingError("--max-connections and --header-timeout must be above 0")
    limits = fit_open_files(limits)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol_for(limits),
        timeout_keep_alive=limits.keep_alive_s,
        log_level=log_level,
        access_log=False,
    )
    print(announce, file=sys.stderr, flush=True)
    uvicorn.Server(config).run()


def serve(
    options: ServeOptions,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    limits: ConnectionLimits | None = None,
    key_said: str = "",
) -> None:
    """Serve until stopped (Ctrl-C); runs in progress are cancelled and end recorded."""
    from conductor.serve.app import create_app

    check_binding(host, options.access.api_key)
    shown = f"[{host}]" if ":" in host else host
    announce = f"conductor serve: http://{shown}:{port}/v1  {key_said or 'key required'}"
    listen(create_app(options), host, port, limits or ConnectionLimits(), announce=announce)
