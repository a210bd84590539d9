"""`conductor serve` driven by the real `openai` SDK against the demo model: answers
streamed and not, the whole run's usage, two requests at once, the run id in a header,
every run recorded and listed by `conductor runs list`, the key required, and a client
that goes away leaving its run `interrupted`."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from fractions import Fraction

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.cli import main
from conductor.config import load_settings
from conductor.serve.app import ServeOptions
from conductor.serve.guard import Access
from conductor.serve.wire import RUN_ID_HEADER
from conductor_kernel.events import ExpertCallFinished, MetaTurnFinished
from equipment.serve_server import running
from experts import demo
from record.reader import iter_events

MODEL = "conductor:meta-no-python@demo"
QUIET = {"recall": False, "learn": False}
KEY = "test-key"


def options(**changes: object) -> ServeOptions:
    base = {
        "settings": load_settings(QUIET),
        "models": ("demo",),
        "quiet_s": 0.2,
        "access": Access(api_key=KEY),
    }
    return ServeOptions(**{**base, **changes})  # type: ignore[arg-type]


@pytest.fixture
def served() -> Iterator[str]:
    with running(options()) as url:
        yield url


def client(url: str, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=60)


def makes_24(answer: str, numbers: tuple[int, ...]) -> bool:
    """The demo's answer read as arithmetic: 24, from exactly these numbers."""
    expression = answer.strip().strip("`").split("=")[0]
    value, used = demo.evaluate(expression)
    return value == Fraction(24) and sorted(used) == sorted(numbers)


solvable = st.tuples(*[st.integers(1, 13)] * 4).filter(
    lambda numbers: next(demo.game24_solutions(numbers), None) is not None
)


def recorded(run_id: str) -> dict:
    """The run as `conductor runs list --json` shows it (asserting it is listed)."""
    return next(run for run in listed() if run["run_id"] == run_id)


def listed() -> list[dict]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["runs", "list", "--json", "--limit", "100"]) == 0
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def test_models_lists_every_method_of_every_served_model(served: str) -> None:
    ids = {model.id for model in client(served).models.list()}
    assert MODEL in ids and "conductor:meta@demo" in ids and "conductor:standard@demo" in ids


@pytest.mark.slow
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(numbers=solvable)
def test_a_reply_is_the_runs_answer_with_the_whole_runs_usage(
    served: str, numbers: tuple[int, ...]
) -> None:
    question = f"Use {' '.join(map(str, numbers))} to make 24"
    raw = client(served).chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": question}]
    )
    reply = raw.parse()
    run_id = raw.headers[RUN_ID_HEADER]
    answer = reply.choices[0].message.content or ""
    assert makes_24(answer, numbers), answer
    assert reply.choices[0].finish_reason == "stop"
    run = recorded(run_id)
    assert run["status"] == "answered" and run["final_answer"] == answer
    assert run["method"] == "meta-no-python"
    # The whole run: every meta turn and expert call its transcript holds, summed.
    calls = [
        event
        for event in iter_events(run["path"])
        if isinstance(event, MetaTurnFinished | ExpertCallFinished)
    ]
    assert len(calls) >= 2 and reply.usage is not None
    assert reply.usage.prompt_tokens == sum(call.usage.input_tokens for call in calls)
    assert reply.usage.completion_tokens == sum(call.usage.output_tokens for call in calls)


def test_a_streamed_reply_shows_progress_then_the_answer_and_usage(served: str) -> None:
    numbers = (4, 7, 8, 8)
    stream = client(served).chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Use 4 7 8 8 to make 24"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    reasoning, content, usage, finish, run_ids = [], [], None, None, set()
    for chunk in stream:
        run_ids.add(chunk.id)
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            extra = choice.delta.model_extra or {}
            reasoning.append(extra.get("reasoning_content") or "")
            content.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    answer = "".join(content)
    assert makes_24(answer, numbers)
    assert "[round 1]" in "".join(reasoning) and "Expert" in "".join(reasoning)
    assert finish == "stop"
    (chunk_id,) = run_ids
    run = recorded(chunk_id.removeprefix("chatcmpl-"))
    assert run["status"] == "answered" and run["final_answer"] == answer
    assert usage is not None and usage.total_tokens > 0


