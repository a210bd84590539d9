"""Fixtures for the TUI tests (helpers live in tui_helpers.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def utc_clock() -> Iterator[None]:
    """Dates in the runs list are local time: make local time UTC for fixed snapshots."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()  # later tests see the machine's own zone again


@pytest.fixture
def anyio_backend() -> str:
    """Pilot tests are async: run them with anyio's pytest plugin on asyncio."""
    return "asyncio"
