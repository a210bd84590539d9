"""Binding the application: uvicorn on 127.0.0.1 by default, a key required elsewhere."""

from __future__ import annotations

import ipaddress
import os

from conductor.serve.app import ServeOptions, create_app
from conductor_kernel.errors import UserFacingError

KEY_VARIABLE = "CONDUCTOR_SERVE_API_KEY"


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
            f"serving on {host} lets other machines start runs: set an API key "
            f"(--api-key-env VARIABLE, default ${KEY_VARIABLE}) or bind to 127.0.0.1"
        )


def serve(options: ServeOptions, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve until stopped (Ctrl-C); runs in progress are cancelled and end recorded."""
    import uvicorn

    check_binding(host, options.api_key)
    uvicorn.run(create_app(options), host=host, port=port, log_level="info", access_log=False)


def key_from(variable: str) -> str | None:
    return os.environ.get(variable) or None
