"""Helpers shared by tests, importable as `support` from any test folder.

(Importing them from `conftest` is ambiguous: pytest may load another folder's
conftest.py under that name.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_root() -> Path:
    env = os.environ.get("CONDUCTOR_SHARED_DIR")
    return Path(env) if env else REPO.parent / "shared"


def meta_prompting_dir() -> Path:
    return shared_root() / "data" / "meta-prompting"


def skip_or_fail(reason: str, require_var: str) -> None:
    """Skip, or fail when the environment says the resource is required."""
    if os.environ.get(require_var) == "1":
        pytest.fail(f"{reason} (required because {require_var}=1)")
    pytest.skip(reason)


def docker_reason() -> str | None:
    """None when a Docker engine answers; otherwise why not."""
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as exc:  # any failure means: no usable engine here
        return f"no Docker engine: {exc}"
    return None
