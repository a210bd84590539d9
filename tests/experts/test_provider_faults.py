"""The provider half of the fault matrix: each fault a real provider can show, served by
the wire server to the real anthropic and openai SDKs during a whole conductor run.

For every cell the run ends recorded (the transcript's last event is `run_finished`),
with the right status, the usage of every call that returned, and no traceback in what
the user is shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conductor.session import Session
from conductor_kernel.events import Event, RunFinished
from conductor_kernel.interfaces import ModelError
from conductor_kernel.limits.run_config import RunConfig
from equipment.wire_server import Fault, Reply, WireServer
from experts.anthropic_model import AnthropicModel
from experts.openai_model import OpenAIModel
from experts.retry import Backoff
from record.reader import read_transcript

PROVIDERS = ["anthropic", "openai"]
ANSWER = '>> FINAL ANSWER:\n"""\n42\n"""'
TWO_EXPERTS = 'Expert Checker:\n"""\nIs 6*7 42?\n"""\n\nExpert Second:\n"""\nAnd 7*6?\n"""'


def make_model(provider: str, server: WireServer, **kw: Any) -> Any:
    kw.setdefault("backoff", Backoff(base_s=0.02, cap_s=0.1))
    kw.setdefault("timeout", 2.0)
    if provider == "anthropic":
        return AnthropicModel("claude-haiku-4-5", base_url=server.url, api_key="k", **kw)
    return OpenAIModel("gpt-4o", base_url=server.openai_url, api_key="k", **kw)


def solve(provider: str, server: WireServer, tmp_path: Path, **kw: Any) -> tuple[list[Event], Any]:
    session = Session(
        meta_model=make_model(provider, server, **kw),
        config=RunConfig(python=False, parallel_experts=False),
        runs_path=tmp_path,
    )
    events: list[Event] = []
    error: Exception | None = None
    try:
        events.extend(session.solve("What is 6 times 7?"))
    except ModelError as exc:  # a system failure: raised after the run is recorded
        error = exc
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert finished, "the run did not end with run_finished"
    transcript = read_transcript(tmp_path / f"{finished[0].run_id}.jsonl")
    assert transcript.events[-1].kind == "run_finished"
    if error is not None:
        assert "Traceback" not in str(error)
    return events, transcript


# Faults the run recovers from: served once, then the script answers.
RECOVERED = {
    "429 with retry-after": Fault.rate_limit(0.05),
    "500": Fault.server_error(500),
    "529 as a status": Fault.overloaded(),
    "overloaded mid-stream": Fault.error_in_stream("overloaded_error", after_events=1),
    "server error chunk mid-stream": Fault.error_in_stream("server_error", after_events=1),
    "truncated stream before any text": Fault.disconnect(after_events=1),
    "connection reset": Fault.connection_reset(),
    "stall past the timeout": Fault.delay(5.0),
}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", list(RECOVERED))
def test_a_transient_fault_is_retried_and_the_run_answers(
    provider: str, fault: str, tmp_path: Path
) -> None:
    with WireServer([RECOVERED[fault], ANSWER]) as server:
        _, transcript = solve(provider, server, tmp_path, timeout=0.5)
    finished = transcript.finished
    assert finished is not None and finished.status == "answered"
    assert finished.final_answer == "42"
    # One call, its failed attempt shown as a retry. An attempt whose stream had begun
    # was processed by the server: its prompt is in the call's usage, estimated.
    usage = finished.usage
    began = RECOVERED[fault].cut_after is not None
    assert usage.calls == 1 and usage.known is not began
    assert (usage.estimated_input_tokens > 0) is began
    assert len(server.requests) == 2 and server.requests[0].fault is not None


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "fault",
    [
        Fault.error_in_stream("overloaded_error", after_events=6),
        Fault.disconnect(after_events=6),
    ],
    ids=["error event after text", "cut after text"],
)
def test_a_stream_that_fails_after_text_ends_the_run_recorded_as_an_error(
    provider: str, fault: Fault, tmp_path: Path
) -> None:
    # Retrying would show the text twice: the run ends, recorded, with a clear message.
    with WireServer(["Let me think about this carefully. " * 3, fault]) as server:
        server.add(ANSWER)
        _, transcript = solve(provider, server, tmp_path)
    finished = transcript.finished
    assert finished is not None and finished.status == "error"
    # The first turn returned and is kept; the broken one is recorded too, estimated
    # from its prompt and the text it streamed, and priced.
    usage = finished.usage
    assert usage.calls == 2 and usage.estimated_calls == 1
    assert usage.estimated_output_tokens > 0
    first = next(e for e in transcript.events if e.kind == "meta_turn_finished")
    assert usage.cost_usd > first.usage.cost_usd > 0
    error = next(e for e in transcript.events if e.kind == "error")
    assert "broke part-way" in error.message and "Traceback" not in error.message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_that_keeps_failing_ends_the_run_recorded_as_an_error(
    provider: str, tmp_path: Path
) -> None:
    with WireServer([Fault.server_error(500)] * 6) as server:
        _, transcript = solve(provider, server, tmp_path)
    finished = transcript.finished
    assert finished is not None and finished.status == "error" and finished.usage.calls == 0
    error = next(e for e in transcript.events if e.kind == "error")
    assert "answered 500 6 times" in error.message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_error_chunk_that_is_not_transient_is_a_clear_provider_error(
    provider: str, tmp_path: Path
) -> None:
    with WireServer([Fault.error_in_stream("invalid_request_error", after_events=1)]) as server:
        _, transcript = solve(provider, server, tmp_path)
    error = next(e for e in transcript.events if e.kind == "error")
    assert "rejected the request" in error.message and "invalid_request_error" in error.message
    assert error.where == "ModelError"
    assert len(server.requests) == 1  # not retried


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_meta_turn_cut_at_max_tokens_is_never_dispatched(provider: str, tmp_path: Path) -> None:
    cut = 'Expert Mathematician:\n"""\nCompute the sum of the first 100 primes, then div'
    stop = "max_tokens" if provider == "anthropic" else "length"  # each API's own word
    with WireServer([Reply(cut, stop_reason=stop), ANSWER]) as server:
        _, transcript = solve(provider, server, tmp_path)
    turns = [e for e in transcript.events if e.kind == "meta_turn_finished"]
    assert turns[0].truncated and not turns[1].truncated
    assert not [e for e in transcript.events if e.kind == "expert_call_started"]
    notes = [e for e in transcript.events if e.kind == "observation"]
    assert [n.reason for n in notes] == ["truncated"]
    assert "cut off by the output limit" in server.requests[1].raw.decode()
    assert transcript.finished is not None and transcript.finished.status == "answered"


