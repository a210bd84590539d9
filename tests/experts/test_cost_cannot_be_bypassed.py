"""Cost that cannot be bypassed: prices are finite, estimates are priced, and a call that
fails part-way is charged for what it streamed.

Prices are generated (any finite value is accepted, any non-finite or negative one is
refused naming the file and the line); cut points are generated too: wherever the
wire server cuts, stalls or breaks a stream after the server began answering, the
failed call's usage reaches the run's ledger, estimated, marked so, and priced.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_models import HI, PROVIDERS, make_model

from conductor.session import Session
from conductor_kernel.errors import ConfigError
from conductor_kernel.interfaces import ModelError, Usage
from conductor_kernel.limits.ledger import UsageLedger, spent_on
from conductor_kernel.limits.run_config import RunConfig
from equipment.wire_server import Fault, WireServer
from experts.pricing import Price, read_override_file
from record.reader import read_transcript

LONG = "Let me think about this carefully, one step at a time. " * 12
NOT_FINITE = {"toml": ["nan", "inf", "-inf", "+nan", "+inf"], "json": ["NaN", "Infinity"]}


def price_file(tmp_path: Path, suffix: str, entries: list[tuple[str, str, str]]) -> Path:
    """A prices file whose entries are (model, input, output) written as given."""
    path = tmp_path / f"prices.{suffix}"
    if suffix == "toml":
        text = "".join(f'[models."{m}"]\ninput = {i}\noutput = {o}\n\n' for m, i, o in entries)
    else:
        body = ",\n".join(
            f'  "{m}": {{\n    "input": {i},\n    "output": {o}\n  }}' for m, i, o in entries
        )
        text = '{"models": {\n' + body + "\n}}\n"
    path.write_text(text)
    return path


FINITE = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
NAMES = st.lists(
    st.from_regex(r"[a-z][a-z0-9-]{2,12}", fullmatch=True), min_size=1, max_size=5, unique=True
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    suffix=st.sampled_from(["toml", "json"]),
    names=NAMES,
    data=st.data(),
)
def test_a_price_that_is_not_a_finite_number_is_refused_with_file_and_line(
    suffix: str, names: list[str], data: st.DataObject, tmp_path: Path
) -> None:
    bad_at = data.draw(st.integers(0, len(names) - 1), label="bad entry")
    field = data.draw(st.sampled_from(["input", "output"]), label="bad field")
    bad = data.draw(
        st.sampled_from(NOT_FINITE[suffix]) | st.sampled_from(["-1", "-0.5", "-1e9"]),
        label="bad value",
    )
    entries = []
    for n, name in enumerate(names):
        i, o = repr(data.draw(FINITE)), repr(data.draw(FINITE))
        if n == bad_at:
            i, o = (bad, o) if field == "input" else (i, bad)
        entries.append((name, i, o))
    path = price_file(tmp_path, suffix, entries)
    with pytest.raises(ConfigError) as err:
        read_override_file(path)
    message = str(err.value)
    lines = path.read_text().splitlines()
    line = next(
        n
        for n, text in enumerate(lines, 1)
        if n > next(k for k, t in enumerate(lines, 1) if f'"{names[bad_at]}"' in t)
        and field in text
    )
    assert str(path) in message and f"line {line}" in message
    assert f'"{names[bad_at]}".{field}' in message and "finite number >= 0" in message


@settings(max_examples=60, deadline=None)
@given(
    price=st.builds(Price, FINITE, FINITE, FINITE, FINITE),
    prompt=st.integers(0, 10**7),
    output=st.integers(0, 10**7),
)
def test_estimated_tokens_are_priced_as_measured_ones_and_cost_is_finite(
    price: Price, prompt: int, output: int
) -> None:
    measured = Usage(input_tokens=prompt, output_tokens=output, calls=1)
    estimated = Usage(
        calls=1,
        estimated_calls=1,
        estimated_tokens=prompt + output,
        estimated_output_tokens=output,
    )
    cost = price.cost(estimated)
    assert math.isfinite(cost) and cost >= 0
    assert cost == pytest.approx(price.cost(measured), rel=1e-9, abs=1e-12)


def spend_of_a_cut_call(provider: str, server: WireServer, fault: Fault) -> tuple[Any, Usage]:
    """Make one streamed call that meets `fault`; returns its error and what the
    ledger recorded for it."""
    ledger = UsageLedger()
    model = ledger.metered(make_model(provider, server, timeout=0.5, max_retries=0), "meta")
    server.inject(fault)
    with pytest.raises(ModelError) as err:
        model.complete(HI, on_text=lambda _: None)
    return err.value, ledger.total()


@pytest.mark.parametrize("provider", PROVIDERS)
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=4, max_value=14),
    how=st.sampled_from(["reset", "error event", "stall"]),
)
def test_a_call_broken_after_streamed_text_is_charged_estimated_and_priced(
    provider: str, cut: int, how: str, server: WireServer
) -> None:
    fault = {
        "reset": Fault(200, cut_after=cut, text=LONG),
        "error event": Fault(200, cut_after=cut, stream_error="overloaded_error", text=LONG),
        "stall": Fault(200, cut_after=cut, stall_s=1.0, text=LONG),
    }[how]
    error, recorded = spend_of_a_cut_call(provider, server, fault)
    spent = spent_on(error)
    assert spent is not None and spent == recorded
    assert recorded.calls == 1 and recorded.estimated_calls == 1  # marked estimated
    assert recorded.estimated_output_tokens > 0  # the streamed text counted
    assert recorded.cost_usd > 0 and math.isfinite(recorded.cost_usd)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_more_was_streamed_the_more_a_broken_call_costs(
    provider: str, server: WireServer
) -> None:
    costs = []
    for cut in (4, 8, 16):
        _, recorded = spend_of_a_cut_call(provider, server, Fault(200, cut_after=cut, text=LONG))
        costs.append(recorded.cost_usd)
    assert costs == sorted(costs) and costs[0] < costs[-1]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retried_attempts_that_began_streaming_are_added_to_the_call(
    provider: str, server: WireServer
) -> None:
    # Two streams that end before saying how (no text: retried), then the reply.
    server.inject(Fault.ends_early(after_events=1), Fault.ends_early(after_events=1))
    server.add("the answer", "the answer")
    model = make_model(provider, server, max_retries=3)
    completion = model.complete(HI, on_text=lambda _: None)
    alone = make_model(provider, server).complete(HI, on_text=lambda _: None)
    assert completion.retries == 2 and completion.usage.calls == 1
    usage = completion.usage
    # Anthropic reports the prompt's tokens as the stream starts: measured. The OpenAI
    # format reports usage last: the failed attempts' prompts are estimated.
    assert usage.known is (provider == "anthropic")
    assert usage.tokens_for_limits > alone.usage.tokens_for_limits
    assert usage.cost_usd > alone.usage.cost_usd


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_run_stopped_by_max_cost_mid_stream_records_its_cost(
    provider: str, tmp_path: Path
) -> None:
    with WireServer(chunk_chars=8) as server:
        server.add(LONG * 4)
        session = Session(
            meta_model=make_model(provider, server),
            config=RunConfig(python=False, parallel_experts=False, max_cost_usd=0.002),
            runs_path=tmp_path,
        )
        events = list(session.solve("What is 6 times 7?"))
    finished = [e for e in events if e.kind == "run_finished"][-1]
    transcript = read_transcript(tmp_path / f"{finished.run_id}.jsonl")
    assert any(e.kind == "limit_hit" and e.limit == "cost" for e in transcript.events)
    usage = transcript.finished.usage
    assert usage.estimated_calls >= 1 and usage.cost_usd > 0
