"""No field of a `conductor serve` request chooses where the operator's key is sent:
requests carrying model specs and URLs that name a listening port, in `model` and in
every other field, never connect to it; a model not served is refused before any
session is built; a served one runs with the operator's models alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from conductor.config import load_settings
from conductor.serve.app import ServeOptions, create_app
from conductor.serve.guard import Access
from conductor.serve.runs import default_factory
from equipment.counting_listener import CountingListener
from equipment.hostile_specs import model_ids_to, specs_to, urls_to

OFFERED = ("demo",)
SERVED = "conductor:meta-no-python@demo"
QUIET = {"recall": False, "learn": False}

# One listener for the module: the port every generated spec and URL names.
_LISTENER = CountingListener()

KEY = "test-key"
AUTHORIZED = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module", autouse=True)
def listener() -> Iterator[CountingListener]:
    with _LISTENER:
        yield _LISTENER


class Spy:
    """The real build path (`default_factory`), noting the settings of each session."""

    def __init__(self) -> None:
        self.built: list[tuple[str, str, str]] = []

    def __call__(self, chosen: Any, method: str) -> Any:
        self.built.append((chosen.model, chosen.expert_model, method))
        return default_factory(chosen, method)


anywhere = urls_to(_LISTENER.port) | specs_to(_LISTENER.port, OFFERED)
bodies = st.fixed_dictionaries(
    {
        "model": model_ids_to(_LISTENER.port, OFFERED) | st.just(SERVED),
        "messages": st.builds(
            lambda system, name, url: [
                {"role": "system", "content": system},
                {"role": "user", "content": f"Use 4 7 8 8 to make 24 ({url})", "name": name},
            ],
            anywhere,
            anywhere,
            anywhere,
        ),
    },
    optional={
        "expert_model": anywhere,
        "base_url": anywhere,
        "api_base": anywhere,
        "user": anywhere,
        "metadata": st.dictionaries(st.sampled_from(["model", "base_url"]), anywhere),
        "extra_body": st.dictionaries(st.sampled_from(["model", "expert_model"]), anywhere),
        "stream_options": st.fixed_dictionaries({"include_usage": st.booleans(), "url": anywhere}),
        "conductor": st.dictionaries(
            st.sampled_from(["model", "expert_model", "max_rounds"]), anywhere, max_size=1
        ),
    },
)


@pytest.mark.slow
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_no_request_field_reaches_a_host_of_the_clients_choosing(
    listener: CountingListener, body: dict[str, Any]
) -> None:
    spy = Spy()
    options = ServeOptions(
        settings=load_settings(QUIET),
        models=OFFERED,
        quiet_s=0.2,
        factory=spy,
        access=Access(api_key=KEY),
    )
    with TestClient(create_app(options), base_url="http://127.0.0.1:8000") as client:
        response = client.post("/v1/chat/completions", json=body, headers=AUTHORIZED)
    assert listener.connections() == 0, (body, response.text)
    if body["model"] != SERVED:
        assert response.status_code == 404, response.text
        message = response.json()["error"]["message"]
        assert "is not served here" in message and "demo" in message
        assert spy.built == []  # refused before any session was built
        return
    # A served model: only the operator's models, whatever else the request said.
    assert all(built == ("demo", "", "meta-no-python") for built in spy.built)
    if response.status_code == 200:
        assert spy.built and response.json()["model"] == SERVED
    else:  # refused for another field, still before a session was built
        assert response.status_code == 400 and spy.built == [], response.text
