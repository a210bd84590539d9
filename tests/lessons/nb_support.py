"""Helpers for the notebook tests: finished runs as events, without running a model, and
the application's task scorers, handed to the notebook as the application does."""

from __future__ import annotations

from typing import Any

from conductor.scoring.task_scoring import BuiltinTaskScoring
from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    MetaTurnFinished,
    Recall,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import ExecResult, Usage
from lessons.values import Verification
from lessons.write.verify import verify_run
from record.fold import outline

SCORING = BuiltinTaskScoring()


def verify_events(events: list[Event], **options: Any) -> Verification:
    """`verify_run` on a run's events, judged with the application's scorers."""
    return verify_run(outline(events), scoring=options.pop("scoring", SCORING), **options)


def run_events(
    run_id: str,
    question: str,
    answer: str | None,
    *,
    target: str | None = None,
    code: str | None = None,
    stdout: str | None = None,
    experts: tuple[str, ...] = (),
    expert_replies: tuple[str, ...] = (),
    recalled: list[dict] | None = None,
    status: str | None = None,
    task: str = "",
    instructions: tuple[str, ...] = (),
    meta: tuple[str, ...] = (),
    spent: Usage | None = None,
) -> list[Event]:
    """The events of a finished run: optional code run, expert calls, recall, answer."""
    events: list[Event] = [RunStarted(run_id=run_id, question=question, target=target, task=task)]
    if recalled is not None:
        events.append(Recall(run_id=run_id, notes=recalled, rendered="(notes)"))
    if code is not None:
        call = ExpertCallStarted(run_id=run_id, name="Expert Python", is_python=True, round=1)
        result = ExecResult(stdout=stdout if stdout is not None else f"{answer}\n", exit_code=0)
        events += [
            call,
            SandboxExec(run_id=run_id, parent_id=call.id, code=code, result=result),
            ExpertCallFinished(run_id=run_id, parent_id=call.id, name="Expert Python", text="ok"),
        ]
    for i, name in enumerate(experts):
        instruction = instructions[i] if i < len(instructions) else ""
        call = ExpertCallStarted(
            run_id=run_id, name=name, round=2, index=i, instruction=instruction
        )
        reply = expert_replies[i] if i < len(expert_replies) else "done"
        events += [
            call,
            ExpertCallFinished(run_id=run_id, parent_id=call.id, name=name, text=reply),
        ]
    for i, text in enumerate(meta, start=1):
        events.append(MetaTurnFinished(run_id=run_id, round=i, text=text))
    if answer is not None:
        events.append(FinalAnswer(run_id=run_id, answer=answer, round=3))
    calls = len(experts) + (code is not None)
    events.append(
        RunFinished(
            run_id=run_id,
            status=status or ("answered" if answer is not None else "limit"),
            final_answer=answer,
            rounds=3,
            expert_calls=calls,
            # What a run of three rounds spends: learning's calls are bounded by it.
            usage=spent or Usage(input_tokens=9_000, output_tokens=1_500, calls=3 + calls),
        )
    )
    return events


SORT_CODE = "words = {words!r}\nprint(' '.join(sorted(words)))\n"


def sort_run(run_id: str, words: list[str], **kwargs) -> list[Event]:
    """A word-sorting run that solved its question with a program, its target known."""
    question = "Sort the following words alphabetically: List: " + " ".join(words)
    answer = " ".join(sorted(words))
    kwargs.setdefault("task", "word_sorting")
    kwargs.setdefault("target", answer)
    return run_events(run_id, question, answer, code=SORT_CODE.format(words=words), **kwargs)
