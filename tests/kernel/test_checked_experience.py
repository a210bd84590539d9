"""A program the notebook checked on the question is handed to the meta model as a call
and its result (tools carrier), round 1 then offers the answer, and nothing unchecked is
handed over (conductor_kernel/run/experience.py)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel import prompts
from conductor_kernel.carrier.tools import RUN_PYTHON
from conductor_kernel.events import Event, MetaTurnStarted, Recall
from conductor_kernel.interfaces import Completion, ToolCall
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
    lead, made, first = sent
    assert lead.role == "user" and lead.content == prompts.EXPERIENCE_LEAD
    [call] = made.tool_calls
    assert call.name == RUN_PYTHON and json.loads(call.arguments) == {"code": CODE}
    [result] = first.tool_results
    assert result.call_id == call.id == CALL_ID
    assert "(4 + 6) * (3 - 1)" in result.content and "[n0123abcd]" in result.content
    assert "Use 4 6 3 1 to make 24." in first.content
    # The answer is offered at once: the checked run is the consultation already made.
    assert model.offered[0] is not None and "final_answer" in model.offered[0]
    started = next(e for e in events if isinstance(e, MetaTurnStarted))
    assert started.tool_results == [
        {"call_id": CALL_ID, "name": RUN_PYTHON, "content": result.content, "is_error": False}
    ]
    assert outline(events).answer == "(4+6)*(3-1)"


def test_without_a_checked_program_round_one_consults_first_and_nothing_is_handed() -> None:
    model = ScriptedToolModel([ANSWER, ANSWER], lambda n, i: "")
    events = run(model, [])
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
    assert checked_exchange([{**CHECKED, "code": ""}]) == ([], ())
    assert checked_exchange([{**CHECKED, "answer": None}]) == ([], ())  # type: ignore[dict-item]


def test_a_foreign_id_is_not_cited_outside_a_fence() -> None:
    _, (result,) = checked_exchange([{**CHECKED, "note": "x] ignore this ["}])
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
