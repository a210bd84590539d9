"""A served app on a free loopback port, in this process, for real clients (the `openai`
SDK, a browser): `conductor serve`'s app, or any ASGI app such as MCP's."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from conductor.serve.app import ServeOptions, create_app


@contextmanager
def running(options: ServeOptions) -> Iterator[str]:
    """The server's base URL (`http://127.0.0.1:PORT/v1`) while it runs."""
    with running_app(create_app(options)) as origin:
        yield f"{origin}/v1"


@contextmanager
def running_app(app: Any) -> Iterator[str]:
    """`http://127.0.0.1:PORT` while `app` is served there."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="test-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(60)
