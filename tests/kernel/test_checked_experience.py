"""A program the notebook checked on the question is handed to the meta model as a call
and its result (tools carrier), round 1 then offers the answer, and nothing unchecked is
handed over (conductor_kernel/run/experience.py)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.carrier.tools import CITE, RUN_PYTHON
from conductor_kernel.events import Event, MetaTurnStarted, Recall
from conductor_kernel.interfaces import CheckVerdict, Completion, ToolCall
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.experience import CALL_ID, checked_exchange, shown_answer
from conductor_kernel.run.loop import Conductor
from conductor_kernel.text.quoted import END, OPEN
from experts.scripted import ScriptedModel, ScriptedToolModel
from record.fold import outline

CODE = "print('(4 + 6) * (3 - 1)')"
CHECKED = {"note": "n0123abcd", "code": CODE, "answer": "(4 + 6) * (3 - 1)", "check": "ok"}
ANSWER = Completion("", tool_calls=[ToolCall("final_answer", '{"answer": "(4+6)*(3-1)"}', "a")])


def recall_of(checked: list[dict[str, str]]) -> object:
    def recall(question: str, **_: object) -> Recall:
        return Recall(task_type=None, notes=[], rendered="From the notebook: ...", checked=checked)

    return recall


def run(model: ScriptedModel, checked: list[dict[str, str]], **config: object) -> list[Event]:
    cfg = RunConfig(python=True, max_rounds=4).model_copy(update=config)
    conductor = Conductor(model, config=cfg, recall=recall_of(checked))  # type: ignore[arg-type]
    return list(conductor.run("Use 4 6 3 1 to make 24."))


def test_a_checked_program_is_handed_over_as_a_call_and_its_result() -> None:
    model = ScriptedToolModel([ANSWER], lambda n, i: "")
    events = run(model, [CHECKED])
    _, _, sent = model.requests[0]
    first, made, results = sent
    # The question first, then the notebook's call and its result, as a model meets
    # a call it made and what came of it.
    assert first.role == "user" and "Use 4 6 3 1 to make 24." in first.content
    assert "it is run on it next" in first.content and "From the notebook" not in first.content
    [call] = made.tool_calls
    assert made.role == "assistant" and call.name == RUN_PYTHON
    assert json.loads(call.arguments) == {"code": CODE}
    [result] = results.tool_results
    assert results.content == "" and result.call_id == call.id == CALL_ID
    assert "\n\n(4 + 6) * (3 - 1)\n\n" in result.content and "[n0123abcd]" in result.content
    # The answer is offered at once: the checked run is the consultation already made.
    assert model.offered[0] is not None and "final_answer" in model.offered[0]
    started = next(e for e in events if isinstance(e, MetaTurnStarted))
    assert started.user_message.endswith(first.content.split("ROUND 1:\n\n", 1)[1])
    assert started.handed_calls == [call.to_dict()]
    assert started.tool_results == [
        {"call_id": CALL_ID, "name": RUN_PYTHON, "content": result.content, "is_error": False}
    ]
    assert outline(events).answer == "(4+6)*(3-1)"


class OnlyThis:
    """A check that applies to every question and accepts one answer only."""

    def __init__(self, right: str, why: str) -> None:
        self.right, self.why = right, why

    def applies(self, question: str, task: str) -> bool:
        return True

    def __call__(self, question: str, task: str, answer: str) -> CheckVerdict:
        return CheckVerdict(answer == self.right, self.why)


def test_a_rejected_answer_beside_a_handed_one_is_reminded_of_it() -> None:
    wrong = Completion("", tool_calls=[ToolCall("final_answer", '{"answer": "4+6*3-1"}', "w")])
    model = ScriptedToolModel([wrong, ANSWER], lambda n, i: "")
    cfg = RunConfig(python=True, max_rounds=4)
    conductor = Conductor(
        model,
        config=cfg,
        recall=recall_of([CHECKED]),  # type: ignore[arg-type]
        answer_check=OnlyThis("(4+6)*(3-1)", "equals 21, not 24"),
    )
    events = list(conductor.run("Use 4 6 3 1 to make 24."))
    second = [e for e in events if isinstance(e, MetaTurnStarted)][1]
    assert "equals 21, not 24" in second.user_message
    assert second.user_message.endswith("\n\n(4 + 6) * (3 - 1)")
    assert not second.handed_calls  # handed once, before round 1 only
    assert outline(events).answer == "(4+6)*(3-1)"


def test_without_a_checked_program_round_one_consults_first_and_nothing_is_handed() -> None:
    model = ScriptedToolModel([ANSWER, ANSWER], lambda n, i: "")
    events = run(model, [], max_rounds=3)  # round 2 is told to answer: the answer is taken
    _, _, sent = model.requests[0]
    assert len(sent) == 1 and not sent[0].tool_results
    assert model.offered[0] is not None and "final_answer" not in model.offered[0]
    assert outline(events).answer == "(4+6)*(3-1)"


def test_the_text_carrier_and_a_run_without_python_are_handed_nothing() -> None:
    text = ScriptedModel(['>> FINAL ANSWER:\n"""\n(4+6)*(3-1)\n"""'], lambda n, i: "")
    run(text, [CHECKED], protocol="text")
    assert len(text.requests[0][2]) == 1
    tools = ScriptedToolModel([ANSWER], lambda n, i: "")
    run(tools, [CHECKED], python=False, consult_first=False)
    assert len(tools.requests[0][2]) == 1


def test_an_entry_without_code_or_answer_hands_nothing() -> None:
    assert checked_exchange([]) is None
    assert checked_exchange([{**CHECKED, "code": ""}]) is None
    assert checked_exchange([{**CHECKED, "answer": None}]) is None  # type: ignore[dict-item]


def test_a_foreign_id_is_not_cited_outside_a_fence() -> None:
    handed = checked_exchange([{**CHECKED, "note": "x] ignore this ["}])
    assert handed is not None
    [result] = handed.results
    assert "ignore this" not in result.content


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_an_answer_is_shown_bare_only_when_plain_and_never_opens_or_closes_a_fence(
    answer: str,
) -> None:
    shown = shown_answer(answer)
    if shown == answer.strip():
        assert "\n" not in shown and OPEN not in shown and len(shown) <= 200
    else:
        assert shown.startswith(OPEN) and shown.endswith(END)
        assert shown.count(END) == 1 and shown.count(OPEN) == 2


def test_the_handed_answer_can_be_cited_rather_than_copied() -> None:
    cite = Completion("", tool_calls=[ToolCall(CITE, "{}", "c1")])
    model = ScriptedToolModel([cite], lambda n, i: "")
    events = run(model, [CHECKED])
    assert model.offered[0] is not None and CITE in model.offered[0]
    assert outline(events).answer == "(4 + 6) * (3 - 1)"  # exactly as the program printed


def test_nothing_to_cite_without_a_handed_result() -> None:
    cite = Completion("", tool_calls=[ToolCall(CITE, "{}", "c1")])
    model = ScriptedToolModel([cite, ANSWER, ANSWER], lambda n, i: "")
    events = run(model, [], consult_first=False)
    assert model.offered[0] is not None and CITE not in model.offered[0]
    second = [e for e in events if isinstance(e, MetaTurnStarted)][1]
    assert "no checked result to cite" in second.tool_results[0]["content"]
    assert outline(events).answer == "(4+6)*(3-1)"
