"""The served model ids, a request's limits and its conversation, the origins and hosts
an operator allows, and the connections the open-file limit holds, over generated input."""

from __future__ import annotations

import math
import resource

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.methods import METHODS
from conductor.serve.connections import FILES_BESIDES, ConnectionLimits, fit_open_files
from conductor.serve.conversation import BadConversation, question_from
from conductor.serve.limits import LOWERABLE, BadLimit, lowered, requested_limits
from conductor.serve.names import UnknownServedModel, resolve, served_ids
from conductor.serve.server import access_for, check_binding, loopback_only
from conductor_kernel.errors import UserFacingError
from conductor_kernel.limits.run_config import RunConfig

specs = st.sampled_from(["demo", "openai:qwen", "openai:smollm2@http://127.0.0.1:8080/v1"])
model_sets = st.lists(specs, min_size=1, max_size=3, unique=True).map(tuple)


@given(model_sets)
def test_every_listed_id_means_its_method_and_model(models: tuple[str, ...]) -> None:
    listed = served_ids(models)
    assert len(listed) == len(METHODS) * len(models)
    for served in listed:
        assert resolve(served.id, models) == served


@given(model_sets, st.sampled_from(METHODS))
def test_a_bare_method_takes_the_first_served_model(models: tuple[str, ...], method: str) -> None:
    assert resolve(f"conductor:{method}", models).model == models[0]


@settings(max_examples=40)
@given(model_sets, st.text(max_size=40))
def test_an_id_not_listed_is_refused(models: tuple[str, ...], model_id: str) -> None:
    if model_id in {served.id for served in served_ids(models)}:
        return
    if model_id.startswith("conductor:") and model_id.removeprefix("conductor:") in METHODS:
        return  # the bare form, served by the first model
    with pytest.raises(UnknownServedModel, match="GET /v1/models"):
        resolve(model_id, models)


def test_a_model_outside_those_served_is_refused_even_with_a_known_method() -> None:
    with pytest.raises(UnknownServedModel):
        resolve("conductor:meta@openai:x@http://attacker.example/v1", ("demo",))


configs = st.builds(
    RunConfig,
    max_rounds=st.integers(1, 1000),
    max_tokens=st.none() | st.integers(1, 10**7),
    max_cost_usd=st.none() | st.floats(0.001, 100),
    max_wall_s=st.none() | st.floats(0.1, 3600),
)
asked_values = st.fixed_dictionaries(
    {},
    optional={
        "max_rounds": st.integers(1, 5000),
        "max_tokens": st.integers(1, 10**8),
        "max_cost_usd": st.floats(0.0001, 1000),
        "max_wall_s": st.floats(0.01, 10**5),
    },
)


@given(configs, asked_values)
def test_a_request_lowers_limits_and_never_raises_them(config: RunConfig, asked: dict) -> None:
    effective = lowered(config, requested_limits({"conductor": asked}))
    for name in LOWERABLE:
        configured, got = getattr(config, name), getattr(effective, name)
        if configured is not None:
            assert got <= configured
        if name in asked:
            assert got <= asked[name]
            assert got == (asked[name] if configured is None else min(configured, asked[name]))
        else:
            assert got == configured
    assert effective.python == config.python  # nothing else changes


@given(st.integers(1, 10**6), st.integers(1, 10**6))
def test_openai_max_tokens_lowers_the_run_budget(max_tokens: int, completion: int) -> None:
    asked = requested_limits({"max_tokens": max_tokens, "max_completion_tokens": completion})
    assert asked == {"max_tokens": min(max_tokens, completion)}


@given(
    st.sampled_from(sorted(LOWERABLE)),
    st.one_of(
        st.integers(max_value=0),
        st.floats(max_value=0),
        st.just(math.inf),
        st.just(math.nan),
        st.text(),
        st.booleans(),
        st.none(),
    ),
)
def test_a_bad_limit_is_refused_by_name(name: str, value: object) -> None:
    with pytest.raises(BadLimit, match=name):
        requested_limits({"conductor": {name: value}})


def test_an_unknown_limit_is_refused_with_those_allowed() -> None:
    with pytest.raises(BadLimit, match="max_rounds"):
        requested_limits({"conductor": {"python": True}})


@given(st.text(min_size=1).filter(str.strip))
def test_one_user_message_is_the_question_exactly(text: str) -> None:
    assert question_from([{"role": "user", "content": text}]) == text


