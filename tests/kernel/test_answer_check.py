"""A final answer the task's own check rejects goes back to the model once, with the
reason, before it is taken; a turn stops at its answer; code written with the run line
inside its fence runs; round 1 under the grammar carrier allows calls only."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel import prompts
from conductor_kernel.carrier.grammar import PROTOCOL_CALLS_GBNF, PROTOCOL_GBNF
from conductor_kernel.events import Event, MetaTurnFinished, MetaTurnStarted, Observation
from conductor_kernel.interfaces import CheckVerdict, Completion, ToolCall
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.limits.streaming import ANSWER_TAIL_CHARS
from conductor_kernel.protocol import RUN_MARKER, extract_code
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedModel, ScriptedToolModel
from record.fold import outline

RIGHT = "(4+6)*(3-1)"


class OnlyRight:
    """A check that applies to every question and accepts only RIGHT."""

    def applies(self, question: str, task: str) -> bool:
        return True

    def __call__(self, question: str, task: str, answer: str) -> CheckVerdict:
        return CheckVerdict(answer.replace(" ", "") == RIGHT, "equals something else")


only_right = OnlyRight()


def text_answer(answer: str) -> str:
    return f'>> FINAL ANSWER:\n"""\n{answer}\n"""'


def run(model: ScriptedModel, **config: object) -> list[Event]:
    cfg = RunConfig(python=False, max_rounds=4, consult_first=False).model_copy(update=config)
    return list(Conductor(model, config=cfg, answer_check=only_right).run("Use 4 6 3 1."))


def reasons(events: list[Event]) -> list[str]:
    return [e.reason for e in events if isinstance(e, Observation)]


def test_a_rejected_answer_is_sent_back_with_the_reason_and_a_passing_one_taken() -> None:
    model = ScriptedModel([text_answer("-63"), text_answer(RIGHT)])
    events = run(model)
    assert reasons(events) == ["answer_fails_check"]
    second = [e for e in events if isinstance(e, MetaTurnStarted)][1]
    assert "equals something else" in second.user_message and "-63" in second.user_message
    assert outline(events).answer == RIGHT


def test_the_same_rejected_answer_again_is_taken_the_model_having_been_told() -> None:
    events = run(ScriptedModel([text_answer("-63"), text_answer("-63")]))
    assert reasons(events) == ["answer_fails_check"]
    assert outline(events).answer == "-63"


def test_in_the_last_round_it_is_taken_and_the_record_says_it_fails() -> None:
    events = run(ScriptedModel([text_answer("-63")]), max_rounds=1)
    assert reasons(events) == ["answer_fails_check"]
    assert outline(events).answer == "-63" and outline(events).status == "answered"


def test_switched_off_or_without_a_check_the_answer_is_taken_at_once() -> None:
    assert outline(run(ScriptedModel([text_answer("-63")]), answer_check=False)).answer == "-63"
    cfg = RunConfig(python=False, consult_first=False)
    events = list(Conductor(ScriptedModel([text_answer("-63")]), config=cfg).run("q"))
    assert outline(events).answer == "-63" and not reasons(events)


def test_with_tools_the_answer_call_gets_a_result_and_the_reason_goes_beside_it() -> None:
    def answer(value: str, call_id: str) -> Completion:
        return Completion(
            "", tool_calls=[ToolCall("final_answer", f'{{"answer": "{value}"}}', call_id)]
        )

    model = ScriptedToolModel([answer("-63", "a1"), answer(RIGHT, "a2")])
    events = run(model)
    second = [e for e in events if isinstance(e, MetaTurnStarted)][1]
    assert second.tool_results[0]["content"] == prompts.ANSWER_NOT_YET
    assert "equals something else" in second.user_message
    assert outline(events).answer == RIGHT


@pytest.mark.parametrize("tail", [0, ANSWER_TAIL_CHARS // 2])
def test_a_turn_that_ends_near_its_answer_ends_by_itself(tail: int) -> None:
    events = run(ScriptedModel([text_answer(RIGHT) + "\n" + "x" * tail]))
    [turn] = [e for e in events if isinstance(e, MetaTurnFinished)]
    assert turn.stop_reason == "end_turn"


def test_a_turn_that_writes_on_past_its_answer_is_stopped_there() -> None:
    events = run(ScriptedModel([text_answer(RIGHT) + "\n```\n" * 500]))
    [turn] = [e for e in events if isinstance(e, MetaTurnFinished)]
    assert turn.stop_reason == "stopped:answered"
    assert len(turn.text) < len(text_answer(RIGHT)) + ANSWER_TAIL_CHARS + 60
    assert outline(events).answer == RIGHT and outline(events).status == "answered"


def test_tools_turns_are_never_stopped_at_an_answer_written_in_text() -> None:
    long = text_answer(RIGHT) + "\n" + "y" * (ANSWER_TAIL_CHARS * 3)
    events = run(ScriptedToolModel([long]))
    [turn] = [e for e in events if isinstance(e, MetaTurnFinished)]
    assert turn.stop_reason == "end_turn"


CODE = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="`\r"), max_size=200
).filter(
    # `<think>` opens reasoning wherever it is written, and reasoning never runs.
    lambda c: RUN_MARKER.lower() not in c.lower() and "think>" not in c.lower() and c.strip()
)


@settings(max_examples=150)
@given(code=CODE, lead=st.sampled_from(["", "Here it is:\n", "Run:\n\n"]))
def test_the_run_line_written_inside_the_fence_runs_the_block_without_it(
    code: str, lead: str
) -> None:
    body = code if code.endswith("\n") else code + "\n"
    assert extract_code(f"{lead}```python\n{body}{RUN_MARKER}\n```") == body
    assert extract_code(f"{lead}```python\n{body}```\n{RUN_MARKER}") == body


def test_consult_first_under_the_grammar_allows_only_calls_in_round_one() -> None:
    model = ScriptedToolModel(['Expert Poet:\n"""\nA haiku.\n"""', text_answer("ok")])
    events = list(Conductor(model, config=RunConfig(python=False, protocol="grammar")).run("q"))
    assert model.grammars == [PROTOCOL_CALLS_GBNF, PROTOCOL_GBNF]
    assert "answer" not in PROTOCOL_CALLS_GBNF.split("\n")[1]
    first = next(e for e in events if isinstance(e, MetaTurnStarted))
    assert prompts.CONSULT_FIRST_TEXT_NOTE.strip() in first.user_message
    assert outline(events).answer == "ok"
