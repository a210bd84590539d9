"""conductor against llama.cpp's llama-server running SmolLM2-135M-Instruct, through
both SDKs: OpenAI Chat Completions (/v1/chat/completions) and its Anthropic Messages
endpoint (/v1/messages). Every test checks the recorded run, not only the exit code.

SmolLM2 cannot meta-prompt: with short `max_tokens` every turn it writes is cut at the
limit, which exercises truncation, round limits, streaming and usage on a real server.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from conftest import kinds, run_cli, solve_json, spec, transcript_of
from servers import LlamaServer

from conductor.session import Session
from conductor_kernel.events import Event, RunFinished, TextDelta
from conductor_kernel.interfaces import Usage
from conductor_kernel.limits.run_config import RunConfig
from experts.anthropic_model import AnthropicModel
from experts.openai_model import OpenAIModel
from record.reader import read_transcript
from transcripts.index import RunIndex

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("peers")]

FORMATS = ["openai", "anthropic"]
LONG = "Write a very long story about a cat who sails around the world, chapter by chapter."


def model_for(provider: str, llama: LlamaServer, **kw: object):
    if provider == "openai":
        return OpenAIModel("smollm2", base_url=llama.openai_url, api_key="unused", **kw)
    return AnthropicModel("smollm2", base_url=llama.root, api_key="unused", **kw)


def usage_sum(events: list[Event]) -> Usage:
    total = Usage()
    for event in events:
        total += event.usage
    return total


@pytest.mark.parametrize("provider", FORMATS)
def test_a_full_solve_records_usage_caching_and_truncation_as_the_server_reports(
    provider: str, llama: LlamaServer
) -> None:
    predicted_before = llama.metric("tokens_predicted_total")
    proc, result = solve_json(
        "What is 2+2?", "--model", spec(provider, "smollm2", llama), "--max-rounds", "3",
        "--no-python",
    )  # fmt: skip
    assert proc.returncode == 1  # no answer: SmolLM2 never writes one in the protocol
    transcript = transcript_of(result["run_id"])
    finished = transcript.finished
    assert finished is not None and finished.status == "limit" and finished.rounds == 3
    assert [e.limit for e in kinds(transcript, "limit_hit")] == ["rounds"]
    turns = kinds(transcript, "meta_turn_finished")
    assert len(turns) == 3
    # Every turn ran into the 48-token limit: recorded as truncated, never acted on,
    # and the meta model was told so.
    assert all(t.truncated and t.stop_reason in ("length", "max_tokens") for t in turns)
    assert [o.reason for o in kinds(transcript, "observation")] == ["truncated"] * 3
    starts = kinds(transcript, "meta_turn_started")
    assert "cut off by the output limit (48 tokens)" in starts[1].user_message
    # Usage is what the server counted: its own output-token counter moved by exactly
    # the recorded output tokens, and later turns read the shared prefix from its cache.
    assert finished.usage.output_tokens == 3 * 48
    assert llama.metric("tokens_predicted_total") - predicted_before == 3 * 48
    assert finished.usage.known and all(t.usage.input_tokens > 0 for t in turns)
    assert turns[1].usage.cache_read_tokens > 0 and turns[2].usage.cache_read_tokens > 0
    assert finished.usage == usage_sum(turns)
    # The runs index has the same run, finished.
    index = RunIndex()
    row = index.get(result["run_id"])
    assert row is not None and row["status"] == "limit"


def test_a_batch_of_three_at_concurrency_two(llama: LlamaServer, tmp_path: Path) -> None:
    tasks = tmp_path / "three.jsonl"
    questions = ["What is 1+1?", "What is 2+3?", "What is 5+8?"]
    tasks.write_text(
        "".join(json.dumps({"input": q, "target": "x"}) + "\n" for q in questions),
        encoding="utf-8",
    )
    predicted_before = llama.metric("tokens_predicted_total")
    proc = run_cli(
        "batch", str(tasks), "--task", "multistep_arithmetic_two", "--concurrency", "2",
        "--model", spec("openai", "smollm2", llama), "--max-rounds", "1", "--no-python",
        "--no-learn", "--no-recall", "--json",
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["items"] == {
        "total": 3, "finished": 3, "remaining": 0, "scored": 3, "unscored": 0
    }  # fmt: skip
    assert report["session"]["concurrency"] == 2 and report["failures"]["limit"] == 3
    assert report["tokens"]["model_calls"] == 3
    # Each item's run is in the index and its transcript, with the server's own counts.
    index = RunIndex()
    rows = index.list(limit=10)
    assert len(rows) == 3
    output = 0
    for row in rows:
        transcript = read_transcript(row["path"])
        assert transcript.finished is not None and transcript.finished.status == "limit"
        assert transcript.finished.usage.known and transcript.finished.usage.output_tokens > 0
        assert any(q in transcript.started.question for q in questions)
        output += transcript.finished.usage.output_tokens
    assert output == report["tokens"]["output"]
    assert llama.metric("tokens_predicted_total") - predicted_before == output


@pytest.mark.parametrize("provider", FORMATS)
def test_cancel_during_a_stream_stops_the_servers_generation_and_keeps_the_usage(
    provider: str, llama: LlamaServer, tmp_path: Path
) -> None:
    session = Session(
        meta_model=model_for(provider, llama),
        config=RunConfig(meta_max_tokens=400, python=False, protocol="text"),
        runs_path=tmp_path,
    )
    log_before = len(llama.log())
    predicted_before = llama.metric("tokens_predicted_total")
    finished: RunFinished | None = None
    pieces = 0
    for event in session.solve(LONG):
        if isinstance(event, TextDelta):
            pieces += 1
            if pieces == 5:
                session.cancel()
        if isinstance(event, RunFinished):
            finished = event
    assert finished is not None and finished.status == "interrupted"
    # The partial call is kept: its output is estimated (the server never sent usage
    # for a stream we closed), and marked as such rather than recorded as 0.
    assert finished.usage.calls == 1 and finished.usage.estimated_calls == 1
    assert finished.usage.estimated_tokens > 0
    transcript = read_transcript(tmp_path / f"{finished.run_id}.jsonl")
    assert transcript.finished is not None and transcript.finished.status == "interrupted"
    # The server saw the connection close and stopped the task well short of 400 tokens.
    assert llama.wait_idle(timeout=30)
    assert "cancel task" in llama.log()[log_before:]
    assert llama.metric("tokens_predicted_total") - predicted_before < 200


@pytest.mark.parametrize("provider", FORMATS)
def test_the_token_limit_stops_a_turn_while_it_streams(
    provider: str, llama: LlamaServer, tmp_path: Path
) -> None:
    session = Session(
        meta_model=model_for(provider, llama),
        config=RunConfig(meta_max_tokens=400, max_tokens=700, python=False, protocol="text"),
        runs_path=tmp_path,
    )
    log_before = len(llama.log())
    events = list(session.solve(LONG))
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "limit"
    transcript = read_transcript(tmp_path / f"{finished.run_id}.jsonl")
    hits = kinds(transcript, "limit_hit")
    assert [h.limit for h in hits] == ["tokens"] and hits[0].maximum == 700
    turn = kinds(transcript, "meta_turn_finished")[0]
    assert turn.stop_reason == "stopped:limit:tokens" and turn.text
    assert finished.rounds == 1 and finished.usage.calls == 1
    assert llama.wait_idle(timeout=30)
    assert "cancel task" in llama.log()[log_before:]


@pytest.mark.parametrize("provider", FORMATS)
def test_a_server_killed_mid_stream_ends_the_run_recorded_with_a_clear_error(
    provider: str, own_llama: LlamaServer, tmp_path: Path
) -> None:
    session = Session(
        meta_model=model_for(provider, own_llama),
        config=RunConfig(meta_max_tokens=400, python=False, protocol="text"),
        runs_path=tmp_path,
    )
    events: list[Event] = []
    with pytest.raises(Exception) as err:
        for event in session.solve(LONG):
            events.append(event)
            if isinstance(event, TextDelta) and sum(isinstance(e, TextDelta) for e in events) == 3:
                threading.Thread(target=own_llama.kill).start()
    assert "broke part-way" in str(err.value) or "nothing is listening" in str(err.value)
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert finished and finished[0].status == "error"
    transcript = read_transcript(tmp_path / f"{finished[0].run_id}.jsonl")
    assert transcript.finished is not None and transcript.finished.status == "error"
    errors = kinds(transcript, "error")
    assert errors and "Traceback" not in errors[0].message
