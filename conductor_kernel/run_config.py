"""What one conductor run may do: the limits the loop checks before each model call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class RunConfig:
    """What one conductor run may do. Every field can be set by flag, env or file."""

    max_rounds: int = 15
    """Meta-model turns at most; the run ends without an answer past it."""
    last_round_notice: bool = True
    """Tell the meta model, in the round before the limit, that it must answer now."""
    last_round_notice_at: int | None = None
    """Round whose user message carries that notice; unset: the round before the limit."""
    max_tokens: int | None = None
    """Total tokens (meta and experts, input and output) a run may spend."""
    max_cost_usd: float | None = None
    """Dollars a run may spend, by the price table."""
    max_wall_s: float | None = None
    """Seconds a run may take."""
    python: bool = True
    """Offer Expert Python and run its code in the sandbox."""
    python_timeout_s: float = 10.0
    """Seconds each sandboxed program may run."""
    output_cap_chars: int = 4000
    """Characters of each stream of program output shown to the meta model."""
    expert_reply_cap_chars: int = 20000
    """Characters of an expert's reply shown to the meta model."""
    parallel_experts: bool = True
    """Dispatch several calls of one turn concurrently."""
    calls_and_answer: str = "calls_first"
    """A turn with calls and an answer: `calls_first` (as the paper) or `answer`."""
    prompt_cache: bool = True
    """Ask the provider to cache the growing meta history."""
    expert_max_tokens: int = 4096
    """Output token cap per expert reply; a reply cut there is marked truncated."""
    meta_max_tokens: int = 4096
    """Output token cap per meta-model turn; a turn cut there is never acted on."""

    def limits(self) -> dict[str, Any]:
        return {
            "max_rounds": self.max_rounds,
            "max_tokens": self.max_tokens,
            "max_cost_usd": self.max_cost_usd,
            "max_wall_s": self.max_wall_s,
            "python_timeout_s": self.python_timeout_s,
        }
