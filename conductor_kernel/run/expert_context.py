"""What one expert call works with and comes to: its context (the model, the sandbox,
the limits, the check), its reply as it grows, and its outcome for the meta model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from conductor_kernel.events import Event
from conductor_kernel.interfaces import (
    ChatModel,
    CheckVerdict,
    Completion,
    ExecResult,
    Sandbox,
    Usage,
)
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.limits.streaming import RunGuard

Emit = Callable[[Event], None]


@dataclass
class ExpertOutcome:
    name: str
    output: str  # what the meta model is shown
    usage: Usage = field(default_factory=Usage)
    sandbox_runs: int = 0
    passed: str | None = None  # a line its program printed that the task's check accepts


@dataclass
class ExpertContext:
    """What an expert call needs from the run it belongs to."""

    model: ChatModel
    sandbox: Sandbox | None
    config: RunConfig
    emit: Emit
    run_id: str
    guard: RunGuard | None = None  # cancel and limits, checked while the reply streams
    # The task's own check of an answer to the run's question (RunContext.answer_verdict):
    # what a program printed is held to it, and a rejected line goes back to the expert.
    check: Callable[[str], CheckVerdict | None] | None = None


@dataclass
class ExpertReply:
    """An expert's reply so far: its latest completion, all its text and usage, what the
    meta model is shown, and its latest program and that program's result."""

    completion: Completion
    text: str
    usage: Usage
    output: str = ""
    code: str = ""
    result: ExecResult | None = None
    runs: int = 0
