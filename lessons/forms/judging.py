"""A run's answer put to its task's scorer: which scorer, which target counts, and the
verdict. The scorers are the application's (`conductor_kernel.interfaces.TaskScoring`,
given to the notebook); a notebook given none knows no task and scores no answer.
"""

from __future__ import annotations

import re

from conductor_kernel.interfaces import Sandbox, TaskJudge, TaskScoring

_CHOICE_TARGET = re.compile(r"^\(?[A-Za-z]\)$")
_NUMBER_TARGET = re.compile(r"^-?[\d,]*\d(?:\.\d+)?$")


def judge_by_target(target: str) -> TaskJudge:
    """A run without a task but with a target: the scorer its form calls for."""
    text = target.strip()
    if _CHOICE_TARGET.match(text):
        scorer = "choice"
    elif _NUMBER_TARGET.match(text):
        scorer = "numeric"
    else:
        scorer = "exact"
    return TaskJudge(f"({scorer})", scorer, "", True)


def usable_target(target: str | None, judge: TaskJudge | None) -> str | None:
    """The target as a known answer, or None when it is empty or only a rubric."""
    if target is None or not target.strip():
        return None
    if judge is not None and not judge.needs_target:
        return None  # the scorer decides alone; what the file holds is a rubric at most
    return target


def scorer_verdict(
    scoring: TaskScoring,
    judge: TaskJudge,
    question: str,
    answer: str,
    target: str | None,
    *,
    sandbox: Sandbox | None = None,
) -> bool | None:
    """The task scorer's decision, or None when it cannot decide here."""
    if judge.needs_target and target is None:
        return None
    if judge.scorer == "p3" and sandbox is None:
        return None  # sat() only ever runs in the sandbox
    return scoring.verdict(judge, question, answer, target, sandbox)