@pytest.mark.parametrize(
    ("provider", "stop", "cause"),
    [
        ("openai", "content_filter", "the provider's content filter"),
        ("anthropic", "refusal", "the provider's refusal classifier"),
        ("anthropic", "pause_turn", "the provider pausing the turn"),
    ],
)
def test_a_turn_cut_for_another_reason_is_never_dispatched_and_the_cause_named(
    provider: str, stop: str, cause: str, tmp_path: Path
) -> None:
    cut = '>> FINAL ANSWER:\n"""\n(4 + 5'
    with WireServer([Reply(cut, stop_reason=stop), ANSWER]) as server:
        _, transcript = solve(provider, server, tmp_path)
    turns = [e for e in transcript.events if e.kind == "meta_turn_finished"]
    assert turns[0].truncated and turns[0].stop_reason == stop
    assert not [e for e in transcript.events if e.kind == "final_answer" and "(4 + 5" in e.answer]
    assert f"cut off by {cause}" in server.requests[1].raw.decode()
    assert transcript.finished is not None and transcript.finished.status == "answered"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_expert_cut_at_max_tokens_is_marked_and_the_meta_model_told(
    provider: str, tmp_path: Path
) -> None:
    stop = "max_tokens" if provider == "anthropic" else "length"
    script = ['Expert Checker:\n"""\nIs 6*7 42?\n"""', Reply("Yes, because 6 ti", stop), ANSWER]
    with WireServer(script) as server:
        _, transcript = solve(provider, server, tmp_path)
    call = next(e for e in transcript.events if e.kind == "expert_call_finished")
    assert call.truncated and call.stop_reason == stop
    assert "cut off by the output limit (4096 tokens)" in call.output
    assert transcript.finished is not None and transcript.finished.usage.calls == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_one_failing_expert_is_an_observation_and_its_siblings_usage_is_kept(
    provider: str, tmp_path: Path
) -> None:
    script = [TWO_EXPERTS, "Yes.", Fault(400, message="this instruction is refused"), ANSWER]
    with WireServer(script) as server:
        _, transcript = solve(provider, server, tmp_path)
    finished = transcript.finished
    assert finished is not None and finished.status == "answered"
    calls = [e for e in transcript.events if e.kind == "expert_call_finished"]
    assert [c.error is None for c in calls] == [True, False]
    assert "this instruction is refused" in (calls[1].error or "")
    assert [o.reason for o in transcript.events if o.kind == "observation"] == ["expert_failed"]
    assert finished.usage.calls == 3 and finished.expert_calls == 2
    assert "The expert could not answer" in server.requests[3].raw.decode()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_json_reply_to_a_streamed_request_is_read_as_the_reply(
    provider: str, tmp_path: Path
) -> None:
    # A gateway that ignores `stream: true` and answers with one JSON body (served as a
    # raw body with a JSON content type).
    with WireServer([Fault(200, raw_body=_full_json(provider, ANSWER))]) as server:
        model = make_model(provider, server)
        session = Session(meta_model=model, config=RunConfig(python=False), runs_path=tmp_path)
        events = list(session.solve("What is 6 times 7?"))
    assert server.requests[0].body["stream"] is True
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "answered"
    assert finished.final_answer == "42" and finished.usage.known


