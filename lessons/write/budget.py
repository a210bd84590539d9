"""What learning may spend on its own model calls, per run.

Against a small local model, learning once cost 2-3 calls per item and more output than
the run itself, making each item 4-20 times slower (issue 25). So learning's calls
(reflection, the type choice, induction) are bounded per run: by default never more
calls, nor more tokens, than the run itself used. A call is made only when its prompt
and its longest reply fit in what is left (its reply limit is lowered to fit, down to
`MIN_REPLY_TOKENS`); otherwise it is refused with `OverBudget`, and the offline path
(the lexical type, no reflection) stands in. The budget is a meter with admission on
the one metered model (`MeteredModel(model, budget)`), not a wrapper of its own. A run with nothing to learn from (no
expert call, no program, no check of its answer) makes no learning call at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from conductor_kernel.interfaces import Completion, Message
from conductor_kernel.text.counts import plural
from conductor_kernel.text.tokens import estimate_tokens
from lessons.values import Verification
from record.fold import RunOutline

# Other tokenizers count more than ours on most text (lessons/read/render.py).
TOKEN_MARGIN = 1.2
# A reply limit under this says too little to be worth a call.
MIN_REPLY_TOKENS = 64


# What a budget is, as data (it crosses Ray from a worker's learning to the driver).
_COUNTS = ("calls", "tokens", "used_calls", "used_tokens")


class OverBudget(Exception):
    """A learning call that would pass the run's learning budget: not made."""


@dataclass
class LearningBudget:
    """At most `calls` model calls and `tokens` tokens (prompt and reply) for one run's
    learning; `used_*` is what its calls have spent so far."""

    calls: int
    tokens: int
    used_calls: int = 0
    used_tokens: int = 0
    # The prompt and reply limit of the call admitted last: what it is charged when
    # the server reports no usage.
    _admitted: tuple[int, int] = field(default=(0, 0), repr=False, compare=False)

    @classmethod
    def for_run(cls, run: RunOutline, share: float = 1.0) -> LearningBudget:
        """`share` of what the run itself used (1.0: never more than the run)."""
        finished = run.finished
        if finished is None:
            return cls(0, 0)
        calls = max(finished.usage.calls, finished.rounds + finished.expert_calls)
        tokens = finished.usage.tokens_for_limits
        return cls(math.floor(calls * share), math.floor(tokens * share))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LearningBudget:
        calls, tokens, used_calls, used_tokens = (int(data.get(k, 0)) for k in _COUNTS)
        return cls(calls, tokens, used_calls, used_tokens)

    def to_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in _COUNTS}

    # A meter with admission (conductor_kernel/limits/ledger.py): `MeteredModel(model,
    # budget)` asks `admit` before each call and hands the budget each completion.
    def admit(self, messages: list[Message], *, system: str | None, max_tokens: int | None) -> int:
        """The reply limit a call may have; `OverBudget` when it may not be made."""
        text = (system or "") + "".join(m.content for m in messages)
        prompt = math.ceil(estimate_tokens(text) * TOKEN_MARGIN)
        room = self.reply_room(prompt, max_tokens or 1024)
        if room <= 0:
            raise OverBudget(
                f"learning's budget for this run is spent ({self.describe()}, "
                f"{plural(self.used_calls, 'call')} and {plural(self.used_tokens, 'token')} used)"
            )
        self._admitted = (prompt, room)
        return room

    def __call__(self, completion: Completion) -> None:
        self.charge(completion, *self._admitted)

    def reply_room(self, prompt_tokens: int, max_tokens: int) -> int:
        """The reply limit a call of this prompt may have (0: it may not be made)."""
        if self.used_calls >= self.calls:
            return 0
        room = min(max_tokens, self.tokens - self.used_tokens - prompt_tokens)
        return room if room >= MIN_REPLY_TOKENS else 0

    def charge(self, completion: Completion, prompt_tokens: int, max_tokens: int) -> None:
        usage = completion.usage
        # What the server reported, and never less than what the call could have used
        # where it reported nothing.
        spent = usage.tokens_for_limits or prompt_tokens + max_tokens
        self.used_calls += 1
        self.used_tokens += spent

    def describe(self) -> str:
        return f"at most {plural(self.calls, 'call')} and {plural(self.tokens, 'token')}"


def idle_reason(run: RunOutline, verification: Verification) -> str:
    """Why a run gives learning nothing to ask a model about ("" when it does): no expert
    was called, no program ran, and nothing checked its answer."""
    if run.calls or run.execs:
        return ""
    if verification.level != "none":
        return ""
    return "nothing to learn from (no expert call, no program, no check)"
