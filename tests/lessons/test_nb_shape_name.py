"""A new type's name counts the question, and says so (issue 36, item 13): "new kind:
11 words" read as a list of eleven for a ten-word sorting question."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lessons.forms.tasktypes import shape_name

WORD = st.sampled_from(["sort", "pear", "apple", "list", "make", "use", "words"])
NUMBER = st.integers(0, 999).map(str)


@given(st.lists(WORD | NUMBER, min_size=1, max_size=30))
def test_the_name_counts_the_whole_question(tokens: list[str]) -> None:
    name = shape_name(" ".join(tokens))
    numbers = sum(t.isdigit() for t in tokens)
    words = len(tokens) - numbers
    assert name.startswith("new kind: a question of ")
    assert (f"{words} word" in name) == bool(words)
    assert (f"{numbers} number" in name) == bool(numbers)


def test_a_sorting_question_is_not_named_for_its_list() -> None:
    question = "Sort the following words alphabetically: List: " + " ".join("abcdefghij")
    assert shape_name(question) == "new kind: a question of 16 words"
    assert shape_name("Use 4 5 6 10 to make 24") == "new kind: a question of 3 words and 5 numbers"
