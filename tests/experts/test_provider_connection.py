"""A provider that cannot be reached or refuses the key: a wrong key, no key for the
official endpoint, a server that is not running, a host that does not resolve. Each
error names what to check, and what cannot succeed is not retried.
"""

from __future__ import annotations

import pytest
from provider_models import HI, PROVIDERS, make_model

from conductor_kernel.errors import ModelUnreachable
from conductor_kernel.interfaces import ModelError
from equipment.wire_server import WireServer
from experts.anthropic_model import AnthropicModel
from experts.openai_model import OpenAIModel
from experts.retry import Backoff, Failure, explain_unreachable


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
