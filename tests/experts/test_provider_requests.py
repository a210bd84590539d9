"""What each provider's SDK sends and gets back: streamed and plain calls, the exact
request bodies (cache breakpoints, the system prompt, max tokens), a whole conductor run
through each provider, and an OpenAI-compatible server found by the environment.
"""

from __future__ import annotations

from typing import Any

import pytest
from provider_models import HI, PROVIDERS, make_model

from conductor_kernel import prompts
from conductor_kernel.events import ExpertCallFinished, MetaTurnFinished, RunFinished, TextDelta
from conductor_kernel.interfaces import ChatModel, Message
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from equipment.wire_formats import last_user_text, system_text
from equipment.wire_server import Reply, WireServer
from experts.openai_model import OpenAIModel


@pytest.mark.parametrize("provider", PROVIDERS)
def test_streamed_text_arrives_in_pieces_and_equals_the_final_text(
    provider: str, server: WireServer
) -> None:
    reply = "The answer is 24, since 4 * 6 = 24 and nothing else is needed."
    server.add(reply)
    pieces: list[str] = []
    completion = make_model(provider, server).complete(HI, on_text=pieces.append)
    assert len(pieces) > 3
    assert "".join(pieces) == completion.text == reply
    assert completion.stop_reason in ("end_turn", "stop")
    assert completion.usage.output_tokens > 0 and completion.usage.input_tokens > 0
    assert server.requests[0].body["stream"] is True


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_call_without_on_text_is_not_streamed(provider: str, server: WireServer) -> None:
    server.add("plain")
    completion = make_model(provider, server).complete(HI)
    assert completion.text == "plain"
    assert not server.requests[0].body.get("stream")


def test_anthropic_sends_cache_breakpoints_on_system_and_last_user_message(
    server: WireServer,
) -> None:
    server.add("one", "two")
    model = make_model("anthropic", server, max_retries=0)
    history = [Message("user", "first"), Message("assistant", "ok"), Message("user", "second")]
    model.complete(history, system="You conduct.", cache=True, max_tokens=123)
    model.complete(history, system="You conduct.", cache=False)
    cached, plain = (r.body for r in server.requests)
    assert cached["system"] == [
        {"type": "text", "text": "You conduct.", "cache_control": {"type": "ephemeral"}}
    ]
    marks = [bool(m["content"][0].get("cache_control")) for m in cached["messages"]]
    assert marks == [False, False, True]
    assert cached["max_tokens"] == 123
    assert plain["system"] == "You conduct."
    assert not any(m["content"][0].get("cache_control") for m in plain["messages"])
    assert plain["max_tokens"] == model.default_max_tokens
    assert server.requests[0].headers["authorization"] == "Bearer test-key"
    assert "anthropic-version" in server.requests[0].headers


def test_openai_sends_the_system_prompt_first_and_max_tokens_to_compatible_servers(
    server: WireServer,
) -> None:
    server.add("one")
    make_model("openai", server).complete(HI, system="You conduct.", max_tokens=50)
    body = server.requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "You conduct."},
        {"role": "user", "content": "Say hello."},
    ]
    assert body["max_tokens"] == 50 and "max_completion_tokens" not in body


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_full_conductor_run_through_each_provider(provider: str) -> None:
    """Meta turn 1 calls an expert, the expert answers, meta turn 2 gives the answer."""

    def respond(body: dict[str, Any]) -> str | Reply:
        if system_text(body) != prompts.META_SYSTEM:
            return "6 times 7 is 42."
        if "Expert Mathematician's output" in last_user_text(body):
            return '>> FINAL ANSWER:\n"""\n42\n"""'
        return 'Expert Mathematician:\n"""\nWhat is 6 times 7?\n"""'

    with WireServer(responder=respond) as wire:
        model: ChatModel = make_model(provider, wire)
        config = RunConfig(python=False)
        events = list(Conductor(model, config=config).run("What is 6*7?"))
        bodies = [r.body for r in wire.requests]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.status == "answered" and finished.final_answer == "42"
    assert finished.rounds == 2 and finished.expert_calls == 1
    assert finished.usage.calls == 3 and finished.meta_usage.calls == 2
    assert finished.usage.input_tokens > 0 and finished.usage.cost_usd > 0
    meta_turns = [e for e in events if isinstance(e, MetaTurnFinished)]
    assert all(t.usage.output_tokens > 0 for t in meta_turns)
    assert any(isinstance(e, TextDelta) for e in events)  # streamed through on_text
    expert = next(e for e in events if isinstance(e, ExpertCallFinished))
    assert expert.text == "6 times 7 is 42." and expert.usage.calls == 1
    assert len(bodies) == 3
    if provider == "anthropic":
        # The second meta turn read the first one's prompt back from the cache.
        assert meta_turns[1].usage.cache_read_tokens > 0


def test_an_openai_compatible_server_is_found_by_env_and_its_first_model_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from experts.registry import get_model

    with WireServer(["served locally"], models=["qwen2.5:7b", "other"]) as wire:
        monkeypatch.setenv("OPENAI_BASE_URL", wire.openai_url)
        model = get_model("auto")
        assert isinstance(model, OpenAIModel) and model.model == "qwen2.5:7b"
        assert model.complete(HI).text == "served locally"
        assert not model.price.known  # a local model: cost 0, flagged
        assert wire.requests[-1].headers["authorization"] == "Bearer unused"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_temperature_is_sent_only_when_asked_for(provider: str, server: WireServer) -> None:
    """A program sent back is asked for at a sampling temperature (a model at 0 sent the
    same program back); every other call leaves the server's own. Anthropic's Messages
    API (SDK 2.x) takes no temperature: it is never sent there."""
    server.add("one", "two")
    model = make_model(provider, server)
    model.complete(HI)
    model.complete(HI, temperature=0.7)
    plain, sampled = (r.body for r in server.requests)
    assert "temperature" not in plain
    assert sampled.get("temperature") == (0.7 if provider == "openai" else None)