def test_two_requests_at_once_are_both_answered_and_recorded(served: str) -> None:
    questions = {(3, 3, 8, 8): "Use 3 3 8 8 to make 24", (1, 2, 3, 4): "Use 1 2 3 4 to make 24"}
    results: dict[tuple[int, ...], tuple[str, str]] = {}
    barrier = threading.Barrier(len(questions))

    def ask(numbers: tuple[int, ...], question: str) -> None:
        barrier.wait()
        raw = client(served).chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": question}]
        )
        results[numbers] = (raw.headers[RUN_ID_HEADER], raw.parse().choices[0].message.content)

    threads = [threading.Thread(target=ask, args=item) for item in questions.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert set(results) == set(questions)
    assert len({run_id for run_id, _ in results.values()}) == 2
    for numbers, (run_id, answer) in results.items():
        assert makes_24(answer, numbers)
        assert recorded(run_id)["status"] == "answered"


def test_an_unknown_model_is_refused_as_not_found(served: str) -> None:
    with pytest.raises(openai.NotFoundError, match="GET /v1/models"):
        client(served).chat.completions.create(
            model="conductor:meta@openai:elsewhere", messages=[{"role": "user", "content": "x"}]
        )
    assert listed() == []  # nothing was started


def test_the_key_is_required_of_every_request() -> None:
    with running(options(access=Access(api_key="s3cret"))) as url:
        with pytest.raises(openai.AuthenticationError):
            client(url, "wrong").models.list()
        with pytest.raises(openai.AuthenticationError):
            client(url, "wrong").chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Use 4 7 8 8 to make 24"}]
            )
        assert listed() == []
        assert any(model.id == MODEL for model in client(url, "s3cret").models.list())


class SlowDemo(demo.DemoModel):
    """The demo, streaming one character every few milliseconds: a run that takes a
    while, so a client can leave in the middle of it."""

    def complete(self, messages, *, on_text=None, **options):  # type: ignore[no-untyped-def]
        def slowly(text: str) -> None:
            time.sleep(0.02)
            if on_text is not None:
                on_text(text)

        return super().complete(messages, on_text=slowly, **options)


@pytest.fixture
def slow_served(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    import experts.registry

    monkeypatch.setattr(
        experts.registry,
        "get_model",
        lambda spec, **_: SlowDemo(demo._meta, demo._expert, name="demo", chunk_chars=1),
    )
    with running(options()) as url:
        yield url


def wait_for_status(run_id: str, *, within: float = 60) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        run = next((run for run in listed() if run["run_id"] == run_id), None)
        if run is not None and run["status"] not in ("", "running", None):
            return str(run["status"])
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


def test_a_client_leaving_a_stream_interrupts_its_run(slow_served: str) -> None:
    stream = client(slow_served).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Use 4 7 8 8 to make 24"}], stream=True
    )
    run_id = stream.response.headers[RUN_ID_HEADER]
    seen = 0
    for chunk in stream:
        seen += sum(
            bool((c.delta.model_extra or {}).get("reasoning_content")) for c in chunk.choices
        )
        if seen >= 3:
            break  # the run is under way
    stream.close()
    assert wait_for_status(run_id) == "interrupted"
    assert not recorded(run_id)["final_answer"]


@pytest.mark.slow
def test_a_client_leaving_before_a_plain_reply_interrupts_its_run(slow_served: str) -> None:
    impatient = openai.OpenAI(base_url=slow_served, api_key=KEY, max_retries=0, timeout=1.5)
    with pytest.raises(openai.APITimeoutError):
        impatient.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Use 4 7 8 8 to make 24"}]
        )
    deadline = time.monotonic() + 30
    while not listed() and time.monotonic() < deadline:
        time.sleep(0.1)
    (run,) = listed()
    assert wait_for_status(run["run_id"]) == "interrupted"


def broken_model(messages: object) -> str:
    raise ConnectionError("the provider's socket closed")  # a system failure, not an answer


@pytest.fixture
def broken_served(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    import experts.registry
    from experts.scripted import ScriptedModel

    monkeypatch.setattr(
        experts.registry, "get_model", lambda spec, **_: ScriptedModel(broken_model, name="demo")
    )
    with running(options()) as url:
        yield url


@pytest.mark.parametrize("stream", [False, True])
def test_a_failed_run_is_an_error_never_a_reply(broken_served: str, stream: bool) -> None:
    ask = client(broken_served).chat.completions
    messages = [{"role": "user", "content": "Use 4 7 8 8 to make 24"}]
    with pytest.raises(openai.APIError, match="failed") as raised:
        if stream:
            for _ in ask.create(model=MODEL, messages=messages, stream=True):
                pass
        else:
            ask.create(model=MODEL, messages=messages)
    (run,) = listed()
    assert run["status"] == "error" and not run["final_answer"]
    assert run["run_id"] in str(raised.value)  # the message says which run to look at
