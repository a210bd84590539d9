"""Learned experience applies only where it fits, over generated near misses of every
supported form (tests/equipment/perturb.py), not a list of cases written beside the code.

- a tool carries the whole form of its question: a question whose task changed (another
  target, an instruction before or after, a decimal, a capital, another operator...)
  never parses under it, while its own form with other data does;
- recognition of a built-in task is the same full parse: no near miss is taken for one.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from nb_support import SCORING

from conductor.scoring.recognise import recognise
from equipment.perturb import (
    FORMS,
    KINDS,
    Base,
    Perturbed,
    base_question,
    generate,
    perturbed,
    program_for_base,
)
from lessons.forms.tool_making import make_tool
from lessons.forms.tools import Tool, applies, render_form


def tool_for(base: Base) -> Tool:
    """The tool a clean program that answered `base` makes."""
    code, printed = program_for_base(base)
    tool = make_tool(base.question, code, printed + "\n", printed, scoring=SCORING)
    assert tool is not None, base
    return tool


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(perturbed(FORMS, ("task",)))
def test_a_tool_is_never_offered_for_a_question_whose_task_changed(case: Perturbed) -> None:
    tool = tool_for(case.base)
    assert applies(tool, case.base.question, scoring=SCORING)  # its own question parses
    assert not applies(tool, case.question, scoring=SCORING), (case.kind, case.question)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(perturbed(("game24", "sorting", "arithmetic", "word_problem"), ("data",)))
def test_a_tool_applies_to_its_own_form_with_other_data(case: Perturbed) -> None:
    assert applies(tool_for(case.base), case.question, scoring=SCORING), case.question


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(perturbed(FORMS, ("task",)))
def test_no_near_miss_is_recognised_as_a_built_in_task(case: Perturbed) -> None:
    assert recognise(case.question) is None, (case.kind, case.question)


@pytest.mark.parametrize("form", ["game24", "sorting", "arithmetic"])
def test_the_generated_bases_are_recognised(form: str) -> None:
    rng = random.Random(3)
    for _ in range(50):
        base = base_question(form, rng)
        found = recognise(base.question)
        assert found is not None, base.question
        if form == "sorting":
            assert found.target == " ".join(sorted(base.words))


def test_a_tool_is_shown_as_the_form_it_answers() -> None:
    base = Base("game24", "Use 4 5 6 10 to make 24", (4, 5, 6, 10))
    assert render_form(tool_for(base)) == ("use <number> <number> <number> <number> to make 24")


@pytest.mark.slow
def test_the_yardstick_covers_twenty_kinds_reproducibly() -> None:
    drawn = generate(11, 2000)
    assert len(drawn) == 2000 and drawn == generate(11, 2000)
    assert len({p.kind for p in drawn}) == len(KINDS) >= 20
    assert {p.base.form for p in drawn} == set(FORMS)
