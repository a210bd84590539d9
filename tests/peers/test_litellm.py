"""conductor against LiteLLM's proxy, through both SDKs: deterministic mock models (an
answer at once, an expert call every turn, no protocol at all, Expert Python, an empty
reply, a 500) and a route to llama-server's SmolLM2. Each test checks the recorded run.
"""

from __future__ import annotations

import re
import shutil

import pytest
from conftest import kinds, run_cli, solve_json, spec, transcript_of
from servers import Peer

from support import docker_reason, skip_or_fail
from transcripts.index import RunIndex

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("peers")]

FORMATS = ["openai", "anthropic"]


@pytest.mark.parametrize("provider", FORMATS)
def test_a_model_that_answers_at_once(provider: str, litellm: Peer) -> None:
    # On /v1/messages the proxy answers a streamed request with one JSON body: read as
    # a reply, not reported as invalid JSON.
    proc, result = solve_json(
        "What is 6 times 7?", "--model", spec(provider, "mock-answer", litellm), "--no-python",
        key=litellm.key,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert result["status"] == "answered" and result["answer"] == "42"
    transcript = transcript_of(result["run_id"])
    assert transcript.finished is not None and transcript.finished.final_answer == "42"
    turn = kinds(transcript, "meta_turn_finished")[0]
    # Usage as the proxy reported it (its mock counts), not zero and not estimated.
    assert turn.usage.known and turn.usage.input_tokens > 0 and turn.usage.output_tokens > 0
    assert transcript.finished.usage == turn.usage
    row = RunIndex().get(result["run_id"])
    assert row is not None and row["status"] == "answered"


@pytest.mark.parametrize("provider", FORMATS)
def test_a_model_that_always_calls_an_expert_stops_at_the_round_limit(
    provider: str, litellm: Peer
) -> None:
    proc, result = solve_json(
        "What is 6 times 7?", "--model", spec(provider, "mock-expert", litellm),
        "--max-rounds", "3", "--no-python", key=litellm.key,
    )  # fmt: skip
    assert proc.returncode == 1 and result["status"] == "limit"
    transcript = transcript_of(result["run_id"])
    calls = kinds(transcript, "expert_call_finished")
    assert [c.name for c in calls] == ["Expert Mathematician"] * 3
    assert all(c.error is None and c.usage.calls == 1 for c in calls)
    finished = transcript.finished
    assert finished is not None and finished.expert_calls == 3 and finished.rounds == 3
    assert finished.usage.calls == 6  # three meta turns and three expert calls
    assert [e.limit for e in kinds(transcript, "limit_hit")] == ["rounds"]


@pytest.mark.parametrize("provider", FORMATS)
def test_a_protocol_ignoring_model_is_nudged_then_stopped_at_the_round_limit(
    provider: str, litellm: Peer
) -> None:
    proc, result = solve_json(
        "What is 6 times 7?", "--model", spec(provider, "mock-ignore", litellm),
        "--max-rounds", "3", "--no-python", key=litellm.key,
    )  # fmt: skip
    assert proc.returncode == 1 and result["status"] == "limit"
    transcript = transcript_of(result["run_id"])
    assert [o.reason for o in kinds(transcript, "observation")] == ["no_call_or_answer"] * 3
    starts = kinds(transcript, "meta_turn_started")
    assert "neither consulted an expert nor gave a final answer" in starts[1].user_message
    assert transcript.finished is not None and transcript.finished.rounds == 3


@pytest.mark.parametrize("provider", FORMATS)
def test_an_empty_reply_is_nudged_saying_the_server_sent_nothing(
    provider: str, litellm: Peer
) -> None:
    _proc, result = solve_json(
        "What is 6 times 7?", "--model", spec(provider, "mock-empty", litellm),
        "--max-rounds", "2", "--no-python", key=litellm.key,
    )  # fmt: skip
    transcript = transcript_of(result["run_id"])
    assert [o.reason for o in kinds(transcript, "observation")] == ["empty_reply"] * 2
    assert "returned an empty reply" in kinds(transcript, "meta_turn_started")[1].user_message
    assert transcript.finished is not None and transcript.finished.status == "limit"


@pytest.mark.parametrize("provider", FORMATS)
def test_expert_python_runs_in_the_sandbox(provider: str, litellm: Peer) -> None:
    reason = docker_reason()
    if reason is not None and not shutil.which("bwrap"):
        skip_or_fail(f"no sandbox here: {reason}, and no bubblewrap", "CONDUCTOR_REQUIRE_DOCKER")
    _proc, result = solve_json(
        "What is 6 times 7?", "--model", spec(provider, "mock-python", litellm),
        "--max-rounds", "2", key=litellm.key,
    )  # fmt: skip
    transcript = transcript_of(result["run_id"])
    runs = kinds(transcript, "sandbox_exec")
    assert runs and runs[0].result.exit_code == 0 and runs[0].result.stdout.strip() == "42"
    assert "42" in kinds(transcript, "meta_turn_started")[1].user_message
    assert transcript.finished is not None and transcript.finished.sandbox_runs == 2
    # The code was given in the instruction: it ran as given, with no expert model call.
    assert all(c.usage.calls == 0 for c in kinds(transcript, "expert_call_finished"))


@pytest.mark.parametrize("provider", FORMATS)
def test_the_route_to_llama_server_streams_with_usage(provider: str, litellm: Peer) -> None:
    _proc, result = solve_json(
        "What is 2+2?", "--model", spec(provider, "smollm2", litellm), "--max-rounds", "1",
        "--no-python", key=litellm.key,
    )  # fmt: skip
    transcript = transcript_of(result["run_id"])
    turn = kinds(transcript, "meta_turn_finished")[0]
    assert turn.text and turn.usage.known and turn.usage.output_tokens > 0
    assert turn.usage.output_tokens <= 48  # the finite default limit reached the server
    assert transcript.finished is not None and transcript.finished.status == "limit"


def test_a_server_answering_500_ends_the_run_recorded_and_learning_does_not_retry(
    litellm: Peer,
) -> None:
    log_before = len(litellm.log())
    proc = run_cli(
        "solve",
        "What is 6 times 7?",
        "--model",
        spec("openai", "mock-500", litellm),
        "--no-python",
        "--no-recall",
        "--json",
        key=litellm.key,
    )  # fmt: skip (learning is on: its calls must not try the dead server again)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "answered 500" in proc.stderr
    home_runs = RunIndex().list(limit=5)
    assert len(home_runs) == 1 and home_runs[0]["status"] == "error"
    from record.reader import read_transcript

    transcript = read_transcript(home_runs[0]["path"])
    assert transcript.finished is not None and transcript.finished.status == "error"
    assert "answered 500" in kinds(transcript, "error")[0].message
    # One attempt and five retries, all from the run: none from learning afterwards.
    posts = re.findall(r'"POST /v1/chat/completions HTTP/1.1" 500', litellm.log()[log_before:])
    assert len(posts) == 6
