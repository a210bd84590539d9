"""The guard in front of `conductor serve` and `conductor mcp --http`, in process: over
generated Host, Origin, Content-Type and Authorization values, a request goes through
only when each is one the operator allowed, and a refused one starts no run (counted
at the session factory) and opens no MCP session."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from conductor.config import load_settings
from conductor.serve.app import ServeOptions, create_app
from conductor.serve.guard import Access
from conductor.serve.limits import SERVED_MAX_COST_USD, SERVED_MAX_TOKENS
from equipment.guard_cases import ALL_ALLOWED, KEY, PAGE, Case, cases, origins_foreign

CHAT = {"model": "conductor:standard@demo", "messages": [{"role": "user", "content": "2 + 3?"}]}


class CountingFactory:
    """The session factory seam: counts the runs asked for and starts none."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    def __call__(self, settings: Any, method: str) -> Any:
        self.asked.append(settings)
        raise RuntimeError("counted, not started")


def serve_client(factory: CountingFactory, **access: Any) -> TestClient:
    options = ServeOptions(
        settings=load_settings({"recall": False, "learn": False}),
        models=("demo",),
        access=Access(**{"api_key": KEY, **access}),
        factory=factory,
        max_concurrent=10_000,
    )
    return TestClient(create_app(options), base_url="http://127.0.0.1:8000")


# One server each way the operator may choose, made once: a generated case is a request.
SERVERS: dict[bool, tuple[TestClient, CountingFactory]] = {}


def server_for(page_allowed: bool) -> tuple[TestClient, CountingFactory]:
    if page_allowed not in SERVERS:
        factory = CountingFactory()
        origins = frozenset({PAGE}) if page_allowed else frozenset()
        SERVERS[page_allowed] = serve_client(factory, origins=origins), factory
    client, factory = SERVERS[page_allowed]
    factory.asked.clear()
    return client, factory


@settings(max_examples=100)
@given(cases())
@example(ALL_ALLOWED)
def test_serve_lets_through_only_what_the_operator_allowed(case: Case) -> None:
    client, factory = server_for(case.page_allowed)
    if case.post:
        reply = client.post(
            "/v1/chat/completions", content=json.dumps(CHAT), headers=case.headers()
        )
    else:
        reply = client.get("/v1/models", headers=case.headers())
    refused = case.expected()
    if refused is not None:
        assert reply.status_code == refused, reply.text
        assert reply.json()["error"]["message"]  # a JSON error that says why
        assert factory.asked == []  # no run was asked for
    elif case.post:
        assert "could not start" in reply.json()["error"]["message"]
        assert len(factory.asked) == 1  # the one run, asked for once
    else:
        assert reply.status_code == 200 and reply.json()["data"]
    # A browser page reads a reply only with CORS headers, given to the allowed origin alone.
    shown_to = reply.headers.get("access-control-allow-origin")
    assert shown_to == (PAGE if case.origin.value == PAGE and case.page_allowed else None)


@settings(max_examples=25)
@given(st.sampled_from(["POST", "GET", "DELETE"]), origins_foreign)
def test_only_an_allowed_origin_gets_its_preflight_answered(method: str, other: str) -> None:
    asking = {"access-control-request-method": method, "host": "127.0.0.1:8000"}
    client, factory = server_for(page_allowed=True)
    allowed = client.options("/v1/chat/completions", headers={**asking, "origin": PAGE})
    foreign = client.options("/v1/chat/completions", headers={**asking, "origin": other})
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-origin"] == PAGE
    assert "authorization" in allowed.headers["access-control-allow-headers"]
    assert foreign.status_code == 403 and "access-control-allow-origin" not in foreign.headers
    assert factory.asked == []


