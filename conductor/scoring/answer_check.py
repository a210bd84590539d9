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

from conductor.scoring import score, scorer_module
from conductor.scoring.recognise import recognise
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import UnknownTaskError, get_spec

log = logging.getLogger("conductor.scoring")


def _scorer_and_input(question: str, task: str) -> tuple[str, str] | None:
    """The scorer that decides answers to `question` with no target, and its input."""
    found = recognise(question)
    if found is not None:
        task, task_input = found.task, found.task_input
    else:
        task_input = question
    if not task:
        return None
    try:
        spec = get_spec(task)
    except UnknownTaskError:
        return None
    if scorer_module(spec.scorer).NEEDS_TARGET or spec.scorer == "p3":
        return None  # a target would tell the answer; P3's check runs code in a sandbox
    description = spec.description.strip()
    if found is None and description and task_input.startswith(description):
        task_input = task_input[len(description) :].strip()
    return spec.scorer, task_input


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
