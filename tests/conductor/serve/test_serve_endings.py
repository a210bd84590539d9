"""`conductor serve` through the `openai` SDK over the table of run endings
(equipment/run_endings.py), streamed and not: an answer is the reply's content; a run
with no answer is never a blank reply, its content says why (a limit's finish reason is
`length`, a decline is also the `refusal`); a failed or interrupted run is an error whose
message says why. Each shows the status and the reason the run's fold holds."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from conductor.config import load_settings
from conductor.serve.app import ServeOptions
from conductor.serve.guard import Access
from conductor.serve.wire import RUN_ID_HEADER, STATUS_HEADER
from equipment.run_endings import CASES, EndingCase, recorded_ending, session_for
from equipment.serve_server import running

KEY = "test-key"
MODEL = "conductor:meta@demo"
FAILED = ("error", "interrupted")


@pytest.fixture(params=CASES, ids=lambda case: case.name)
def case(request: pytest.FixtureRequest) -> EndingCase:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def served(case: EndingCase) -> Iterator[openai.OpenAI]:
    options = ServeOptions(
        settings=load_settings({"recall": False, "learn": False}),
        models=("demo",),
        quiet_s=0.2,
        access=Access(api_key=KEY),
        factory=session_for(case),
    )
    with running(options) as url:
        yield openai.OpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=60)


def ask(case: EndingCase) -> list[dict[str, str]]:
    return [{"role": "user", "content": case.question}]


@pytest.mark.slow
def test_a_reply_tells_each_ending(served: openai.OpenAI, case: EndingCase) -> None:
    chat = served.chat.completions
    if case.status in FAILED:
        with pytest.raises(openai.APIStatusError) as raised:
            chat.create(model=MODEL, messages=ask(case))
        run_id = raised.value.response.headers[RUN_ID_HEADER]
        told = recorded_ending(run_id)
        assert raised.value.response.headers[STATUS_HEADER] == case.status
        assert told.line() in raised.value.message and case.said in told.line()
        return
    raw = chat.with_raw_response.create(model=MODEL, messages=ask(case))
    reply, body = raw.parse(), raw.http_response.json()
    told = recorded_ending(raw.headers[RUN_ID_HEADER])
    choice = reply.choices[0]
    assert body["conductor"]["status"] == case.status == told.status
    assert body["conductor"]["account"] == told.line()
    if told.answered:
        assert choice.message.content == told.answer and choice.finish_reason == "stop"
        assert body["conductor"]["verdict"] == told.verdict != ""
        return
    assert choice.message.content == told.line() and case.said in told.line()
    assert choice.finish_reason == ("length" if case.status == "limit" else "stop")
    assert choice.message.refusal == (told.why if case.status == "declined" else None)


@pytest.mark.slow
def test_a_stream_tells_each_ending(served: openai.OpenAI, case: EndingCase) -> None:
    stream = served.chat.completions.create(model=MODEL, messages=ask(case), stream=True)
    text, reasons, run_id = [], [], ""
    try:
        for chunk in stream:
            run_id = chunk.id.removeprefix("chatcmpl-")
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
                reasons.append(choice.finish_reason)
    except openai.APIError as failed:
        told = recorded_ending(run_id)
        assert case.status in FAILED and told.status == case.status
        assert told.line() in failed.message and case.said in told.line()
        return
    told = recorded_ending(run_id)
    assert case.status not in FAILED and told.status == case.status
    assert "".join(text) == (told.answer if told.answered else told.line())
    assert reasons[-1] == ("length" if case.status == "limit" else "stop")
