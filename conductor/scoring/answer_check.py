"""The task's own check of a final answer, before the run takes it.

A weak model passes on whatever a program printed (`-63` for a Game of 24) as its
answer. Where the task's scorer can decide an answer without knowing the right one
(Game of 24's arithmetic: the given numbers, each once, and 24), or where the task's
rule can be checked on the answer itself (word_sorting: the list's words, each as often,
in alphabetical order: a check of the answer, not the sorting done again), meta-prompting
asks it before taking an answer, and an answer it rejects goes back to the model once, with the
scorer's reason (conductor_kernel/run/meta.py). A check that would need the item's
target never runs here: the run must not be told the answer it is graded against.

The task is the run's (`conductor batch`, a task file), or the one a question surely
is (conductor/scoring/recognise.py); for anything else there is no check.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter

from conductor.scoring import score
from conductor.scoring.exact import words
from conductor.scoring.task_scoring import BuiltinTaskScoring
from conductor.tasks.files import TaskItem
from conductor_kernel.interfaces import CheckVerdict

log = logging.getLogger("conductor.scoring")
_SCORING = BuiltinTaskScoring()


def _scorer_and_input(question: str, task: str) -> tuple[str, str] | None:
    """The scorer that decides answers to `question` with no target, and its input: the
    task the question surely is, else the run's (as the notebook's checks find them)."""
    recognised = _SCORING.recognise(question)
    if recognised is not None:
        judge, task_input = recognised.judge, recognised.task_input
    else:
        found = _SCORING.judge_for(task)
        if found is None:
            return None
        judge, task_input = found, found.task_input(question)
    if judge.needs_target or judge.scorer == "p3":
        return None  # a target would tell the answer; P3's check runs code in a sandbox
    return judge.scorer, task_input


def verdict(question: str, task: str, answer: str) -> CheckVerdict | None:
    """What the task's own check says of `answer` to `question`: accepted, or rejected
    with the reason in a few words; None when nothing here can decide (no check for the
    question, an empty answer, or a scorer that could not read the answer)."""
    if not answer.strip():
        return None
    sorting = _sorting_input(question)
    if sorting is not None:
        problem = word_order_problem(sorting, answer)
        return CheckVerdict(accepted=problem is None, why=problem or "")
    found = _scorer_and_input(question, task)
    if found is None:
        return None
    scorer, task_input = found
    try:
        result = score(scorer, answer, TaskItem(id="check", input=task_input), with_paper=False)
    except Exception as exc:  # a scorer that fails decides nothing
        log.warning("the %s check of an answer failed: %s", scorer, exc)
        return None
    if not result.scored:
        return None
    if result.correct:
        return CheckVerdict(accepted=True)
    return CheckVerdict(accepted=False, why=result.detail or "it does not meet the task's rule")


class TaskAnswerCheck:
    """The check as the conductor asks it (interfaces.AnswerCheck)."""

    def applies(self, question: str, task: str) -> bool:
        """Whether the check decides answers to `question` (of `task`) at all."""
        return _sorting_input(question) is not None or _scorer_and_input(question, task) is not None

    def __call__(self, question: str, task: str, answer: str) -> CheckVerdict | None:
        return verdict(question, task, answer)


def rejection(question: str, task: str, answer: str) -> str | None:
    """Why the task's own check rejects `answer`; None when it accepts it or cannot
    decide."""
    found = verdict(question, task, answer)
    return None if found is None or found.accepted else found.why


def _sorting_input(question: str) -> list[str] | None:
    """The words of a question that is surely word_sorting (a task file's line after the
    task's rules, or a plain request to sort listed words), or None: a question read
    otherwise is no list to check against."""
    recognised = _SCORING.recognise(question)
    if recognised is None or recognised.judge.name != "word_sorting":
        return None
    return recognised.task_input.split()


_SHOWN = 5  # words named at most in a reason


def word_order_problem(listed: list[str], answer: str) -> str | None:
    """What breaks word_sorting's rule in `answer`: a word the list does not hold, one
    it leaves out, or two words out of alphabetical order; None when it keeps the rule.
    Words are read as the exact scorer reads them (case and the marks around a word
    aside)."""
    given = words(answer)
    wanted = Counter(words(" ".join(listed)))
    extra = list((Counter(given) - wanted).elements())
    missing = list((wanted - Counter(given)).elements())
    parts = []
    if missing:
        parts.append(f"it leaves out {len(missing)} of the list's words: {_named(missing)}")
    if extra:
        plural = "words" if len(extra) != 1 else "word"
        parts.append(f"it has {len(extra)} {plural} the list does not: {_named(extra)}")
    if parts:
        return "; ".join(parts)
    for before, after in itertools.pairwise(given):
        if before > after:
            return f"it is not in alphabetical order: {after!r} comes before {before!r}"
    return None


def _named(found: list[str]) -> str:
    return ", ".join(found[:_SHOWN]) + (", ..." if len(found) > _SHOWN else "")
