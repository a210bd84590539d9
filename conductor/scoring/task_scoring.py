"""The task scorers as the notebook sees them (`conductor_kernel.interfaces.TaskScoring`).

Built once, in conductor/session/notebook_hooks.py, and handed to the notebook, so it judges a
run exactly as `conductor score` and `conductor batch` do.
"""

from __future__ import annotations

import logging
from fractions import Fraction

from conductor.scoring import SCORERS, score, scorer_module
from conductor.scoring.numeric import claimed_number
from conductor.scoring.recognise import recognise
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import BUILTIN, UnknownTaskError, get_spec
from conductor_kernel.interfaces import RecognisedTask, Sandbox, TaskJudge

log = logging.getLogger("conductor.notebook")


class BuiltinTaskScoring:
    """The built-in tasks and scorers of this application."""

    def judge_for(self, task: str) -> TaskJudge | None:
        if not task:
            return None
        try:
            spec = get_spec(task)
            name, scorer, description = spec.name, spec.scorer, spec.description
        except UnknownTaskError:
            if task not in SCORERS:
                return None
            name, scorer, description = task, task, ""
        return TaskJudge(name, scorer, description, bool(scorer_module(scorer).NEEDS_TARGET))

    def verdict(
        self,
        judge: TaskJudge,
        question: str,
        answer: str,
        target: str | None,
        sandbox: Sandbox | None,
    ) -> bool | None:
        item = TaskItem(id="nb", input=judge.task_input(question), target=target)
        try:
            result = score(judge.scorer, answer, item, sandbox=sandbox, with_paper=False)
        except Exception as exc:  # a scorer failure leaves the answer unjudged
            log.warning("the %s scorer failed on a run: %s", judge.scorer, exc)
            return None
        return result.correct if result.scored else None

    def task_descriptions(self) -> tuple[str, ...]:
        return tuple(spec.description for spec in BUILTIN.values())

    def claimed_number(self, answer: str, question: str) -> Fraction | None:
        return claimed_number(answer, question)

    def recognise(self, question: str) -> RecognisedTask | None:
        found = recognise(question)
        judge = self.judge_for(found.task) if found is not None else None
        if found is None or judge is None:
            return None
        return RecognisedTask(judge, found.task_input, found.target)
