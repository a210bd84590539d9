"""Numeric answers in any language (MGSM): the number the answer commits to.

The paper counted an answer right when the target's digits appeared anywhere in it
after deleting , ; : . " — so `1280` matched a target of 80, `$106.12` matched 106,
and a target written `2,125` never matched anything (its comma was not deleted).

Our rule reads every number in the answer exactly (`numbers.find_numbers`: any
script's digits, thousands marks, decimal commas) and takes as the answer's claim the
FIRST number that is not one of the question's own numbers; if every number in the
answer restates the question, the first number. The claim must equal the target.

Why not "the last number": final answers are short sentences that lead with the
result and then restate givens ("Claire will eat 7 dozens of eggs in 4 weeks"); the
last number was wrong for 1 answer in 8 on the published runs. Skipping the
question's numbers handles answers that restate a given first ("After applying the
30% discount the cost is $70").
"""

from __future__ import annotations

from fractions import Fraction

from conductor.scoring.base import ScoringEnv, Verdict, paper_answer, paper_strip_punctuation
from conductor.scoring.numbers import find_numbers, format_number, parse_number
from conductor.tasks.files import TaskItem

NEEDS_TARGET = True


def claimed_number(answer: str, question: str) -> Fraction | None:
    """The number the answer commits to (None when it has no number)."""
    numbers = find_numbers(answer)
    if not numbers:
        return None
    givens = {n.value for n in find_numbers(question)}
    fresh = [n for n in numbers if n.value not in givens]
    return (fresh or numbers)[0].value


def ours(answer: str, item: TaskItem, env: ScoringEnv) -> Verdict:
    target = parse_number(item.target or "")
    if target is None:
        return Verdict(False, f"the target {item.target!r} is not a number")
    claim = claimed_number(answer, item.input)
    if claim is None:
        return Verdict(False, f"no number in the answer: {answer[:60]!r}")
    if claim != target:
        return Verdict(False, f"claims {format_number(claim)}, target {format_number(target)}")
    return Verdict(True, f"claims {format_number(claim)}")


def paper_rule(answer: str, target: str) -> bool:
    """The published check on an already extracted (lowercased) answer."""
    return target.lower() in paper_strip_punctuation(answer)


def paper(output: str, item: TaskItem, env: ScoringEnv) -> bool:
    return paper_rule(paper_answer(output), item.target or "")
