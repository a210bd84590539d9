"""The protocol carried by tool calls against real servers (issue 34): llama-server with
`--jinja` (SmolLM2, through both SDKs), LiteLLM's proxy, and, where its GGUF is cached,
Qwen2.5-Coder-1.5B. What is checked is the carrier's path, never the model's accuracy:
the run is recorded as `tools` and says why, each round offers the tools it should,
every call the model made gets its result back under its id, and the run ends without
an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import _skip_or_fail, kinds, solve_json, spec, transcript_of
from servers import LlamaServer, Peer, find_llama_server, find_qwen, start_llama_server

from record.reader import Transcript

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("peers")]

FORMATS = ["openai", "anthropic"]
ENDED = {"answered", "no_answer", "limit"}


@pytest.fixture(scope="module")
def llama_jinja(peers_dir: Path) -> Iterator[LlamaServer]:
    """SmolLM2 on a llama-server whose chat template renders tools (`--jinja`)."""
    found = find_llama_server()
    if found is None:
        _skip_or_fail("llama-server or the SmolLM2 GGUF is not installed")
    assert found is not None
    server = start_llama_server(*found, peers_dir, slots=1, extra=("--jinja",))
    yield server
    server.stop()


def check_tool_turns(transcript: Transcript, *, consult_first: bool = True) -> None:
    """Every meta turn was offered the round's tools (the last round only the answer),
    and every call the model made itself got exactly one result back, under its id, in
    the next turn's message."""
    finished = kinds(transcript, "meta_turn_finished")
    started = kinds(transcript, "meta_turn_started")
    assert finished and all(t.carrier == "tools" for t in finished)
    last = kinds(transcript, "run_started")[0].limits["max_rounds"]
    first = ["consult_expert"] if consult_first else ["consult_expert", "final_answer"]
    for turn in finished:
        if turn.round == last:
            assert turn.offered_tools == ["final_answer"]
        elif turn.round == 1:
            assert turn.offered_tools == first
        else:
            assert turn.offered_tools == ["consult_expert", "final_answer"]
    for turn, after in zip(finished, started[1:], strict=False):
        own = [c["id"] for c in turn.tool_calls if c["source"] == "native"]
        if own and not turn.truncated:
            assert [r["call_id"] for r in after.tool_results] == own
        else:
            assert after.tool_results == []


@pytest.mark.parametrize("provider", FORMATS)
def test_the_tools_carrier_runs_against_llama_server(
    provider: str, llama_jinja: LlamaServer
) -> None:
    proc, result = solve_json(
        "What is 6 times 7?", "--model", spec(provider, "smollm2", llama_jinja),
        "--protocol", "tools", "--max-rounds", "3", "--no-python",
    )  # fmt: skip
    assert result["status"] in ENDED, proc.stderr[-2000:]
    transcript = transcript_of(result["run_id"])
    started = kinds(transcript, "run_started")[0]
    assert (started.protocol, started.protocol_reason) == ("tools", "asked for")
    check_tool_turns(transcript)
    assert not kinds(transcript, "error")


@pytest.mark.parametrize("provider", FORMATS)
def test_auto_asks_the_server_and_records_its_answer(
    provider: str, llama_jinja: LlamaServer
) -> None:
    proc, result = solve_json(
        "What is 6 times 7?", "--model", spec(provider, "smollm2", llama_jinja),
        "--protocol", "auto", "--max-rounds", "2", "--no-python",
    )  # fmt: skip
    assert result["status"] in ENDED, proc.stderr[-2000:]
    started = kinds(transcript_of(result["run_id"]), "run_started")[0]
    assert (started.protocol, started.protocol_reason) == (
        "tools",
        "auto: the server took tool definitions",
    )


