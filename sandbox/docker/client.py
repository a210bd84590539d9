"""One shared docker SDK client, and why the engine or the image cannot be used."""

from __future__ import annotations

import threading
from typing import Any

BUILD_HINT = "run `conductor sandbox build`"

_client_lock = threading.Lock()
_client: Any = None


def docker_client() -> Any:
    """A shared docker SDK client that negotiates the API version with the engine."""
    global _client
    with _client_lock:
        if _client is None:
            import docker

            _client = docker.from_env(version="auto", timeout=30)
        return _client


def daemon_problem() -> str | None:
    """Why the Docker engine cannot be used here, or None when it answers."""
    try:
        import docker  # noqa: F401
    except ImportError:
        return "the docker Python package is missing: `pip install docker`"
    try:
        docker_client().ping()
    except Exception as exc:
        _forget_client()
        return (
            f"no Docker engine answers ({type(exc).__name__}: {exc}); start dockerd "
            "or set DOCKER_HOST"
        )
    return None


def _forget_client() -> None:
    global _client
    with _client_lock:
        _client = None


def image_problem(tag: str) -> str | None:
    import docker.errors

    try:
        docker_client().images.get(tag)
    except docker.errors.ImageNotFound:
        return f"the sandbox image {tag} is missing: {BUILD_HINT}"
    except docker.errors.APIError as exc:
        return f"could not look up the sandbox image {tag}: {exc}"
    return None
