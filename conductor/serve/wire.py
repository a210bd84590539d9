"""The OpenAI chat-completions shapes a served run is told in, and its progress as text.

The progress of a run (the meta model's turns as it writes them, each expert consulted,
each program run) streams as `reasoning_content` deltas, the field reasoning models
stream their thinking in, which chat clients show apart from the reply; the final
answer alone is the `content`.
"""

from __future__ import annotations

import time
from typing import Any

from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    LimitHit,
    MetaTurnStarted,
    Recall,
    SandboxExec,
    TextDelta,
)
from conductor_kernel.interfaces import Usage
from conductor_kernel.text.counts import plural

RUN_ID_HEADER = "X-Conductor-Run-Id"
STATUS_HEADER = "X-Conductor-Run-Status"
# How a run's status is told as a finish reason: a limit cut the reply short.
FINISH_REASONS = {"limit": "length"}
INSTRUCTION_SHOWN = 240  # characters of an expert's instruction in the progress


def usage(spent: Usage) -> dict[str, Any]:
    """The whole run's usage in OpenAI's fields, with what they cannot say beside them."""
    return {
        "prompt_tokens": spent.input_tokens,
        "completion_tokens": spent.output_tokens,
        "total_tokens": spent.input_tokens + spent.output_tokens,
        "prompt_tokens_details": {"cached_tokens": spent.cache_read_tokens},
        "conductor": {
            "model_calls": spent.calls,
            "cost_usd": round(spent.cost_usd, 6),
            # Tokens of calls whose server reported none, estimated (not in the counts).
            "estimated_tokens": spent.estimated_tokens,
        },
    }


def completion(
    run_id: str, model: str, content: str, finish_reason: str, spent: Usage
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{run_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage(spent),
    }


def chunk(
    run_id: str,
    model: str,
    delta: dict[str, Any] | None,
    *,
    finish_reason: str | None = None,
    spent: Usage | None = None,
) -> dict[str, Any]:
    """One streamed chunk; with `spent` and no delta, the closing usage-only chunk."""
    body: dict[str, Any] = {
        "id": f"chatcmpl-{run_id}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    if spent is not None:
        body["usage"] = usage(spent)
    return body


def error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class Progress:
    """What a run's events say as progress text (None: nothing to show for this one)."""

    def __init__(self) -> None:
        self._meta_turns: set[str] = set()

    def text(self, event: Event) -> str | None:
        if isinstance(event, MetaTurnStarted):
            self._meta_turns.add(event.id)
            return f"\n[round {event.round}]\n"
        if isinstance(event, TextDelta):
            # The meta model's own words; experts' streams would interleave.
            return event.text if event.parent_id in self._meta_turns else None
        if isinstance(event, Recall):
            return f"[recalled {plural(len(event.notes), 'note')} from the notebook]\n"
        if isinstance(event, ExpertCallStarted):
            said = event.instruction.strip()
            if len(said) > INSTRUCTION_SHOWN:
                said = said[:INSTRUCTION_SHOWN] + "…"
            return f"\n→ {event.name}: {said}\n"
        if isinstance(event, ExpertCallFinished):
            if event.error:
                return f"← {event.name} failed: {event.error}\n"
            return f"← {event.name} replied ({len(event.text)} characters)\n"
        if isinstance(event, SandboxExec):
            result = event.result
            how = "timed out" if result.timed_out else f"exit {result.exit_code}"
            return f"[ran a program in the sandbox: {how}]\n"
        if isinstance(event, LimitHit):
            return f"\n[limit reached: {event.limit} {event.value:g} of {event.maximum:g}]\n"
        return None