def test_a_server_made_with_no_access_given_asks_a_key_of_its_own() -> None:
    factory = CountingFactory()
    options = ServeOptions(settings=load_settings({}), models=("demo",), factory=factory)
    assert (
        options.access.api_key
        and options.access.api_key
        != ServeOptions(settings=options.settings, models=("demo",)).access.api_key
    )  # made fresh, never a constant
    with TestClient(create_app(options), base_url="http://127.0.0.1:8000") as client:
        refused = client.post("/v1/chat/completions", json=CHAT)
        let_in = client.post(
            "/v1/chat/completions",
            json=CHAT,
            headers={"authorization": f"Bearer {options.access.api_key}"},
        )
    assert refused.status_code == 401 and let_in.status_code == 500
    assert len(factory.asked) == 1


@settings(max_examples=30)
@given(st.integers(1, 3 * 1024), st.integers(1, 2048), st.booleans())
def test_a_body_over_the_cap_is_refused_before_the_application_reads_it(
    size: int, cap: int, declared: bool
) -> None:
    factory = CountingFactory()
    body = json.dumps({**CHAT, "pad": "x" * size}).encode()
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}

    def chunks() -> Iterator[bytes]:  # sent chunked: no length declared up front
        yield from (body[i : i + 100] for i in range(0, len(body), 100))

    with serve_client(factory, max_body_bytes=cap) as client:
        reply = client.post(
            "/v1/chat/completions", content=body if declared else chunks(), headers=headers
        )
    if len(body) > cap:
        assert reply.status_code == 413 and reply.headers["connection"] == "close"
        assert factory.asked == []
    else:
        assert len(factory.asked) == 1


@settings(max_examples=20)
@given(st.integers(1, 400), st.integers(1, 400))
def test_a_question_over_the_cap_starts_no_run(length: int, cap: int) -> None:
    factory = CountingFactory()
    options = ServeOptions(
        settings=load_settings({"recall": False, "learn": False}),
        models=("demo",),
        access=Access(api_key=None),
        factory=factory,
        max_question_chars=cap,
    )
    chat = {**CHAT, "messages": [{"role": "user", "content": "q" * length}]}
    with TestClient(create_app(options), base_url="http://127.0.0.1:8000") as client:
        reply = client.post("/v1/chat/completions", json=chat)
    if length > cap:
        assert (
            reply.status_code == 400 and "--max-question-chars" in reply.json()["error"]["message"]
        )
        assert factory.asked == []
    else:
        assert len(factory.asked) == 1


@settings(max_examples=20)
@given(
    st.none() | st.integers(1, 10**7),
    st.none() | st.floats(0.01, 100),
    st.none() | st.integers(1, 10**7),
)
def test_a_served_run_has_a_token_and_cost_cap_unless_the_operator_set_one(
    tokens: int | None, dollars: float | None, asked: int | None
) -> None:
    factory = CountingFactory()
    run = {"max_tokens": tokens, "max_cost_usd": dollars}
    options = ServeOptions(
        settings=load_settings({"recall": False, "learn": False, "run": run}),
        models=("demo",),
        access=Access(api_key=None),
        factory=factory,
    )
    chat = CHAT if asked is None else {**CHAT, "max_tokens": asked}
    with TestClient(create_app(options), base_url="http://127.0.0.1:8000") as client:
        client.post("/v1/chat/completions", json=chat)
    (given_run,) = [settings.run for settings in factory.asked]
    configured = SERVED_MAX_TOKENS if tokens is None else tokens
    assert given_run.max_tokens == (configured if asked is None else min(configured, asked))
    assert given_run.max_cost_usd == (SERVED_MAX_COST_USD if dollars is None else dollars)


@pytest.mark.parametrize("depth", [33, 1_000, 100_000])
def test_json_nested_past_the_limit_is_a_json_400(depth: int) -> None:
    factory = CountingFactory()
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    nested = '{"model": "conductor:standard@demo", "messages": ' + "[" * depth + "]" * depth + "}"
    with serve_client(factory) as client:
        reply = client.post("/v1/chat/completions", content=nested, headers=headers)
    assert reply.status_code == 400 and "nested" in reply.json()["error"]["message"]
    assert factory.asked == []
