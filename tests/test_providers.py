"""The real anthropic and openai SDKs against the local wire server: nothing is mocked.

Covers streaming, retries (429 with retry-after, 5xx, timeouts, dropped connections),
clear errors, usage with cached tokens, cost, the exact requests sent, concurrency, the
shared backoff, the price table, and a whole conductor run through each provider.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from conductor_kernel import prompts
from conductor_kernel.errors import ConfigError, ModelUnreachable
from conductor_kernel.events import ExpertCallFinished, MetaTurnFinished, RunFinished, TextDelta
from conductor_kernel.interfaces import ChatModel, Message, ModelError
from conductor_kernel.loop import Conductor
from conductor_kernel.run_config import RunConfig
from equipment.wire_formats import last_user_text, system_text
from equipment.wire_server import Fault, Reply, WireServer
from experts.anthropic_model import AnthropicModel
from experts.openai_model import OpenAIModel
from experts.pricing import Price, PriceTable
from experts.retry import Backoff, Failure, explain_unreachable, parse_retry_after

PROVIDERS = ["anthropic", "openai"]
FAST = {"base_s": 0.02, "cap_s": 0.1}  # retry quickly unless a test measures the wait
HI = [Message("user", "Say hello.")]


def make_model(provider: str, server: WireServer, model: str = "", **kw: Any) -> Any:
    kw.setdefault("backoff", Backoff(**FAST))
    kw.setdefault("api_key", "test-key")
    if provider == "anthropic":
        return AnthropicModel(model or "claude-haiku-4-5", base_url=server.url, **kw)
    return OpenAIModel(model or "gpt-4o", base_url=server.openai_url, **kw)


@pytest.fixture
def server() -> Any:
    with WireServer() as wire:
        yield wire


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


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("in_ms", [False, True])
def test_429_waits_as_long_as_retry_after_says_and_counts_the_retry(
    provider: str, in_ms: bool, server: WireServer
) -> None:
    server.inject(Fault.rate_limit(0.5, in_ms=in_ms))
    server.add("after the wait")
    # A long exponential base: only the server's retry-after can make the wait 0.5 s.
    model = make_model(provider, server, backoff=Backoff(base_s=5.0, cap_s=5.0))
    started = time.monotonic()
    completion = model.complete(HI, on_text=lambda _: None)
    elapsed = time.monotonic() - started
    assert completion.text == "after the wait"
    assert completion.retries == 1
    first, second = server.requests
    assert first.status == 429 and second.fault is None
    assert second.ts - first.ts >= 0.5
    assert elapsed < 2.0
    # Our layer retried, not the SDK's (its retry counter header stays at 0).
    assert {r.headers.get("x-stainless-retry-count") for r in server.requests} == {"0"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_5xx_and_overloaded_are_retried(provider: str, server: WireServer) -> None:
    server.inject(Fault.server_error(500), Fault.overloaded(), Fault.server_error(503))
    server.add("third time lucky")
    completion = make_model(provider, server).complete(HI)
    assert (completion.text, completion.retries) == ("third time lucky", 3)
    assert [r.status for r in server.requests] == [500, 529, 503, 200]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_that_keeps_failing_gives_a_clear_error(provider: str, server: WireServer) -> None:
    server.inject(*[Fault.server_error(500)] * 3)
    model = make_model(provider, server, max_retries=2)
    with pytest.raises(ModelError) as err:
        model.complete(HI)
    message = str(err.value)
    assert "answered 500 3 times" in message and model.base_url in message
    assert "check the server or retry later" in message
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("streamed", [False, True])
def test_a_malformed_body_is_a_clear_error_and_not_retried(
    provider: str, streamed: bool, server: WireServer
) -> None:
    server.inject(Fault.malformed("<html>gateway error</html>"))
    on_text = (lambda _: None) if streamed else None
    with pytest.raises(ModelError, match="was not valid JSON") as err:
        make_model(provider, server).complete(HI, on_text=on_text)
    if not streamed:
        assert "<html>gateway error" in str(err.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_slower_than_the_timeout_is_retried_then_reported(
    provider: str, server: WireServer
) -> None:
    server.inject(Fault.delay(5), Fault.delay(5))
    model = make_model(provider, server, timeout=0.3, max_retries=1)
    started = time.monotonic()
    with pytest.raises(ModelError) as err:
        model.complete(HI, on_text=lambda _: None)
    assert time.monotonic() - started < 3.0  # gave up on the client's timeout, not the server
    assert f"no reply within 0.3 s from {model.base_url} (2 times)" in str(err.value)
    assert "stalled" in str(err.value) and "--model-timeout" in str(err.value)
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_dropped_connection_is_retried_before_any_text(provider: str, server: WireServer) -> None:
    server.inject(Fault.disconnect(after_events=1))
    server.add("whole reply")
    completion = make_model(provider, server).complete(HI, on_text=lambda _: None)
    assert (completion.text, completion.retries) == ("whole reply", 1)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_cut_after_text_fails_rather_than_repeat_the_text(
    provider: str, server: WireServer
) -> None:
    server.inject(Fault.disconnect(after_events=6))
    pieces: list[str] = []
    with pytest.raises(ModelError, match="broke part-way"):
        make_model(provider, server).complete(HI, on_text=pieces.append)
    assert pieces and len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_wrong_key_names_the_env_var_to_check(provider: str) -> None:
    with WireServer(["never sent"], api_key="right-key") as wire:
        with pytest.raises(ModelError) as err:
            make_model(provider, wire, api_key="wrong-key").complete(HI)
        env = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
        assert "authentication failed" in str(err.value) and env in str(err.value)
        assert len(wire.requests) == 1  # no point retrying a bad key
        assert make_model(provider, wire, api_key="right-key").complete(HI).text == "never sent"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_key_for_the_official_endpoint_says_which_variable_to_set(provider: str) -> None:
    cls, env = (
        (AnthropicModel, "ANTHROPIC_API_KEY")
        if provider == "anthropic"
        else (OpenAIModel, "OPENAI_API_KEY")
    )
    with pytest.raises(ModelError, match=env):
        cls("some-model")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_that_is_not_running_fails_the_first_call_at_once(provider: str) -> None:
    with WireServer() as wire:
        # A long backoff: one retry would take seconds, so only "no retry" passes.
        model = make_model(provider, wire, backoff=Backoff(base_s=5.0, cap_s=5.0))
    with pytest.raises(ModelUnreachable) as err:
        model.complete(HI)
    message = str(err.value)
    assert "connection refused" in message and "start the model server" in message
    assert model.base_url in message
    # The next call (a learning call after the failed run) does not try the server again.
    with pytest.raises(ModelUnreachable, match="not tried again"):
        model.complete(HI)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_host_that_does_not_resolve_is_named_as_a_lookup_failure(provider: str) -> None:
    cls = AnthropicModel if provider == "anthropic" else OpenAIModel
    model = cls(
        "some-model",
        base_url="http://conductor-test.invalid:8080/v1",
        api_key="k",
        backoff=Backoff(base_s=5.0, cap_s=5.0),
    )
    with pytest.raises(ModelUnreachable) as err:
        model.complete(HI)
    assert "cannot look up the host 'conductor-test.invalid'" in str(err.value)
    assert "connection refused" not in str(err.value)


def test_a_lookup_failure_of_the_hosted_api_blames_the_network_not_the_base_url() -> None:
    failure = Failure("unreachable", cause="dns", detail="Name or service not known")
    message = explain_unreachable(failure, "https://api.openai.com/v1")
    assert "no working network" in message and "base URL" not in message
    assert "--model demo" in message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_retry_after_longer_than_we_wait_fails_at_once(provider: str, server: WireServer) -> None:
    server.inject(Fault.rate_limit(600))
    started = time.monotonic()
    with pytest.raises(ModelError, match="asked to wait 600 s"):
        make_model(provider, server).complete(HI)
    assert time.monotonic() - started < 1.0 and len(server.requests) == 1


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


def test_anthropic_usage_counts_cache_reads_and_writes_and_prices_them(
    server: WireServer,
) -> None:
    server.add("first reply", "second reply")
    model = make_model("anthropic", server)
    system = "You are the conductor. " * 20
    history = [Message("user", "Round one: " + "context " * 50)]
    first = model.complete(history, system=system, cache=True, on_text=lambda _: None)
    history += [Message("assistant", first.text), Message("user", "Round two.")]
    second = model.complete(history, system=system, cache=True)
    # Round one wrote the whole prompt to the cache; round two read it back.
    assert first.usage.cache_read_tokens == 0
    assert first.usage.cache_write_tokens == first.usage.input_tokens > 0
    assert second.usage.cache_read_tokens == first.usage.input_tokens
    assert 0 < second.usage.cache_write_tokens < second.usage.input_tokens
    u = second.usage
    uncached = u.input_tokens - u.cache_read_tokens - u.cache_write_tokens
    # claude-haiku-4-5: $1 in, $5 out, $0.10 cache read, $1.25 cache write per MTok.
    expected = (
        uncached * 1 + u.output_tokens * 5 + u.cache_read_tokens * 0.1 + u.cache_write_tokens * 1.25
    )
    assert u.cost_usd == pytest.approx(expected / 1e6)
    assert u.calls == 1


@pytest.mark.parametrize("streamed", [False, True])
def test_openai_usage_reads_cached_tokens_and_prices_them(
    streamed: bool, server: WireServer
) -> None:
    server.add("first", "second")
    model = make_model("openai", server)
    on_text = (lambda _: None) if streamed else None
    history = [Message("user", "A long shared prefix. " * 40)]
    first = model.complete(history, system="sys", on_text=on_text)
    history += [Message("assistant", "first"), Message("user", "And now?")]
    second = model.complete(history, system="sys", on_text=on_text)
    assert first.usage.cache_read_tokens == 0
    assert first.usage.input_tokens < second.usage.cache_read_tokens + 10
    assert 0 < second.usage.cache_read_tokens < second.usage.input_tokens
    u = second.usage
    # gpt-4o: $2.50 in, $10 out, $1.25 cached input per MTok.
    expected = (
        (u.input_tokens - u.cache_read_tokens) * 2.5
        + u.output_tokens * 10
        + u.cache_read_tokens * 1.25
    )
    assert u.cost_usd == pytest.approx(expected / 1e6)
    if streamed:
        assert server.requests[0].body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_concurrent_calls_from_threads_each_get_their_own_reply(provider: str) -> None:
    def echo(body: dict[str, Any]) -> str:
        return "echo: " + last_user_text(body)

    calls = 12
    with WireServer(responder=echo, latency_s=0.4) as wire:
        model = make_model(provider, wire)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=calls) as pool:
            texts = list(
                pool.map(
                    lambda i: (
                        model.complete(
                            [Message("user", f"question {i}")], on_text=lambda _: None
                        ).text
                    ),
                    range(calls),
                )
            )
        elapsed = time.monotonic() - started
    assert texts == [f"echo: question {i}" for i in range(calls)]
    assert elapsed < calls * 0.4 / 3  # they overlapped: far less than one after another
    assert len(wire.requests) == calls


def test_a_rate_limit_seen_by_one_thread_holds_back_the_others(server: WireServer) -> None:
    server.responder = lambda body: "ok"
    server.inject(Fault.rate_limit(0.6))
    shared = Backoff(base_s=5.0)
    first = make_model("openai", server, backoff=shared)
    second = make_model("anthropic", server, backoff=shared)
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(first.complete(HI)))
    worker.start()
    while not server.requests:
        time.sleep(0.01)
    time.sleep(0.05)  # the first thread has seen its 429 and paused everyone
    second.complete(HI)
    worker.join()
    rate_limited = server.requests[0]
    assert rate_limited.status == 429
    later = server.requests[1:]
    assert len(later) == 2
    assert min(r.ts for r in later) - rate_limited.ts >= 0.6
    assert results[0].retries == 1 and shared.pauses == 1


def test_retry_after_is_read_in_each_of_its_forms() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    in_30s = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 28 <= (parse_retry_after({"retry-after": in_30s}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_grows_with_jitter_and_never_waits_less_than_retry_after() -> None:
    backoff = Backoff(base_s=0.5, cap_s=4.0, seed=1)
    delays = [backoff.delay(n) for n in range(6)]
    for n, delay in enumerate(delays):
        ceiling = min(4.0, 0.5 * 2**n)
        assert ceiling / 2 <= delay <= ceiling
    assert len({round(d, 6) for d in delays}) == len(delays)  # jittered, not fixed
    assert all(3.0 <= backoff.delay(0, retry_after=3.0) <= 3.3 for _ in range(20))


def test_prices_cover_snapshots_of_a_name_but_never_guess_from_a_similar_one() -> None:
    table = PriceTable.load()
    assert table.lookup("gpt-4o-mini-2024-07-18").prefix == "gpt-4o-mini"
    assert table.lookup("gpt-4o-2024-08-06").prefix == "gpt-4o"
    assert table.lookup("gpt-4-0613").prefix == "gpt-4"
    assert table.lookup("claude-opus-4-5-20251101").price == Price(5.0, 25.0, 0.5, 6.25)
    assert table.lookup("claude-opus-4-20250514").price.input == 15.0
    assert table.lookup("anthropic:claude-sonnet-4-5").prefix == "claude-sonnet-4-5"
    assert table.lookup("openai/gpt-4o").prefix == "gpt-4o"
    assert table.lookup("claude-3-7-sonnet-latest").known
    # A newer model or a variant is another price: unknown rather than mispriced.
    for name in ("claude-opus-4-7", "gpt-4o-audio-preview", "my-local-llama"):
        unknown = table.lookup(name)
        assert not unknown.known and unknown.cost(make_usage(1000, 1000)) == 0.0


def make_usage(prompt: int, output: int) -> Any:
    from conductor_kernel.interfaces import Usage

    return Usage(input_tokens=prompt, output_tokens=output)


@pytest.mark.parametrize("suffix", ["toml", "json"])
def test_a_user_price_file_overrides_and_extends_the_table(
    suffix: str, isolated_home: Path, server: WireServer
) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    path = isolated_home / f"prices.{suffix}"
    if suffix == "toml":
        path.write_text(
            '[models."gpt-4o"]\ninput = 1.0\noutput = 2.0\n\n'
            '[models."my-llama*"]\ninput = 0.5\noutput = 0.5\n'
        )
    else:
        path.write_text(
            '{"models": {"gpt-4o": {"input": 1.0, "output": 2.0},'
            ' "my-llama*": {"input": 0.5, "output": 0.5}}}'
        )
    table = PriceTable.load()
    assert table.lookup("gpt-4o").price == Price(1.0, 2.0, 1.0, 1.0)
    assert table.lookup("gpt-4o").source == str(path)
    assert table.lookup("gpt-4o-mini").price.input == 0.15  # a longer built-in prefix stays
    assert table.lookup("my-llama-3-8b").known
    server.add("priced by the file")
    completion = make_model("openai", server, model="my-llama-3-8b").complete(HI)
    u = completion.usage
    assert u.cost_usd == pytest.approx((u.input_tokens + u.output_tokens) * 0.5 / 1e6)


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (
            '[models."gpt-4o"]\ninput = "cheap"\noutput = 1\n',
            'models."gpt-4o".input must be a number',
        ),
        ('[models."gpt-4o"]\ninput = 1\n', "lacks output"),
        ('[models."gpt-4o"]\ninput = 1\noutput = 1\nextra = 2\n', "unknown keys ['extra']"),
        ("[prices]\n", 'expected a "models" table'),
        ("models = [", "is not valid TOML"),
    ],
)
def test_a_broken_price_file_says_where_and_what(
    content: str, complaint: str, isolated_home: Path
) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "prices.toml").write_text(content)
    with pytest.raises(ConfigError) as err:
        PriceTable.load()
    assert complaint in str(err.value) and "prices.toml" in str(err.value)


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
def test_a_truncated_plain_body_is_retried(provider: str, server: WireServer) -> None:
    # A non-streamed call (as the notebook's learning calls are): the server promises a
    # whole JSON body, sends half of it and hangs up.
    server.inject(Fault.disconnect())
    server.add("whole reply")
    completion = make_model(provider, server).complete(HI)
    assert (completion.text, completion.retries) == ("whole reply", 1)
    assert server.requests[0].fault == "disconnect" and not server.requests[0].body.get("stream")