@pytest.mark.parametrize("provider", FORMATS)
def test_a_proxy_whose_model_answers_in_text_is_read_and_consulted_first(
    provider: str, litellm: Peer
) -> None:
    """The proxy takes tools, its mock model ignores them and answers in the text
    protocol at once: read from the text, not taken in round 1 (consult first: the
    conductor makes the ready call for it), then taken in the round told to answer
    (round 2 of 3)."""
    proc, result = solve_json(
        "What is 6 times 7?", "--model", spec(provider, "mock-answer", litellm),
        "--protocol", "auto", "--no-python", "--max-rounds", "3", key=litellm.key,
    )  # fmt: skip
    assert result["status"] == "answered" and result["answer"] == "42", proc.stderr[-2000:]
    transcript = transcript_of(result["run_id"])
    assert kinds(transcript, "run_started")[0].protocol == "tools"
    reasons = [o.reason for o in kinds(transcript, "observation")]
    assert reasons == ["read_from_text", "ready_call_made", "read_from_text"]
    assert [c.round for c in kinds(transcript, "expert_call_started")] == [1]
    assert transcript.finished is not None and transcript.finished.rounds == 2
    check_tool_turns(transcript)


# How every turn held to the protocol's grammar begins (conductor_kernel/carrier/grammar.py).
GRAMMAR_START = re.compile(
    r'(?:[^\n":]{1,160}\n\n)?'
    r'(?:Expert [A-Z][a-zA-Z]*(?: [A-Z][a-zA-Z]*){0,2}:\n"""\n|>> FINAL ANSWER:\n"""\n)'
)


def test_the_grammar_carrier_holds_smollm2_to_the_protocols_forms(
    llama_jinja: LlamaServer,
) -> None:
    """SmolLM2 never writes the protocol on its own (test_litellm, test_llama_server);
    held to the grammar, every turn it writes is an expert call or an answer, as far as
    its output limit lets it go."""
    proc, result = solve_json(
        "What is 6 times 7?", "--model", spec("openai", "smollm2", llama_jinja),
        "--protocol", "grammar", "--max-rounds", "2", "--no-python",
        "--meta-max-tokens", "120",
    )  # fmt: skip
    assert result["status"] in ENDED, proc.stderr[-2000:]
    transcript = transcript_of(result["run_id"])
    assert kinds(transcript, "run_started")[0].protocol == "grammar"
    turns = kinds(transcript, "meta_turn_finished")
    assert turns and all(t.carrier == "grammar" for t in turns)
    for turn in turns:
        assert GRAMMAR_START.match(turn.text), turn.text
    assert "no_call_or_answer" not in [o.reason for o in kinds(transcript, "observation")]
    assert not kinds(transcript, "error")


@pytest.fixture(scope="module")
def qwen(peers_dir: Path) -> Iterator[LlamaServer]:
    """Qwen2.5-Coder-1.5B on llama-server, when its GGUF is cached (not by CI's set-up)."""
    found, model = find_llama_server(), find_qwen()
    if found is None or model is None:
        pytest.skip("llama-server or the Qwen2.5-Coder-1.5B GGUF is not in the peers cache")
    server = start_llama_server(
        found[0], model, peers_dir, slots=1, extra=("--jinja",), alias="qwen", threads=2
    )
    yield server
    server.stop()


def test_a_model_that_writes_calls_gets_them_run(qwen: LlamaServer) -> None:
    """Qwen offered tools writes calls in most rounds (as calls, or as JSON in its
    text): at least one is run, and the run ends recorded."""
    proc, result = solve_json(
        "Use 4 6 8 8 to make 24 with + - * / (each number once).",
        "--model", spec("openai", "qwen", qwen), "--protocol", "auto",
        "--max-rounds", "2", "--no-python", "--meta-max-tokens", "200",
        "--expert-max-tokens", "64", timeout=1500,
    )  # fmt: skip
    assert result["status"] in ENDED, proc.stderr[-2000:]
    transcript = transcript_of(result["run_id"])
    # Two rounds: round 1 is the one told to answer now, so it offers the answer too.
    check_tool_turns(transcript, consult_first=False)
    called = [c for t in kinds(transcript, "meta_turn_finished") for c in t.tool_calls]
    assert called, "no call in two rounds"
    assert kinds(transcript, "expert_call_started") or kinds(transcript, "final_answer")
