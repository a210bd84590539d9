"""What one run keeps as it goes: its counts, its ledger, what its programs printed,
and what was handed to the model; RunContext (context.py) carries it."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from conductor_kernel.interfaces import Message, ToolResult, Usage
from conductor_kernel.limits.ledger import UsageLedger
from conductor_kernel.limits.streaming import RunGuard

PRINTED_KEPT = 8  # programs' outputs a run keeps for its answer's check


@dataclass
class RunState:
    run_id: str
    started: float = field(default_factory=time.monotonic)
    # Every model call of the run records its usage here as it returns (ledger.py).
    ledger: UsageLedger = field(default_factory=UsageLedger)
    guard: RunGuard | None = None
    rounds: int = 0
    expert_calls: int = 0
    sandbox_runs: int = 0
    answer: str | None = None
    # The run's answer was sent back once for a check (RunConfig.check_before_answer).
    check_asked: bool = False
    # Answers the task's own check rejected and the model was told of (each only once).
    rejected_answers: set[str] = field(default_factory=set)
    # What the run's latest programs printed, each run that ended well (meta.py reads
    # it for a line the task's check accepts once the model's own answer failed it).
    printed: deque[str] = field(default_factory=lambda: deque(maxlen=PRINTED_KEPT))
    # A printed line the task's check accepted and the model was told of: from there it
    # may cite it (answer_with_checked_result, the tools carrier), as a handed result.
    cited: str | None = None

    @property
    def usage(self) -> Usage:
        """What the run has spent so far (learning comes later and is reported apart)."""
        return self.ledger.run_total()

    @property
    def meta_usage(self) -> Usage:
        return self.ledger.total("meta")


@dataclass(frozen=True)
class Handed:
    """A call made for the model (an assistant message with its tool calls) and their
    results, sent after round 1's message (run/experience.py)."""

    call: Message
    results: tuple[ToolResult, ...]
    answer: str  # what the handed program printed, as the check accepted it
