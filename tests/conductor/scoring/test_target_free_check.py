"""The task's own check of a final answer (conductor/scoring/answer_check.py): it agrees
with the task's scorer wherever it speaks, and it never speaks where only the item's
target could decide."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.scoring import score
from conductor.scoring.answer_check import rejection
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import get_spec

NUMBER = st.integers(1, 13)
OPERATOR = st.sampled_from("+-*/")


@st.composite
def expressions(draw: st.DrawFn) -> tuple[list[int], str]:
    numbers = draw(st.lists(NUMBER, min_size=4, max_size=4))
    used = (
        draw(st.permutations(numbers))
        if draw(st.booleans())
        else draw(st.lists(NUMBER, min_size=3, max_size=5))
    )
    text = str(used[0])
    for n in used[1:]:
        text = f"({text} {draw(OPERATOR)} {n})"
    return numbers, text


@settings(max_examples=200)
@given(expressions(), st.booleans())
def test_game_of_24_rejects_exactly_what_its_scorer_marks_wrong(
    case: tuple[list[int], str], asked_as_task: bool
) -> None:
    numbers, answer = case
    puzzle = " ".join(map(str, numbers))
    spec = get_spec("GameOf24")
    question = spec.prompt(puzzle) if asked_as_task else f"Use {puzzle} to make 24."
    wrong = rejection(question, "GameOf24" if asked_as_task else "", answer)
    verdict = score("GameOf24", answer, TaskItem(id="x", input=puzzle), with_paper=False)
    assert (wrong is None) == verdict.correct
    if wrong is not None:
        assert wrong == verdict.detail


def test_a_task_whose_check_needs_its_target_is_never_checked() -> None:
    spec = get_spec("word_sorting")
    question = spec.prompt("List: pear apple fig")
    assert rejection(question, "word_sorting", "pear apple fig") is None
    assert rejection("What is 2 + 2?", "", "5") is None
    assert rejection("Use 1 2 3 4 to make 24.", "", "") is None
