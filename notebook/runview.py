"""A finished run's events boiled down to what the notebook learns from."""

from __future__ import annotations

from dataclasses import dataclass, field

from conductor.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    Recall,
    RunFinished,
    RunStarted,
    SandboxExec,
)


@dataclass
class ExpertStep:
    name: str
    round: int
    is_python: bool
    ran_code: bool = False
    code_ok: bool = False


@dataclass
class CodeRun:
    code: str
    ok: bool
    stdout: str
    round: int


@dataclass
class RunView:
    run_id: str
    question: str
    task: str = ""
    target: str | None = None
    model: str = ""
    answer: str | None = None
    status: str = ""
    rounds: int = 0
    steps: list[ExpertStep] = field(default_factory=list)
    code_runs: list[CodeRun] = field(default_factory=list)
    recall: Recall | None = None

    @property
    def answered(self) -> bool:
        return self.answer is not None and bool(self.answer.strip())

    @property
    def roster(self) -> list[str]:
        """Expert names in the order first consulted."""
        seen: list[str] = []
        for step in self.steps:
            if step.name not in seen:
                seen.append(step.name)
        return seen


def view_run(events: list[Event]) -> RunView | None:
    """The run's view, or None when the events hold no started run."""
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    if started is None:
        return None
    view = RunView(
        run_id=started.run_id,
        question=started.question,
        task=started.task,
        target=started.target,
        model=started.model,
    )
    calls: dict[str, ExpertStep] = {}
    rounds_by_call: dict[str, int] = {}
    for event in events:
        if isinstance(event, ExpertCallStarted):
            step = ExpertStep(event.name, event.round, event.is_python)
            calls[event.id] = step
            rounds_by_call[event.id] = event.round
            view.steps.append(step)
        elif isinstance(event, SandboxExec):
            step = calls.get(event.parent_id or "")
            round_no = rounds_by_call.get(event.parent_id or "", 0)
            view.code_runs.append(
                CodeRun(event.code, event.result.ok, event.result.stdout, round_no)
            )
            if step is not None:
                step.ran_code = True
                step.code_ok = step.code_ok or event.result.ok
        elif isinstance(event, ExpertCallFinished):
            continue
        elif isinstance(event, Recall):
            view.recall = event
        elif isinstance(event, FinalAnswer):
            view.answer = event.answer
        elif isinstance(event, RunFinished):
            view.status = event.status
            view.rounds = event.rounds
            if event.final_answer is not None:
                view.answer = event.final_answer
    return view
