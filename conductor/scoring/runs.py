"""Score a recorded run: the verdict `conductor score` would give its final answer,
as a `RunScored` event recorded after the run's `RunFinished`.

Called when a run ends (the session) and when a run is imported (the importer), so
every run with a target or a checker carries its verdict, the scorer's name and why.
A run whose task names no scorer is scored by exact match when it has a target; a run
with neither gets no event. A system failure (`error`, `interrupted`) is not judged: a
failure of the machine is never a wrong answer.
"""

from __future__ import annotations

import logging

from conductor.scoring import UnknownScorerError, _scorer_name, score
from conductor.scoring.deps import MissingScorerDependency
from conductor.scoring.recognise import recognise
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import UnknownTaskError, get_spec
from conductor_kernel.events import Event, RunScored
from record.correctness import Correctness
from record.fold import RunOutline, outline

log = logging.getLogger("conductor.scoring")

# Statuses that say the system, not the model, ended the run.
NOT_JUDGED = ("error", "interrupted")


def scorer_for(task: str, target: str | None) -> str | None:
    """The scorer's name for a run of `task` (exact match for an unknown task with a
    target); None when nothing can judge it."""
    if task:
        try:
            return _scorer_name(task)
        except UnknownScorerError:
            pass
    return "exact" if target is not None else None


def task_input(task: str, question: str) -> str:
    """The task's input inside a question: a batch asks `spec.prompt(input)`, the
    task's rules then the input, and a scorer reading the input (Game of 24's numbers)
    must not read the rules too."""
    try:
        rules = get_spec(task).prompt("") if task else ""
    except UnknownTaskError:
        return question
    if rules and question.startswith(rules.rstrip() + "\n\n"):
        return question[len(rules.rstrip()) + 2 :]
    return question


def _same_task(a: str, b: str) -> bool:
    """Whether two task names are one task (any case, `-`/`_` alike)."""
    return a.lower().replace("-", "_") == b.lower().replace("-", "_")


def score_run(run: RunOutline | list[Event], *, scored_at: str = "run end") -> RunScored | None:
    """The verdict on a finished run's answer; None if the run has no checker or target,
    or has not finished."""
    if not isinstance(run, RunOutline):
        run = outline(run)
    started, finished = run.started, run.finished
    if started is None or finished is None:
        return None
    task, target = started.task, started.target
    task_text = task_input(task, started.question)
    # A question typed as a task is asked ("Use 4 5 6 10 to make 24") is read as the
    # notebook reads it (conductor/scoring/recognise.py): the input its scorer expects.
    recognised = recognise(started.question)
    if recognised is not None and (not task or _same_task(task, recognised.task)):
        task, task_text = recognised.task, recognised.task_input
        target = target if target is not None else recognised.target
    name = scorer_for(task, target)
    if name is None:
        return None
    verdict = RunScored(run_id=run.run_id, scorer=name, scored_at=scored_at)
    if finished.status in NOT_JUDGED:
        verdict.detail = f"the run ended {finished.status}: a system failure is not judged"
        return verdict
    item = TaskItem(id=run.run_id, input=task_text, target=target)
    try:
        result = score(name, run.answer, item, with_paper=False)
    except MissingScorerDependency as exc:
        verdict.detail = f"not scored: {exc}"
        return verdict
    except Exception as exc:  # a rule that cannot run here (P3 without a sandbox, ...)
        log.info("run %s: the %s scorer could not judge it (%s)", run.run_id, name, exc)
        verdict.detail = f"not scored: {type(exc).__name__}: {exc}"
        return verdict
    verdict.detail = result.detail
    if result.scored:
        verdict.correct = result.correct
        verdict.paper_correct = result.paper_correct
    return verdict


def verdict_of(run: RunOutline) -> Correctness:
    """The run's recorded verdict; a published run recorded before runs were scored at
    import is scored now by its task's rule, as the import would have (its question is
    exactly the task's input)."""
    if run.score is not None or run.started is None:
        return run.correctness
    if run.started.tags.get("source") != "published":
        return run.correctness
    verdict = score_run(run, scored_at="export")
    return Correctness.of_event(verdict) if verdict is not None else run.correctness
