"""`conductor mcp --http`: the SDK's streamable HTTP app behind the same guard as
`conductor serve` (conductor/serve/guard.py), on 127.0.0.1 alone.

The SDK checks Host and Origin itself too, but by default it allows every port of
127.0.0.1 and localhost as an origin, which is any other page served from this machine;
it is given the guard's own lists, so the two agree and the guard is the one that
answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.server.transport_security import TransportSecuritySettings

from conductor.serve.connections import ConnectionLimits
from conductor.serve.guard import ANY_HOST, Access, ASGIApp, Guard
from conductor.serve.server import listen

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

HOST = "127.0.0.1"
PATH = "/mcp"


def security_settings(access: Access) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding settings saying what the guard says."""
    hosts = []
    for name in sorted(access.hosts):
        shown = f"[{name}]" if ":" in name else name
        hosts += [shown, f"{shown}:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=ANY_HOST not in access.hosts,
        allowed_hosts=hosts,
        allowed_origins=sorted(access.origins),
    )


def http_app(server: MCPServer, access: Access) -> ASGIApp:
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        transport_security=security_settings(access),
        max_request_body_size=access.max_body_bytes,
        host=HOST,
    )
    return Guard(app, access)


def serve_http(
    server: MCPServer,
    access: Access,
    port: int,
    *,
    limits: ConnectionLimits | None = None,
    key_said: str = "",
) -> None:
    """Serve until stopped (Ctrl-C)."""
    announce = f"conductor mcp: http://{HOST}:{port}{PATH}  {key_said or 'key required'}"
    listen(http_app(server, access), HOST, port, limits or ConnectionLimits(), announce=announce)
