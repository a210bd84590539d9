"""What the attempts of one call spent before it succeeded or failed for good.

An attempt whose stream opened and then failed (a reset or a stall after text, a stream
of empty choices that never said how it ended) was processed by the server, and is
billed: its usage is what the server reported, if it did, else estimated from the
prompt and the text streamed (`conductor_kernel.text.tokens`, marked estimated). Retried
attempts add to the call's usage; when the call fails for good, their sum travels on
the error (`conductor_kernel.limits.ledger.mark_spent`) for the run's ledger to record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from conductor_kernel.interfaces import Completion, TextCallback, Usage
from conductor_kernel.limits.ledger import mark_spent
from conductor_kernel.text.tokens import estimated_usage
from experts.pricing import PriceLookup
from experts.retry import Failure, call_with_retries


class Attempts:
    """The usage of one call's failed attempts, collected as they fail."""

    def __init__(self, price: PriceLookup) -> None:
        self.price = price
        self.failed: list[Usage] = []

    def failed_after_start(self, prompt: str, text: str, reported: Usage | None) -> None:
        """An attempt failed after its stream opened: record what it spent."""
        if reported is None or not reported.total_tokens:
            self.failed.append(estimated_usage(prompt, text, wait=False))
        elif reported.output_tokens or not text:
            self.failed.append(reported)
        else:  # the prompt reported at the start; the text streamed after it estimated
            guess = estimated_usage(prompt, text, input_tokens=reported.input_tokens, wait=False)
            self.failed.append(
                replace(
                    reported,
                    estimated_calls=1,
                    estimated_tokens=guess.estimated_tokens,
                    estimated_output_tokens=guess.estimated_output_tokens,
                )
            )

    def spent(self) -> Usage:
        """The failed attempts as one failed call: what the ledger records for it."""
        total = sum(self.failed, Usage())
        calls = 1 if self.failed else 0
        estimated = 1 if any(u.estimated_calls for u in self.failed) else 0
        total = replace(total, calls=calls, estimated_calls=estimated)
        total.cost_usd = self.price.cost(total)
        return total

    def add_to(self, usage: Usage) -> Usage:
        """A successful call's usage with its failed attempts' added (still one call)."""
        if not self.failed:
            return usage
        extra = self.spent()
        total = usage + replace(extra, calls=0, estimated_calls=0)
        if extra.estimated_calls and not usage.estimated_calls:
            total.estimated_calls = 1
        return total

    def charge(self, error: BaseException) -> None:
        """The call failed for good: its error carries what the attempts spent."""
        if self.failed:
            mark_spent(error, self.spent())


class StreamSoFar:
    """What one streamed attempt has received: its text, its events, its usage if sent."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.events = 0
        self.reported: Usage | None = None

    def fail(self, attempts: Attempts, prompt: str) -> None:
        """The attempt failed: if the server had begun answering, it spent something."""
        if self.events:
            attempts.failed_after_start(prompt, "".join(self.pieces), self.reported)


def charged_completion(
    model: Any,
    params: dict[str, Any],
    prompt: str,
    on_text: TextCallback | None,
    classify: Callable[[BaseException], Failure | None],
) -> Completion:
    """One model call through the retry policy, every attempt charged: what a failed
    attempt streamed is added to the call's usage, and a call that fails for good
    carries what it spent on its error. `model` is a provider client (its `_create`,
    `_stream`, `_explain`, retry settings and `price`)."""
    attempts = Attempts(model.price)

    def attempt() -> Completion:
        if on_text is None:
            return model._create(params, prompt)
        so_far = StreamSoFar()
        try:
            return model._stream(params, on_text, prompt, so_far)
        except Exception:
            so_far.fail(attempts, prompt)
            raise

    try:
        completion, retries = call_with_retries(
            attempt,
            classify=classify,
            explain=model._explain,
            max_retries=model.max_retries,
            backoff=model.backoff,
            breaker=model.breaker,
        )
    except Exception as error:
        attempts.charge(error)
        raise
    completion.retries = retries
    completion.usage = attempts.add_to(completion.usage)
    completion.usage.cost_usd = model.price.cost(completion.usage)
    return completion
