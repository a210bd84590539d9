"""The flags `serve` and `mcp --http` share: who may call, and how much a caller may hold.

Declared here without importing the servers (they need an extra); read by
`access_from` and `limits_from` when the command runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conductor.serve.connections import ConnectionLimits
    from conductor.serve.guard import Access


def add_http_flags(parser: argparse.ArgumentParser, *, key_variable: str) -> None:
    group = parser.add_argument_group(
        "who may call",
        "Every request must send the key as `Authorization: Bearer KEY`; with none "
        "configured, one is made at start and printed with the URL.",
    )
    group.add_argument(
        "--api-key-env",
        default=key_variable,
        metavar="VARIABLE",
        help=f"environment variable holding the key clients must send (default: {key_variable})",
    )
    group.add_argument(
        "--no-api-key",
        action="store_true",
        help="ask no key of anyone on this machine (refused when bound beyond loopback)",
    )
    group.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name to answer besides the one bound to (repeatable; `*` for any); "
        "a name not listed is refused, so a name rebound to 127.0.0.1 reaches nothing",
    )
    group.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web page's origin allowed to call, as scheme://host[:port] (repeatable; "
        "default: none, so no page in a browser can)",
    )
    held = parser.add_argument_group("how much a caller may hold")
    held.add_argument(
        "--max-body-bytes",
        type=int,
        default=1 << 20,
        metavar="N",
        help="a request body's size at most (default: 1048576, 1 MiB)",
    )
    held.add_argument(
        "--max-connections",
        type=int,
        default=2048,
        metavar="N",
        help="connections open at once; more are answered 503 (default: 2048)",
    )
    held.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="for a connection to send its whole request headers (default: 10)",
    )


def access_from(args: argparse.Namespace, host: str) -> tuple[Access, str]:
    """Whom the server answers, and the start-up line's words about the key."""
    from conductor.serve.server import access_for, check_binding, choose_key

    key, said = choose_key(args.api_key_env, args.no_api_key)
    check_binding(host, key)
    access = access_for(
        host,
        key,
        allowed_hosts=args.allowed_host,
        allowed_origins=args.allowed_origin,
        max_body_bytes=args.max_body_bytes,
    )
    return access, said


def limits_from(args: argparse.Namespace) -> ConnectionLimits:
    from conductor.serve.connections import ConnectionLimits

    return ConnectionLimits(
        max_connections=args.max_connections, header_timeout_s=args.header_timeout
    )
