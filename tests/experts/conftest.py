"""The provider tests' fixture: a wire server of its own for each test.

The tests here run the real anthropic and openai SDKs against the local wire server:
nothing is mocked. Their model helpers are in provider_models.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from equipment.wire_server import WireServer


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as wire:
        yield wire
