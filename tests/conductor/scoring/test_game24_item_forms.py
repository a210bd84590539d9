"""The Game of 24 checker judges an item by its puzzle, however the item asks it, and
leaves unscored an item it cannot read (conductor/scoring/game24.py).

A task file written as a user would ("Use 4 7 8 8 to make 24") once had the goal's 24
read as a fifth given number, so every right answer counted wrong. Properties:

- metamorphic: over generated puzzles and answers (right and wrong), the verdict on an
  item asked in any recognised form equals the verdict on the bare numbers;
- generated near misses (tests/equipment/perturb.py) that do not ask a Game of 24 puzzle
  are not scored at all, never scored wrong or right.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.scoring import score
from conductor.scoring.recognise import recognise
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import BUILTIN
from equipment.perturb import perturbed

ASKED = (
    "{n}",
    "Use {n} to make 24",
    "use {n} to make 24.",
    "Combine {n}, each exactly once, to get 24",
    "Game of 24: {n}",
    BUILTIN["GameOf24"].description.strip() + "\n\n{n}",
)


def solution(numbers: list[int]) -> str | None:
    """An expression over `numbers` equal to 24, by brute force; None when none."""
    for a, b, c, d in set(itertools.permutations(numbers)):
        for x, y, z in itertools.product("+-*/", repeat=3):
            for shape in (
                "(({a}{x}{b}){y}{c}){z}{d}",
                "({a}{x}{b}){y}({c}{z}{d})",
                "({a}{x}({b}{y}{c})){z}{d}",
                "{a}{x}(({b}{y}{c}){z}{d})",
                "{a}{x}({b}{y}({c}{z}{d}))",
            ):
                text = shape.format(a=a, b=b, c=c, d=d, x=x, y=y, z=z)
                try:
                    value = eval(  # digits and + - * / only, built above
                        text.replace("/", "*Fraction(1)/"), {"Fraction": Fraction}
                    )
                except ZeroDivisionError:
                    continue
                if value == 24:
                    return text
    return None


@settings(max_examples=60)
@given(
    numbers=st.lists(st.integers(1, 13), min_size=4, max_size=4),
    form=st.sampled_from(ASKED),
    tamper=st.booleans(),
)
def test_the_verdict_does_not_depend_on_how_the_item_asks(
    numbers: list[int], form: str, tamper: bool
) -> None:
    listed = " ".join(map(str, numbers))
    answer = solution(numbers) or f"{listed.replace(' ', ' + ')}"
    if tamper:  # a wrong answer: one number changed
        answer = answer.replace(str(numbers[0]), str(numbers[0] + 1), 1)
    bare = score("game24", answer, TaskItem(id="bare", input=listed, target=None))
    asked = score("game24", answer, TaskItem(id="asked", input=form.format(n=listed), target=None))
    assert bare.scored and asked.scored, asked.detail
    assert (asked.correct, asked.paper_correct) == (bare.correct, bare.paper_correct)


@settings(max_examples=80)
@given(perturbed(forms=("game24",)))
def test_an_item_that_is_not_a_puzzle_is_left_unscored(near) -> None:
    question = near.question
    if recognise(question) is not None:
        return  # still a Game of 24 question (with its own numbers): judged as one
    answer = solution(list(near.base.numbers)) or "1 + 2"
    result = score("game24", answer, TaskItem(id="near", input=question, target=None))
    assert not result.scored and "not scored" in result.detail, (question, result)


def test_a_puzzle_asked_in_words_is_judged_right_when_it_is_right() -> None:
    item = TaskItem(id="words", input="Use 4 7 8 8 to make 24", target=None)
    result = score("game24", "(7 - 8 / 8) * 4", item)
    assert result.scored and result.correct, result.detail
