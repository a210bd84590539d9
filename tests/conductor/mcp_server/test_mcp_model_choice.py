"""`conductor mcp`'s `solve` never chooses where the operator's key is sent: a model spec
or URL naming a listening port, in `model` or any other argument, through the tool's
function or the official client in-process, never connects to it; a model not offered
is refused, naming those offered, before any session is built; an offered one runs with
the operator's models alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from mcp import Client

import conductor.session
from conductor.cli import main
from conductor.config import load_settings
from conductor.config.offered import UnofferedModel
from conductor.mcp_server import tools
from conductor.mcp_server.server import create_server
from conductor_kernel.errors import UserFacingError
from equipment.counting_listener import CountingListener
from equipment.hostile_specs import specs_to, urls_to

OFFERED = ("demo",)
QUIET = {"recall": False, "learn": False}
NO_SANDBOX = ["meta-no-python", "standard", "zero-shot-cot", "expert-static", "multipersona"]

_LISTENER = CountingListener()
hostile = specs_to(_LISTENER.port, OFFERED)
anywhere = urls_to(_LISTENER.port) | hostile
questions = st.builds("Use 4 7 8 8 to make 24 ({})".format, anywhere)


@pytest.fixture(scope="module", autouse=True)
def listener() -> Iterator[CountingListener]:
    with _LISTENER:
        yield _LISTENER


class Spy:
    """`build_session` as it is, noting the models of each session it builds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.built: list[tuple[str, str]] = []
        real = conductor.session.build_session

        def build(chosen: Any, **options: Any) -> Any:
            self.built.append((chosen.model, chosen.expert_model))
            return real(chosen, **options)

        monkeypatch.setattr(conductor.session, "build_session", build)


@pytest.mark.slow
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    question=questions,
    method=st.sampled_from([None, *NO_SANDBOX]) | anywhere,
    model=st.sampled_from([None, "", "demo"]) | hostile,
)
def test_solve_never_reaches_a_host_of_the_callers_choosing(
    listener: CountingListener, question: str, method: str | None, model: str | None
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        spy = Spy(patch)
        try:
            solved = tools.solve(
                question,
                method=method,
                model=model,
                settings=load_settings(QUIET),
                models=OFFERED,
            )
        except UnofferedModel as refused:
            assert model not in (None, "", "demo")
            assert "not offered here" in str(refused) and "demo" in str(refused)
            solved = None
        except UserFacingError as refused:
            assert method is not None and method not in NO_SANDBOX, refused
            solved = None
    assert listener.connections() == 0, (question, method, model)
    if solved is None:
        assert spy.built == []  # refused before any session was built
    else:
        assert spy.built == [("demo", "")] and solved["model"] == "demo"


extra_arguments = st.fixed_dictionaries(
    {},
    optional={key: anywhere for key in ("expert_model", "base_url", "api_base", "url", "endpoint")}
    | {"settings": st.fixed_dictionaries({"model": anywhere, "expert_model": anywhere})},
)


@pytest.mark.slow
@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    question=questions,
    model=st.just("demo") | hostile,
    extra=extra_arguments,
)
def test_the_official_client_cannot_name_a_host_either(
    listener: CountingListener, question: str, model: str, extra: dict[str, Any]
) -> None:
    async def call() -> Any:
        server = create_server(load_settings(QUIET), models=OFFERED)
        arguments = {"question": question, "method": "standard", "model": model, **extra}
        async with Client(server) as client:
            return await client.call_tool("solve", arguments)

    with pytest.MonkeyPatch.context() as patch:
        spy = Spy(patch)
        result = anyio.run(call)
    assert listener.connections() == 0, (model, extra)
    text = result.content[0].text if result.content else ""
    if model == "demo":
        # It ran: a run with no answer (the demo declines a Standard prompt) is an error
        # result too, but one that holds the run, never a refusal of the model.
        assert result.structured_content is not None, text
        assert result.structured_content["run_id"] and "not offered" not in text, text
        assert spy.built == [("demo", "")]
    else:
        assert result.is_error and "not offered here; name one of: demo" in text, text
        assert spy.built == []


def test_mcp_offers_the_models_the_operator_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import conductor.mcp_server.server as server_module

    made: dict[str, Any] = {}

    class Served:
        def run(self, transport: str, **options: Any) -> None:
            made["transport"] = transport

    def create(chosen: Any, **options: Any) -> Served:
        made.update(options)
        return Served()

    monkeypatch.setattr(server_module, "create_server", create)
    listed = "openai:qwen@http://127.0.0.1:9/v1"
    argv = ["mcp", "--model", "demo", "--serve-model", listed, "--serve-model", "demo"]
    assert main([*argv, "--max-concurrent", "2"]) == 0
    assert made == {"models": (listed, "demo"), "max_concurrent": 2, "transport": "stdio"}
    made.clear()
    assert main(["mcp", "--model", "demo"]) == 0
    assert made["models"] == ("demo",) and made["max_concurrent"] == 4  # the defaults


def test_mcp_refuses_a_bound_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--max-concurrent", "0"]) == 2
    assert "--max-concurrent must be at least 1" in capsys.readouterr().err
