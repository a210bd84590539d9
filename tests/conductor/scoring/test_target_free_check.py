"""The task's own check of a final answer (conductor/scoring/answer_check.py): it agrees
with the task's scorer wherever it speaks, and it never speaks where only the item's
target could decide."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.scoring import score
from conductor.scoring.answer_check import rejection
from conductor.scoring.recognise import recognise
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
    spec = get_spec("multistep_arithmetic_two")
    question = spec.prompt("((-1 + 2) * 3 - (4 - 5)) =")
    assert rejection(question, "multistep_arithmetic_two", "-7") is None  # wrong: not said
    assert rejection("What is 2 + 2?", "", "5") is None
    assert rejection("Use 1 2 3 4 to make 24.", "", "") is None


# The task file's words hold marks too (it&t, o'clock); a question asked in a user's own
# words is recognised as word_sorting only with plain ones.
WORD = st.text(alphabet="abcdefghij&'-", min_size=1, max_size=6).filter(
    lambda w: w.strip("'-&") and w == w.strip("\"'`.,;:*")
)
PLAIN_WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


@st.composite
def sortings(draw: st.DrawFn, word: st.SearchStrategy[str]) -> tuple[list[str], str]:
    """A list of words, and an answer: the list sorted, shuffled, with a word dropped,
    added or repeated, or decorated (a leading `List:`, a full stop, capitals)."""
    listed = draw(st.lists(word, min_size=2, max_size=8))
    answer = sorted(listed)
    change = draw(st.sampled_from(["none", "shuffle", "drop", "add", "repeat", "marks"]))
    if change == "shuffle":
        answer = draw(st.permutations(answer))
    elif change == "drop":
        answer.pop(draw(st.integers(0, len(answer) - 1)))
    elif change == "add":
        answer.insert(draw(st.integers(0, len(answer))), draw(word))
    elif change == "repeat":
        answer.append(answer[-1])
    text = " ".join(answer)
    if change == "marks":
        text = draw(st.sampled_from(["List: ", "", "Answer: "])) + text.upper() + "."
    return listed, text


@settings(max_examples=300)
@given(st.booleans(), st.data())
def test_word_sorting_rejects_exactly_what_its_scorer_marks_wrong(
    asked_as_task: bool, data: st.DataObject
) -> None:
    """The check reads only the question's list, never the target, and agrees with the
    exact scorer against the sorted list whatever the answer."""
    listed, answer = data.draw(sortings(WORD if asked_as_task else PLAIN_WORD))
    given = "List: " + " ".join(listed)
    spec = get_spec("word_sorting")
    question = spec.prompt(given) if asked_as_task else f"Sort these words alphabetically: {given}"
    wrong = rejection(question, "word_sorting" if asked_as_task else "", answer)
    target = " ".join(sorted(listed))
    verdict = score("word_sorting", answer, TaskItem(id="x", input=given, target=target))
    if recognise(question) is None:
        # Not surely word_sorting (a list whose marks the reading does not take): no
        # list to check against, so nothing is said. Plain words are always read.
        assert wrong is None and asked_as_task
        return
    assert (wrong is None) == verdict.correct, (wrong, verdict.detail)
    if wrong is not None:
        assert wrong.startswith(("it leaves out", "it has", "it is not in alphabetical order"))
