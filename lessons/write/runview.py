"""A finished run's events boiled down to what the notebook learns from."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    meta_texts: list[str] = field(default_factory=list)
    # (expert name, instruction, reply) of every expert call that answered
    replies: list[tuple[str, str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # last lines of failed programs

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
    instructions: dict[str, str] = {}
    for event in events:
        if isinstance(event, ExpertCallStarted):
            step = ExpertStep(event.name, event.round, event.is_python)
            calls[event.id] = step
            instructions[event.id] = event.instruction
            rounds_by_call[event.id] = event.round
            view.steps.append(step)
        elif isinstance(event, SandboxExec):
            parent = calls.get(event.parent_id or "")
            round_no = rounds_by_call.get(event.parent_id or "", 0)
            view.code_runs.append(
                CodeRun(event.code, event.result.ok, event.result.stdout, round_no)
            )
            if parent is not None:
                parent.ran_code = True
                parent.code_ok = parent.code_ok or event.result.ok
            if not event.result.ok:
                tail = (event.result.stderr or event.result.stdout).strip().splitlines()
                view.errors.append(tail[-1] if tail else "the program failed")
        elif isinstance(event, ExpertCallFinished):
            if event.error is None and event.text.strip():
                view.replies.append(
                    (event.name, instructions.get(event.parent_id or "", ""), event.text)
                )
        elif isinstance(event, MetaTurnFinished):
            view.meta_texts.append(event.text)
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
