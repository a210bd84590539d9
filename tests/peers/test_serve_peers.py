"""`conductor serve` behind real peers: LiteLLM's proxy routing a model name to it (the
demo underneath), and llama-server's SmolLM2 as the underlying model. Each reply is
checked against the run it recorded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import openai
import pytest
from conftest import _skip_or_fail
from servers import LlamaServer, Peer, find_litellm, start_litellm

from conductor.config import load_settings
from conductor.serve.app import ServeOptions
from conductor.serve.guard import Access
from conductor.serve.wire import RUN_ID_HEADER
from equipment.serve_server import running
from experts import demo
from transcripts.index import RunIndex

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("peers")]

ROUTE = "conductor-meta"  # the name the proxy's clients ask for
SERVED = "conductor:meta-no-python@demo"
KEY = "peers-key"  # the key conductor serve asks of every request, LiteLLM's included


@pytest.fixture
def served_demo() -> Iterator[str]:
    settings = load_settings({"recall": False, "learn": False})
    with running(ServeOptions(settings=settings, models=("demo",), access=Access(KEY))) as url:
        yield url


@pytest.fixture
def proxy(served_demo: str, tmp_path: Path) -> Iterator[Peer]:
    binary = find_litellm()
    if binary is None:
        _skip_or_fail("LiteLLM's proxy is not installed")
    assert binary is not None
    model_list = "\n".join(
        [
            "model_list:",
            f"  - model_name: {ROUTE}",
            "    litellm_params:",
            f"      model: openai/{SERVED}",
            f"      api_base: {served_demo}",
            f"      api_key: {KEY}",
            "litellm_settings:",
            "  telemetry: false",
            "  num_retries: 0",
        ]
    )
    peer = start_litellm(binary, tmp_path, None, model_list=model_list + "\n")
    yield peer
    peer.stop()


def test_litellm_routes_a_model_name_to_conductor(proxy: Peer) -> None:
    client = openai.OpenAI(base_url=proxy.openai_url, api_key=proxy.key, max_retries=0)
    reply = client.chat.completions.create(
        model=ROUTE, messages=[{"role": "user", "content": "Use 4 7 8 8 to make 24"}]
    )
    answer = reply.choices[0].message.content or ""
    value, used = demo.evaluate(answer.strip().split("=")[0])
    assert value == Fraction(24) and sorted(used) == [4, 7, 8, 8]
    (run,) = RunIndex().list()
    assert run["status"] == "answered" and run["final_answer"] == answer
    assert reply.usage is not None and reply.usage.prompt_tokens == run["input_tokens"]

    chunks = list(
        client.chat.completions.create(
            model=ROUTE,
            messages=[{"role": "user", "content": "Use 3 3 8 8 to make 24"}],
            stream=True,
        )
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert demo.evaluate(streamed.strip().split("=")[0])[0] == Fraction(24)
    assert len(RunIndex().list()) == 2


def test_smollm2_under_conductor_serve(llama: LlamaServer) -> None:
    model = f"openai:smollm2@{llama.openai_url}"
    settings = load_settings(
        {"recall": False, "learn": False, "run": {"meta_max_tokens": 48, "max_rounds": 2}}
    )
    with running(ServeOptions(settings=settings, models=(model,), access=Access(KEY))) as url:
        client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=300)
        served = f"conductor:zero-shot-cot@{model}"
        assert served in {m.id for m in client.models.list()}
        raw = client.chat.completions.with_raw_response.create(
            model=served, messages=[{"role": "user", "content": "What is 2 + 3?"}]
        )
        reply = raw.parse()
    run = RunIndex().get(raw.headers[RUN_ID_HEADER])
    assert run is not None and run["method"] == "zero-shot-cot"
    # Whatever the tiny model made of it, the reply is what the run recorded.
    # An answer is the reply; a run without one says why (the run's account of its end).
    said = reply.choices[0].message.content or ""
    if run["status"] == "answered":
        assert said == run["final_answer"]
    else:
        assert said.startswith("No answer (") and not run["final_answer"], said
    assert reply.usage is not None and reply.usage.completion_tokens == run["output_tokens"] > 0
    assert json.loads(json.dumps(reply.model_extra or {}))["conductor"]["status"] == run["status"]