@given(
    st.lists(
        st.tuples(st.sampled_from(["user", "assistant"]), st.text(min_size=1, max_size=30)),
        max_size=4,
    ),
    st.text(min_size=1, max_size=30).filter(str.strip),
    st.text(max_size=30),
)
def test_a_conversation_keeps_every_turn_and_ends_with_the_question(
    earlier: list[tuple[str, str]], last: str, system: str
) -> None:
    messages = [{"role": "system", "content": system}] if system else []
    messages += [{"role": role, "content": [{"type": "text", "text": t}]} for role, t in earlier]
    messages.append({"role": "user", "content": last})
    question = question_from(messages)
    assert question.endswith(last)
    position = 0
    for _, text in earlier:
        found = question.find(text, position)
        assert found >= 0  # every turn, in order
        position = found + len(text)
    if system:
        assert system in question


@pytest.mark.parametrize(
    "messages",
    [
        [],
        "hello",
        [{"role": "assistant", "content": "hi"}],
        [{"role": "user", "content": "  "}],
        [{"role": "wizard", "content": "x"}],
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
    ],
)
def test_messages_that_are_no_question_are_refused(messages: object) -> None:
    with pytest.raises(BadConversation):
        question_from(messages)


@given(st.ip_addresses())
def test_only_a_loopback_address_serves_without_a_key(address: object) -> None:
    host = str(address)
    if address.is_loopback:  # type: ignore[attr-defined]
        check_binding(host, None)
    else:
        with pytest.raises(UserFacingError, match="API key"):
            check_binding(host, None)
    check_binding(host, "a-key")  # with a key any address will do


def test_serving_beyond_loopback_without_a_key_is_refused_before_binding(capsys) -> None:
    from conductor.cli import main

    assert main(["serve", "--host", "0.0.0.0", "--no-api-key", "--model", "demo"]) == 2
    assert "API key" in capsys.readouterr().err
    assert not loopback_only("example.com")  # a name may resolve anywhere


def test_serving_on_every_address_needs_the_names_clients_use(capsys) -> None:
    from conductor.cli import main

    assert main(["serve", "--host", "0.0.0.0", "--model", "demo"]) == 2
    assert "--allowed-host" in capsys.readouterr().err


@given(
    st.integers(64, 10**6) | st.just(resource.RLIM_INFINITY),
    st.integers(64, 10**6) | st.just(resource.RLIM_INFINITY),
    st.integers(1, 10**5),
)
def test_connections_fit_the_open_file_limit_never_past_its_hard_limit(
    soft: int, hard: int, connections: int
) -> None:
    if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
        soft = hard
    set_to: list[tuple[int, int]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(resource, "getrlimit", lambda _: (soft, hard))
        patch.setattr(resource, "setrlimit", lambda _, limits: set_to.append(limits))
        fitted = fit_open_files(ConnectionLimits(max_connections=connections))
    now = set_to[-1][0] if set_to else soft
    assert all(limit_hard == hard for _, limit_hard in set_to)  # the hard limit is kept
    assert all(hard == resource.RLIM_INFINITY or new <= hard for new, _ in set_to)
    assert 1 <= fitted.max_connections <= connections
    if now == resource.RLIM_INFINITY or now - FILES_BESIDES >= connections:
        assert fitted.max_connections == connections  # room enough: nothing taken
    else:
        assert fitted.max_connections == max(now - FILES_BESIDES, 1)


good_origins = st.tuples(
    st.sampled_from(["http", "https", "HTTP"]),
    st.from_regex(r"[a-z0-9][a-z0-9.-]{0,20}", fullmatch=True),
    st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")),
).map(lambda t: f"{t[0]}://{t[1]}{t[2]}")


@given(good_origins, st.booleans())
def test_an_allowed_origin_is_kept_as_a_browser_sends_it(origin: str, slash: bool) -> None:
    access = access_for("127.0.0.1", "k", allowed_origins=[origin + ("/" if slash else "")])
    assert access.origins == {origin.lower()}


@given(
    st.one_of(
        good_origins.map(lambda o: o + "/path"),
        st.from_regex(r"[a-z0-9.]{1,20}(:[0-9]{1,5})?", fullmatch=True),  # no scheme
        st.sampled_from(["*", "null", "ftp://example.org", "http://", "file:///tmp"]),
    )
)
def test_anything_but_an_origin_is_refused_as_one(value: str) -> None:
    with pytest.raises(UserFacingError, match="--allowed-origin"):
        access_for("127.0.0.1", "k", allowed_origins=[value])


@given(st.sampled_from(["0.0.0.0", "::"]), st.lists(st.sampled_from(["a.example", "*"])))
def test_every_address_serves_only_the_names_listed(host: str, listed: list[str]) -> None:
    if not listed:
        with pytest.raises(UserFacingError, match="--allowed-host"):
            access_for(host, "k")
        return
    assert access_for(host, "k", allowed_hosts=listed).hosts == set(listed)
