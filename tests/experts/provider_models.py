"""Helpers for the provider tests: the real anthropic and openai SDKs built against the
local wire server (tests/equipment/wire_server.py), retrying quickly unless told otherwise.
"""

from __future__ import annotations

from typing import Any

from conductor_kernel.interfaces import Message
from equipment.wire_server import WireServer
from experts.anthropic_model import AnthropicModel
from experts.openai_model import OpenAIModel
from experts.retry import Backoff

PROVIDERS = ["anthropic", "openai"]
FAST = {"base_s": 0.02, "cap_s": 0.1}  # retry quickly unless a test measures the wait
HI = [Message("user", "Say hello.")]


def make_model(provider: str, server: WireServer, model: str = "", **kw: Any) -> Any:
    kw.setdefault("backoff", Backoff(**FAST))
    kw.setdefault("api_key", "test-key")
    if provider == "anthropic":
        return AnthropicModel(model or "claude-haiku-4-5", base_url=server.url, **kw)
    return OpenAIModel(model or "gpt-4o", base_url=server.openai_url, **kw)
