"""The compact prompt of the carriers that hold a turn to its forms (issue 34, "prompts
for small models"): its one example call is made from the question itself, so a model
that copies what it is shown consults on this question (Qwen2.5-Coder-1.5B copied the
text prompt's Expert Geometer call, triangle and all); the text carrier keeps the
paper's prompt. Under the grammar a turn is one call or the answer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conductor_kernel.carrier import compact_prompt
from conductor_kernel.events import MetaTurnStarted
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedToolModel

QUESTIONS = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters='"'), min_size=1, max_size=300
).filter(str.strip)


def first_message(protocol: str, question: str, *, python: bool) -> str:
    answer = '>> FINAL ANSWER:\n"""\nok\n"""'
    model = ScriptedToolModel(['Expert Poet:\n"""\nA haiku.\n"""', answer], lambda n, i: "ok")
    config = RunConfig(python=python, protocol=protocol, max_rounds=3)
    events = list(Conductor(model, config=config).run(question))
    return next(e for e in events if isinstance(e, MetaTurnStarted)).user_message


@pytest.mark.parametrize("protocol", ["grammar", "tools"])
@given(question=QUESTIONS, python=st.booleans())
def test_the_example_call_is_made_from_the_question(
    protocol: str, question: str, python: bool
) -> None:
    first = compact_prompt.compact_first_message(
        question, tools=protocol == "tools", python=python, max_rounds=3
    )
    expert = "Expert Python" if python else "Expert Solver"
    example_at = first.index(expert)
    assert f"Task: {question.strip()}" in first[example_at:]  # the question's own call
    assert first.endswith(f"Question:\n{question}")
    assert "Geometer" not in first and "triangle" not in first  # no other task's call


@pytest.mark.parametrize("protocol", ["grammar", "tools"])
def test_the_carriers_that_hold_the_form_send_the_compact_prompt(protocol: str) -> None:
    question = "Use 4 5 6 10 to make 24"
    first = first_message(protocol, question, python=True)
    assert f"Expert Python{':' if protocol == 'grammar' else chr(34)}" in first
    assert f"Task: {question}" in first
    assert "consult it first" in first  # which questions want a program


def test_the_text_carrier_keeps_the_papers_prompt() -> None:
    first = first_message("text", "Use 4 5 6 10 to make 24", python=True)
    assert "Expert Geometer" in first and "Task: Use 4 5 6 10" not in first


def test_a_long_question_is_not_repeated_in_the_example() -> None:
    question = "word " * (compact_prompt.EXAMPLE_QUESTION_CHARS // 4)
    first = compact_prompt.compact_first_message(question, tools=False, python=True, max_rounds=3)
    assert first.count(question) == 1 and "(copy the whole question here)" in first


def test_the_last_round_under_the_grammar_allows_only_the_answer() -> None:
    from conductor_kernel.carrier.grammar import (
        PROTOCOL_ANSWER_GBNF,
        PROTOCOL_CALLS_GBNF,
        PROTOCOL_GBNF,
    )

    call = 'Expert Python:\n"""\nSort pear apple.\n"""'
    model = ScriptedToolModel(
        [call, call, '>> FINAL ANSWER:\n"""\napple pear\n"""'], lambda n, i: "ok"
    )
    config = RunConfig(python=False, protocol="grammar", max_rounds=3, last_round_notice=False)
    events = list(Conductor(model, config=config).run("Sort pear apple."))
    assert model.grammars == [PROTOCOL_CALLS_GBNF, PROTOCOL_GBNF, PROTOCOL_ANSWER_GBNF]
    assert "Expert" not in PROTOCOL_ANSWER_GBNF.split("\n")[1]
    assert any(e.kind == "final_answer" for e in events)
