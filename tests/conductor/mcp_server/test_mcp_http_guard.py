"""`conductor mcp --http`'s app in process, behind the guard `serve` has: over the same
generated Host, Origin, Content-Type and Authorization values as
tests/conductor/serve/test_serve_guard.py, an MCP session opens only when each is one
the operator allowed."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from starlette.testclient import TestClient

from conductor.config import load_settings
from conductor.mcp_server.http import PATH, http_app
from conductor.mcp_server.server import create_server
from conductor.serve.guard import Access
from equipment.guard_cases import ALL_ALLOWED, KEY, PAGE, Case, cases

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "guard-test", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def mcp_clients() -> Iterator[dict[bool, TestClient]]:
    """One MCP app each way the operator may choose about PAGE, running for the module."""
    clients = {}
    for page_allowed in (False, True):
        access = Access(api_key=KEY, origins=frozenset({PAGE}) if page_allowed else frozenset())
        app = http_app(create_server(load_settings({"recall": False, "learn": False})), access)
        clients[page_allowed] = TestClient(app, base_url="http://127.0.0.1:8000")
    with clients[False], clients[True]:
        yield clients


@settings(max_examples=60)
@given(cases().filter(lambda case: case.post))
@example(ALL_ALLOWED)
def test_an_mcp_session_opens_only_for_what_the_operator_allowed(
    mcp_clients: dict[bool, TestClient], case: Case
) -> None:
    headers = {**case.headers(), "accept": "application/json, text/event-stream"}
    reply = mcp_clients[case.page_allowed].post(
        PATH, content=json.dumps(INITIALIZE), headers=headers
    )
    refused = case.expected()
    if refused is not None:
        assert reply.status_code == refused, reply.text
        assert reply.json()["error"]["message"]
        assert "mcp-session-id" not in reply.headers  # no session was opened
    else:
        assert reply.status_code == 200, reply.text
        assert reply.headers["mcp-session-id"]
        assert "conductor" in reply.text  # the server's own initialize result


def test_json_nested_100000_deep_is_a_json_400(mcp_clients: dict[bool, TestClient]) -> None:
    headers = {
        "host": "127.0.0.1:8000",
        "authorization": f"Bearer {KEY}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    reply = mcp_clients[False].post(PATH, content="[" * 100_000, headers=headers)
    assert reply.status_code == 400 and reply.json()["error"]["message"]
