"""Usage and cost: cache reads and writes counted and priced for each provider, the price
table (snapshots of a name, never a guess from a similar one), and a user's price file
that overrides it or says where and what is wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from provider_models import HI, make_model

from conductor_kernel.errors import ConfigError
from conductor_kernel.interfaces import Message
from equipment.wire_server import WireServer
from experts.pricing import Price, PriceTable


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
            'models."gpt-4o".input must be a finite number',
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
