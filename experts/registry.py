"""Model names to `ChatModel`s.

Names: `auto` (by the keys set: Anthropic, else OpenAI or an OpenAI-compatible server,
else the offline demo), `demo`, `anthropic:MODEL`, `openai:MODEL`, or a bare model
name whose provider is plain from it (`claude-...`, `gpt-...`, `o3...`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from conductor.errors import UnknownModelError
from conductor.interfaces import ChatModel

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-6"
DEFAULT_OPENAI_MODEL = "gpt-4.1"

KNOWN_FORMS = (
    "auto",
    "demo",
    "anthropic:<model> (e.g. anthropic:claude-sonnet-4-6)",
    "openai:<model> (e.g. openai:gpt-4.1; with OPENAI_BASE_URL any OpenAI-compatible server)",
    "claude-<...>",
    "gpt-<...>, o1/o3/o4<...>",
)

CONFIGURE_HINT = (
    "To use a real model, set ANTHROPIC_API_KEY (Anthropic), OPENAI_API_KEY (OpenAI), or "
    "OPENAI_BASE_URL for an OpenAI-compatible server (vLLM, Ollama, llama.cpp), or pass "
    "--model NAME."
)


@dataclass(frozen=True)
class ModelChoice:
    provider: str  # anthropic | openai | demo
    model: str
    reason: str


def choose(spec: str = "auto") -> ModelChoice:
    """Which provider and model a name means; `auto` looks at the environment."""
    spec = (spec or "auto").strip()
    if spec == "auto":
        if os.environ.get("ANTHROPIC_API_KEY"):
            return ModelChoice("anthropic", DEFAULT_ANTHROPIC_MODEL, "ANTHROPIC_API_KEY is set")
        if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
            return ModelChoice("openai", "", "OPENAI_API_KEY or OPENAI_BASE_URL is set")
        return ModelChoice("demo", "demo", "no model key is set")
    if spec == "demo":
        return ModelChoice("demo", "demo", "asked for")
    provider, sep, name = spec.partition(":")
    if sep and provider in ("anthropic", "openai"):
        return ModelChoice(provider, name, "asked for")
    if spec.startswith("claude"):
        return ModelChoice("anthropic", spec, "asked for")
    if spec.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return ModelChoice("openai", spec, "asked for")
    raise UnknownModelError(
        f"unknown model {spec!r}. Known forms: {'; '.join(KNOWN_FORMS)}. {CONFIGURE_HINT}"
    )


def get_model(spec: str = "auto", *, timeout: float | None = None) -> ChatModel:
    """The model a name means; `timeout` (seconds of silence per attempt) for providers."""
    choice = choose(spec)
    options = {"timeout": timeout} if timeout else {}
    if choice.provider == "demo":
        from experts.demo import demo_model

        return demo_model()
    if choice.provider == "anthropic":
        from experts.anthropic_model import AnthropicModel

        return AnthropicModel(choice.model or DEFAULT_ANTHROPIC_MODEL, **options)
    from experts.openai_model import OpenAIModel

    model = choice.model
    if not model:
        model = DEFAULT_OPENAI_MODEL if not os.environ.get("OPENAI_BASE_URL") else ""
    if not model:
        model = _first_served_model()
    return OpenAIModel(model, **options)


def _first_served_model() -> str:
    """An OpenAI-compatible server with no model named: take the first it serves."""
    import openai

    base_url = os.environ.get("OPENAI_BASE_URL", "")
    try:
        client = openai.OpenAI(
            api_key=os.environ.get("OPENAI_API_KEY") or "none", max_retries=0, timeout=10
        )
        served = [m.id for m in client.models.list()]
    except openai.OpenAIError as exc:
        raise UnknownModelError(
            f"could not list the models served at {base_url} ({exc}); "
            "pass --model openai:NAME with the model's name."
        ) from exc
    if not served:
        raise UnknownModelError(f"the server at {base_url} serves no model; load one first.")
    return served[0]
