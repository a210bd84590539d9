"""Model names to `ChatModel`s.

Names: `auto` (by the keys set: Anthropic, else OpenAI or an OpenAI-compatible server,
else the offline demo), `demo`, `anthropic:MODEL`, `openai:MODEL`, or a bare model
name whose provider is plain from it (`claude-...`, `gpt-...`, `o3...`).

Any provider's spec may end in `@URL` to name its own server, so the meta model and
the experts can live on different servers: `openai:smollm2@http://127.0.0.1:8080/v1`,
`anthropic:claude-haiku-4-5@http://127.0.0.1:4000`. Without it the provider's
environment variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) or its official API is
used. `openai:@URL` takes the first model the server lists.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from conductor_kernel.errors import ModelUnreachable, UnknownModelError
from conductor_kernel.interfaces import ChatModel
from experts.local_models import model_id

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-6"
DEFAULT_OPENAI_MODEL = "gpt-4.1"

KNOWN_FORMS = (
    "auto",
    "demo",
    "anthropic:<model> (e.g. anthropic:claude-sonnet-4-6)",
    "openai:<model> (e.g. openai:gpt-4.1; with OPENAI_BASE_URL any OpenAI-compatible server)",
    "<provider>:<model>@<base URL> (e.g. openai:smollm2@http://127.0.0.1:8080/v1)",
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
    base_url: str | None = None  # from `@URL` in the spec; None: the environment's


def split_endpoint(spec: str) -> tuple[str, str | None]:
    """`NAME@http://host:port/v1` -> (`NAME`, the URL); a spec without one is unchanged."""
    head, sep, tail = spec.rpartition("@")
    if sep and tail.startswith(("http://", "https://")):
        return head, tail.rstrip("/")
    if sep and "://" not in spec.split("@", 1)[0] and tail:
        raise UnknownModelError(
            f"{spec!r}: the part after @ must be a server URL starting with http:// or "
            "https:// (e.g. openai:smollm2@http://127.0.0.1:8080/v1)"
        )
    return spec, None


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
    bare, base_url = split_endpoint(spec)
    provider, sep, name = bare.partition(":")
    if sep and provider in ("anthropic", "openai"):
        return ModelChoice(provider, name, "asked for", base_url)
    if bare.startswith("claude"):
        return ModelChoice("anthropic", bare, "asked for", base_url)
    if bare.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return ModelChoice("openai", bare, "asked for", base_url)
    raise UnknownModelError(
        f"unknown model {spec!r}. Known forms: {'; '.join(KNOWN_FORMS)}. {CONFIGURE_HINT}"
    )


# A batch's threads each open their model: the SDKs' first imports (openai, httpx) run
# one at a time, or two threads importing them at once can meet a half-initialised
# module ("partially initialized module 'httpx' has no attribute 'Timeout'"), which
# ended a batch item as an error on a loaded machine.
_FIRST_IMPORT = threading.Lock()


def get_model(spec: str = "auto", *, timeout: float | None = None) -> ChatModel:
    """The model a name means; `timeout` (seconds of silence per attempt) for providers."""
    choice = choose(spec)
    # Only a given timeout is passed on, so each provider keeps its own default.
    options: dict[str, Any] = {"timeout": timeout} if timeout else {}
    if choice.provider == "demo":
        from experts.demo import demo_model

        return demo_model()
    if choice.provider == "anthropic":
        with _FIRST_IMPORT:
            from experts.anthropic_model import AnthropicModel

        return AnthropicModel(
            choice.model or DEFAULT_ANTHROPIC_MODEL,
            base_url=choice.base_url,
            name=_name(spec),
            **options,
        )
    with _FIRST_IMPORT:
        from experts.openai_model import OpenAIModel

    model = choice.model
    custom_url = choice.base_url or os.environ.get("OPENAI_BASE_URL")
    if not model:
        model = DEFAULT_OPENAI_MODEL if not custom_url else ""
    if not model:
        model = _first_served_model(custom_url or "")
    return OpenAIModel(model, base_url=choice.base_url, name=_name(spec, model), **options)


def _name(spec: str, model: str = "") -> str | None:
    """The name a model with its own endpoint is shown and recorded under: the spec."""
    bare, url = split_endpoint(spec.strip())
    if url is None:
        return None
    if bare.endswith(":") and model:
        bare += model
    provider, colon, named = bare.partition(":")
    if colon:  # a GGUF path (as llama-server lists it) is named by its file
        bare = f"{provider}:{model_id(named)}"
    return f"{bare}@{url}"


def endpoint_problem(model: object) -> str | None:
    """Why a model's server cannot be reached at all, before anything is spent on a
    run (a sandbox started, a notebook opened); None when its address takes a
    connection (or the model has no server). A plain TCP connect: no request, no cost."""
    import socket
    from urllib.parse import urlsplit

    from experts.failures import Failure, explain_unreachable

    url = getattr(model, "base_url", None)
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=5):
            return None
    except socket.gaierror as exc:
        return explain_unreachable(Failure("unreachable", detail=str(exc), cause="dns"), url)
    except ConnectionRefusedError as exc:
        return explain_unreachable(Failure("unreachable", detail=str(exc), cause="refused"), url)
    except OSError as exc:
        if exc.errno in (101, 113):  # no route: the network, not the server
            failure = Failure("unreachable", detail=str(exc), cause="no_route")
            return explain_unreachable(failure, url)
        return None  # slow or odd: let the first call say what it is


def _first_served_model(base_url: str) -> str:
    """An OpenAI-compatible server with no model named: take the first it serves."""
    import openai

    try:
        client = openai.OpenAI(
            api_key=os.environ.get("OPENAI_API_KEY") or "none",
            base_url=base_url or None,
            max_retries=0,
            timeout=10,
        )
        served = [m.id for m in client.models.list()]
    except openai.OpenAIError as exc:
        from experts.failures import explain_unreachable, failure_from_sdk

        failure = failure_from_sdk(exc, openai)
        if failure is not None and failure.kind == "unreachable":
            # Naming a model would only lead to the same wall: say what is wrong.
            raise ModelUnreachable(explain_unreachable(failure, base_url)) from exc
        if failure is not None and failure.kind in ("timeout", "connection"):
            raise ModelUnreachable(
                f"no reply from {base_url} when asked which models it serves ({exc}): is "
                "the model server running there, and done loading? Check it, or point "
                "OPENAI_BASE_URL at the right address"
            ) from exc
        raise UnknownModelError(
            f"the server at {base_url} did not list its models ({exc}); "
            "pass --model openai:NAME with the model's name."
        ) from exc
    if not served:
        raise UnknownModelError(f"the server at {base_url} serves no model; load one first.")
    return served[0]
