"""Retries with backoff for provider calls, shared across worker threads.

The SDKs' own retries are switched off (`max_retries=0`) so that this layer counts
every retry (`Completion.retries`), honours `retry-after` the same way for every
provider, and can make *all* workers back off together: one `Backoff` object is shared
by every model of a batch, and a rate limit seen by one thread pauses the others too.

Provider modules translate their SDK's exceptions into a `Failure` (`experts.failures`:
what went wrong, whether trying again can help, how long the server asked us to wait);
`call_with_retries` does the rest and turns the last failure into a `ModelError` (or
`ModelUnreachable`) that says what to do.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from conductor_kernel.errors import ModelUnreachable
from conductor_kernel.interfaces import ModelError
from experts.failures import (
    RETRYABLE_KINDS,
    SHARED_PAUSE_KINDS,
    Failure,
    FailureKind,
    MalformedReply,
    StreamBroken,
    StreamCut,
    explain_failure,
    explain_unreachable,
    failure_from_sdk,
    parse_retry_after,
    reading,
    reply_shape,
    reply_text,
    require_ending,
    transport_errors,
)

__all__ = [
    "RETRYABLE_KINDS",
    "SHARED_PAUSE_KINDS",
    "Backoff",
    "Breaker",
    "Failure",
    "FailureKind",
    "MalformedReply",
    "StreamBroken",
    "StreamCut",
    "call_with_retries",
    "explain_failure",
    "explain_unreachable",
    "failure_from_sdk",
    "parse_retry_after",
    "reading",
    "reply_shape",
    "reply_text",
    "require_ending",
    "transport_errors",
]

T = TypeVar("T")


class Backoff:
    """Backoff delays plus a pause that every thread sharing this object obeys.

    Delays grow exponentially from `base_s` up to `cap_s`, with jitter so that workers
    that failed together do not retry together. A server's `retry-after` is honoured
    (with a little jitter on top, never less than asked) up to `max_retry_after_s`;
    a longer demand is not worth blocking a run for, and fails the call instead.
    """

    def __init__(
        self,
        *,
        base_s: float = 0.5,
        cap_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        seed: int | None = None,
    ) -> None:
        self.base_s = base_s
        self.cap_s = cap_s
        self.max_retry_after_s = max_retry_after_s
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._resume_at = 0.0  # time.monotonic() before which nobody sends
        self.pauses = 0
        self.waited_s = 0.0  # summed over threads: time spent waiting, for reports

    def delay(self, retries_so_far: int, retry_after: float | None = None) -> float:
        """How long to wait before retry number `retries_so_far + 1`."""
        with self._lock:
            jitter = self._random.random()
        if retry_after is not None:
            # Spread resuming workers over up to 10% more than asked (at most 1 s).
            return retry_after + min(1.0, 0.1 * retry_after) * jitter
        ceiling = min(self.cap_s, self.base_s * (2**retries_so_far))
        return ceiling / 2 + (ceiling / 2) * jitter

    def pause(self, seconds: float) -> None:
        """Hold back every thread sharing this object for `seconds` from now."""
        with self._lock:
            self._resume_at = max(self._resume_at, time.monotonic() + seconds)
            self.pauses += 1

    def wait(self) -> float:
        """Block until no pause is in force; returns the seconds waited."""
        waited = 0.0
        while True:
            with self._lock:
                remaining = self._resume_at - time.monotonic()
            if remaining <= 0:
                break
            time.sleep(remaining)
            waited += remaining
        if waited:
            with self._lock:
                self.waited_s += waited
        return waited

    def sleep(self, seconds: float) -> None:
        """Wait for this thread alone (a failure that says nothing about the others)."""
        time.sleep(seconds)
        with self._lock:
            self.waited_s += seconds


class Breaker:
    """Remembers that a server failed for good, so the calls right after (the learning
    calls after a failed run, the next batch items) fail at once instead of retrying
    the same dead server for a minute each. After `cooldown_s` calls are tried again."""

    def __init__(self, cooldown_s: float = 60.0) -> None:
        self.cooldown_s = cooldown_s
        self._lock = threading.Lock()
        self._open_until = 0.0
        self._error: Exception | None = None

    def check(self) -> None:
        with self._lock:
            if self._error is not None and time.monotonic() < self._open_until:
                error = self._error
            else:
                return
        # A fresh exception of the same type and message, saying it was not retried.
        raise type(error)(
            f"{error} (not tried again: this server failed under {self.cooldown_s:g} s ago)"
        )

    def trip(self, error: Exception) -> None:
        with self._lock:
            self._error = error
            self._open_until = time.monotonic() + self.cooldown_s

    def reset(self) -> None:
        with self._lock:
            self._error = None


# Failures after which the server is left alone for a while: it is down or refusing,
# not just busy (a rate limit or a rejected request says nothing about the next call).
_TRIPPING_KINDS = frozenset({"unreachable", "connection", "server", "overloaded", "timeout"})


def call_with_retries(
    attempt: Callable[[], T],
    *,
    classify: Callable[[BaseException], Failure | None],
    explain: Callable[[Failure, int], str],
    max_retries: int,
    backoff: Backoff,
    breaker: Breaker | None = None,
) -> tuple[T, int]:
    """Run `attempt` until it succeeds; returns its result and the retries it took.

    `classify` maps an exception to a `Failure` (None: not ours, re-raised as is);
    `explain(failure, attempts)` words the `ModelError` raised when retrying stops
    (`ModelUnreachable` when the server cannot be reached at all: never retried).
    With a `breaker`, a call made soon after a call failed for good fails at once.
    """
    if breaker is not None:
        breaker.check()
    retries = 0
    while True:
        backoff.wait()
        try:
            result = attempt()
            if breaker is not None:
                breaker.reset()
            return result, retries
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            asked = failure.retry_after
            if asked is not None and asked > backoff.max_retry_after_s:
                failure = replace(failure, wait_refused=True)
            if not failure.retryable or retries >= max_retries or failure.wait_refused:
                error: Exception
                if failure.kind == "unreachable":
                    error = ModelUnreachable(explain(failure, retries + 1))
                else:
                    error = ModelError(explain(failure, retries + 1))
                    error.failure_kind = failure.kind
                if breaker is not None and failure.kind in _TRIPPING_KINDS:
                    breaker.trip(error)
                raise error from exc
            delay = backoff.delay(retries, asked)
            if failure.kind in SHARED_PAUSE_KINDS:
                backoff.pause(delay)  # taken by backoff.wait() at the top of the loop
            else:
                backoff.sleep(delay)
            retries += 1
