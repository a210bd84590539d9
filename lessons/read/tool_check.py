"""A fitting tool's answer to the question as asked, checked before recall offers it.

That a question parses completely under a tool's form says the program can read it, not
that its answer is right here: a search that finds 24 may find nothing for other numbers,
a sort may meet a word it mishandles. Where something decides this question's answer
without a target (the task's checker: Game of 24's arithmetic, a legal mating move, P3's
`sat`; or a question that surely is a built-in task, whose known answer its form fixes),
recall runs the tool on the question in a fresh sandbox and puts its answer to that
check first. A tool whose answer fails is not shown; one whose answer passes is shown
with it, as checked on this question. Where nothing decides (no checker, or the sandbox
failed), the tool is shown as before: a program, its answer still to be checked.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from conductor_kernel.interfaces import Sandbox, TaskJudge, TaskScoring
from lessons.forms.judging import scorer_verdict
from lessons.forms.problems import core_input
from lessons.forms.toolbox import TEST_TIMEOUT_S, StoredTool
from lessons.forms.tools import answer_from, program_for

log = logging.getLogger("conductor.notebook")


@dataclass(frozen=True)
class ToolCheck:
    """What a tool did on the question being asked."""

    verdict: bool | None
    """True: the check accepts its answer; False: it rejects it, or the tool printed
    none; None: nothing decides here (no checker, or the sandbox failed)."""
    answer: str | None = None
    why: str = ""


def checker_for(
    question: str, task: str, scoring: TaskScoring
) -> tuple[TaskJudge, str, str | None] | None:
    """What decides an answer to `question` on its own: (judge, its input, known answer)
    for a question that surely is a built-in task, else the tool's task's judge when it
    needs no target; None when only a target could."""
    recognised = scoring.recognise(question)
    if recognised is not None:
        return recognised.judge, recognised.task_input, recognised.target
    judge = scoring.judge_for(task)
    if judge is not None and not judge.needs_target:
        return judge, question, None
    return None


def check_tool_here(
    stored: StoredTool, question: str, sandbox: Sandbox, *, scoring: TaskScoring
) -> ToolCheck:
    """Run the tool on `question` in `sandbox` and judge its answer, where anything can."""
    checker = checker_for(question, stored.task, scoring)
    if checker is None:
        return ToolCheck(None, why="no checker decides this question's answer")
    judge, task_input, target = checker
    try:
        result = sandbox.run(
            program_for(stored.tool), timeout=TEST_TIMEOUT_S, stdin=core_input(question, scoring)
        )
    except Exception as exc:  # a sandbox that breaks costs the check, never the recall
        log.warning("a recalled tool could not be checked in the sandbox: %s", exc)
        return ToolCheck(None, why=f"the sandbox failed ({type(exc).__name__})")
    if result.infra_error:
        return ToolCheck(None, why=f"the sandbox failed ({result.infra_error})")
    answer = answer_from(stored.tool, result.stdout) if result.ok else None
    if answer is None:
        return ToolCheck(False, why="it printed no answer for this question")
    try:
        verdict = scorer_verdict(scoring, judge, task_input, answer, target, sandbox=sandbox)
    except Exception as exc:
        log.warning("a recalled tool's answer could not be judged: %s", exc)
        return ToolCheck(None, answer, f"the scorer failed ({type(exc).__name__})")
    if verdict is None:
        return ToolCheck(None, answer, "the check could not decide here")
    why = f"the {judge.name} check {'accepts' if verdict else 'rejects'} it"
    return ToolCheck(verdict, answer, why)
