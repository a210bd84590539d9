"""A model served on this machine: named by its file, not its path, in transcripts; no
"no price known" warning for it; one warning per process for an unpriced hosted model."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor_kernel.interfaces import Message
from equipment.wire_server import WireServer
from experts import local_models
from experts.anthropic_model import AnthropicModel
from experts.local_models import is_local, model_id
from experts.openai_model import OpenAIModel

SEGMENT = st.text(alphabet="abcxyz019_-", min_size=1, max_size=12)
GGUF = st.builds(
    lambda dirs, stem: "/" + "/".join([*dirs, stem + ".gguf"]),
    st.lists(SEGMENT, max_size=4),
    SEGMENT,
)


@given(GGUF)
@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
def test_a_gguf_path_is_named_by_its_file(path: str) -> None:
    assert model_id(path) == path.rsplit("/", 1)[1]
    assert model_id(path.lstrip("/")) == path.rsplit("/", 1)[1]


@pytest.mark.parametrize(
    "name", ["gpt-4o", "Qwen/Qwen2.5-Coder-1.5B-Instruct", "smollm2", "llama3:8b"]
)
def test_a_model_id_is_kept(name: str) -> None:
    assert model_id(name) == name


def test_the_transcript_names_the_gguf_by_its_file() -> None:
    path = "/root/.cache/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    with WireServer(["hello", "hello"]) as server:  # it echoes the model asked for
        model = OpenAIModel(path, base_url=server.openai_url, api_key="k")
        plain = model.complete([Message("user", "hi")])
        streamed = model.complete([Message("user", "hi")], on_text=lambda _t: None)
    assert model.name == "openai:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert plain.model == streamed.model == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:8080/v1", True),
        ("http://127.0.0.1:8080/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://0.0.0.0:8080", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        ("https://localhost.example.com/v1", False),
    ],
)
def test_local_servers_are_told_apart(url: str, local: bool) -> None:
    assert is_local(url) is local


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "no price known" in r.getMessage()]


def test_an_unpriced_hosted_model_is_warned_about_once_per_process(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_models, "_warned_unpriced", set())
    caplog.set_level(logging.WARNING, logger="conductor.experts")
    for _ in range(3):
        OpenAIModel("mystery-model-x", base_url="https://gateway.example.com/v1", api_key="k")
        AnthropicModel("mystery-model-x", base_url="https://gateway.example.com", api_key="k")
    assert len(_warnings(caplog)) == 1


def test_a_local_server_is_never_warned_about(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_models, "_warned_unpriced", set())
    caplog.set_level(logging.WARNING, logger="conductor.experts")
    OpenAIModel("mystery-model-y", base_url="http://127.0.0.1:8080/v1", api_key="k")
    OpenAIModel("/models/x.gguf", base_url="http://llama.lan:8080/v1", api_key="k")
    AnthropicModel("mystery-model-y", base_url="http://localhost:4000", api_key="k")
    assert _warnings(caplog) == []