def _full_json(provider: str, text: str) -> str:
    import json

    from equipment import wire_formats as fmt

    api = "anthropic" if provider == "anthropic" else "openai"
    usage = fmt.UsageCounts(20, 5)
    stop = "end_turn" if api == "anthropic" else "stop"
    return json.dumps(fmt.full_reply(api, "x1", "m", text, stop, usage))


@pytest.mark.parametrize("provider", ["openai"])
def test_a_server_that_sends_no_usage_while_streaming_is_recorded_as_unknown(
    provider: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with WireServer(["thinking", ANSWER], stream_usage=False) as server:
        session = Session(
            meta_model=make_model(provider, server),
            config=RunConfig(python=False, max_tokens=100_000),
            runs_path=tmp_path,
        )
        events = list(session.solve("What is 6 times 7?"))
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "answered"
    usage = finished.usage
    # Not a measured zero: unknown, with a tokenizer estimate the limits count.
    assert usage.calls == 2 and usage.estimated_calls == 2 and usage.input_tokens == 0
    assert usage.estimated_tokens > 100 and usage.tokens_for_limits == usage.estimated_tokens
    warnings = [r for r in caplog.records if "reported no token usage" in r.getMessage()]
    assert len(warnings) == 1  # said once per server, not once per call


def test_the_token_limit_counts_estimates_for_a_server_without_usage(tmp_path: Path) -> None:
    with WireServer(["thinking " * 50] * 5 + [ANSWER], stream_usage=False) as server:
        session = Session(
            meta_model=make_model("openai", server),
            config=RunConfig(python=False, max_tokens=600),
            runs_path=tmp_path,
        )
        events = list(session.solve("What is 6 times 7?"))
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "limit"
    assert [e.limit for e in events if e.kind == "limit_hit"] == ["tokens"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_wall_time_limit_stops_a_slow_stream(provider: str, tmp_path: Path) -> None:
    # 100 pieces 50 ms apart: 5 s of streaming, stopped at the 0.5 s limit.
    with WireServer(["word " * 100], chunk_chars=5, chunk_delay_s=0.05) as server:
        session = Session(
            meta_model=make_model(provider, server),
            config=RunConfig(python=False, max_wall_s=0.5),
            runs_path=tmp_path,
        )
        events = list(session.solve("What is 6 times 7?"))
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "limit"
    assert [e.limit for e in events if e.kind == "limit_hit"] == ["wall_time"]
    turn = next(e for e in events if e.kind == "meta_turn_finished")
    assert turn.stop_reason == "stopped:limit:wall_time" and len(turn.text) < 500
    assert finished.usage.calls == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_cost_limit_stops_a_priced_stream(provider: str, tmp_path: Path) -> None:
    # gpt-4o / claude-haiku-4-5 are priced: a long reply passes a tiny cost limit mid-way.
    with WireServer(["word " * 2000], chunk_chars=5) as server:
        session = Session(
            meta_model=make_model(provider, server),
            config=RunConfig(python=False, max_cost_usd=0.003),
            runs_path=tmp_path,
        )
        events = list(session.solve("What is 6 times 7?"))
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "limit"
    assert [e.limit for e in events if e.kind == "limit_hit"] == ["cost"]
    turn = next(e for e in events if e.kind == "meta_turn_finished")
    assert turn.stop_reason == "stopped:limit:cost" and len(turn.text) < len("word " * 2000)


def _cancel_after_text(session: Session, pieces: int) -> list[Event]:
    """Run, and cancel once `pieces` streamed pieces have arrived."""
    from conductor_kernel.events import TextDelta

    events: list[Event] = []
    seen = 0
    for event in session.solve("What is 6 times 7?"):
        events.append(event)
        if isinstance(event, TextDelta):
            seen += 1
            if seen == pieces:
                session.cancel()
    return events


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_during_a_streamed_meta_turn_keeps_its_partial_usage(
    provider: str, tmp_path: Path
) -> None:
    with WireServer(["word " * 100], chunk_chars=5, chunk_delay_s=0.05) as server:
        session = Session(
            meta_model=make_model(provider, server),
            config=RunConfig(python=False),
            runs_path=tmp_path,
        )
        events = _cancel_after_text(session, 3)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "interrupted"
    turn = next(e for e in events if e.kind == "meta_turn_finished")
    assert turn.stop_reason == "stopped:cancelled" and turn.text.startswith("word word")
    assert len(turn.text) < 100  # closed part-way, not read to the end
    assert finished.usage.calls == 1 and finished.usage.estimated_calls == 1
    transcript = read_transcript(tmp_path / f"{finished.run_id}.jsonl")
    assert transcript.finished is not None and transcript.finished.usage == finished.usage


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_during_parallel_expert_streams_keeps_every_calls_usage(
    provider: str, tmp_path: Path
) -> None:
    slow = "thinking " * 60
    with WireServer([TWO_EXPERTS, slow, slow], chunk_chars=9, chunk_delay_s=0.05) as server:
        session = Session(
            meta_model=make_model(provider, server),
            config=RunConfig(python=False, parallel_experts=True),
            runs_path=tmp_path,
        )
        events = _cancel_after_text(session, 12)  # the meta turn's pieces, then experts'
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "interrupted"
    calls = [e for e in events if e.kind == "expert_call_finished"]
    assert len(calls) == 2 and all(c.stop_reason == "stopped:cancelled" for c in calls)
    assert finished.usage.calls == 3  # the meta turn and both partial expert calls
    assert not [e for e in events if e.kind == "error"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_while_the_server_stalls_mid_stream_still_keeps_the_call(
    provider: str, tmp_path: Path
) -> None:
    # 10 s between pieces: nothing arrives during the cancel's grace period, so only
    # closing the connection under the blocked read can end the call in time.
    with WireServer(["word " * 20], chunk_chars=5, chunk_delay_s=10.0) as server:
        session = Session(
            meta_model=make_model(provider, server, timeout=30.0),
            config=RunConfig(python=False),
            runs_path=tmp_path,
        )
        events = _cancel_after_text(session, 1)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "interrupted"
    turn = next(e for e in events if e.kind == "meta_turn_finished")
    assert turn.stop_reason == "stopped:cancelled" and turn.text == "word "
    assert finished.usage.calls == 1 and finished.usage.estimated_calls == 1


@pytest.mark.slow
@pytest.mark.parametrize("status", [500, 502, 503, 529])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_expert_whose_server_keeps_failing_makes_the_run_an_error(
    provider: str, status: int, tmp_path: Path
) -> None:
    # The experts' server fails past every retry; the meta model's own server then
    # answers anyway. That answer is no grade of the model: the run ends `error`.
    meta_script = ['Expert Checker:\n"""\nIs 6*7 42?\n"""', ANSWER]
    with (
        WireServer(meta_script) as meta_server,
        WireServer([Fault(status, message="upstream down")] * 3) as expert_server,
    ):
        session = Session(
            meta_model=make_model(provider, meta_server),
            expert_model=make_model(provider, expert_server, max_retries=2),
            config=RunConfig(python=False),
            runs_path=tmp_path,
        )
        events = list(session.solve("What is 6 times 7?"))
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "error"
    assert finished.final_answer == "42"  # kept in the record, but not a grade
    transcript = read_transcript(tmp_path / f"{finished.run_id}.jsonl")
    (error,) = [e for e in transcript.events if e.kind == "error"]
    assert error.where == "model" and str(status) in error.message
    (call,) = [e for e in transcript.events if e.kind == "expert_call_finished"]
    assert call.server_failed and call.error
