"""The task's own check of a final answer, before the run takes it.

A weak model passes on whatever a program printed (`-63` for a Game of 24) as its
answer. Where the task's scorer can decide an answer without knowing the right one
(Game of 24's arithmetic: the given numbers, each once, and 24), meta-prompting asks it
before taking an answer, and an answer it rejects goes back to the model once, with the
scorer's reason (conductor_kernel/run/meta.py). A check that would need the item's
target never runs here: the run must not be told the answer it is graded against.

The task is the run's (`conductor batch`, a task file), or the one a question surely
is (conductor/scoring/recognise.py); for anything else there is no check.
"""

from __future__ import annotations

import logging

from conductor.scoring import score
from conductor.scoring.task_scoring import BuiltinTaskScoring
from conductor.tasks.files import TaskItem

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


def rejection(question: str, task: str, answer: str) -> str | None:
    """Why the task's own check rejects `answer` to `question`, in a few words; None
    when it accepts it or nothing here can decide."""
    found = _scorer_and_input(question, task)
    if found is None or not answer.strip():
        return None
    scorer, task_input = found
    try:
        result = score(scorer, answer, TaskItem(id="check", input=task_input), with_paper=False)
    except Exception as exc:  # a scorer that fails decides nothing
        log.warning("the %s check of an answer failed: %s", scorer, exc)
        return None
    if not result.scored or result.correct:
        return None
    return result.detail or "it does not meet the task's rule"
