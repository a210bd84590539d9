"""Retries with backoff for provider calls, shared across worker threads.

The SDKs' own retries are switched off (`max_retries=0`) so that this layer counts
every retry (`Completion.retries`), honours `retry-after` the same way for every
provider, and can make *all* workers back off together: one `Backoff` object is shared
by every model of a batch, and a rate limit seen by one thread pauses the others too.

Provider modules translate their SDK's exceptions into a `Failure` (what went wrong,
whether trying again can help, how long the server asked us to wait); `call_with_retries`
does the rest and turns the last failure into a `ModelError` that says what to do.
"""

from __future__ import annotations

import email.utils
import importlib
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from conductor.interfaces import ModelError

T = TypeVar("T")

FailureKind = Literal[
    "rate_limit",  # 429
    "overloaded",  # 503 / 529: the provider as a whole is busy
    "server",  # other 5xx, 408, 409
    "timeout",
    "connection",
    "malformed",  # a reply that is not the JSON (or stream) the API promises
    "broken_stream",  # the stream failed after text was already handed on
    "auth",  # 401 / 403
    "not_found",  # 404
    "rejected",  # other 4xx
]

# Kinds that say "the provider is busy": every worker sharing the Backoff waits.
SHARED_PAUSE_KINDS = frozenset({"rate_limit", "overloaded"})
RETRYABLE_KINDS = frozenset({"rate_limit", "overloaded", "server", "timeout", "connection"})


@dataclass(frozen=True)
class Failure:
    """One failed attempt, described independently of the SDK that saw it."""

    kind: FailureKind
    status: int | None = None
    retry_after: float | None = None
    detail: str = ""
    wait_refused: bool = False  # the server asked for a longer wait than we allow

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS

    @classmethod
    def from_status(
        cls, status: int, headers: Mapping[str, str] | None = None, detail: str = ""
    ) -> Failure:
        kind: FailureKind
        if status == 429:
            kind = "rate_limit"
        elif status in (503, 529):
            kind = "overloaded"
        elif status >= 500 or status in (408, 409):
            kind = "server"
        elif status in (401, 403):
            kind = "auth"
        elif status == 404:
            kind = "not_found"
        else:
            kind = "rejected"
        return cls(kind, status, parse_retry_after(headers or {}), detail)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, else `retry-after`
    (seconds, or an HTTP date). None when absent or unreadable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


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


def call_with_retries(
    attempt: Callable[[], T],
    *,
    classify: Callable[[BaseException], Failure | None],
    explain: Callable[[Failure, int], str],
    max_retries: int,
    backoff: Backoff,
) -> tuple[T, int]:
    """Run `attempt` until it succeeds; returns its result and the retries it took.

    `classify` maps an exception to a `Failure` (None: not ours, re-raised as is);
    `explain(failure, attempts)` words the `ModelError` raised when retrying stops.
    """
    retries = 0
    while True:
        backoff.wait()
        try:
            return attempt(), retries
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            asked = failure.retry_after
            if asked is not None and asked > backoff.max_retry_after_s:
                failure = replace(failure, wait_refused=True)
            if not failure.retryable or retries >= max_retries or failure.wait_refused:
                raise ModelError(explain(failure, retries + 1)) from exc
            delay = backoff.delay(retries, asked)
            if failure.kind in SHARED_PAUSE_KINDS:
                backoff.pause(delay)  # taken by backoff.wait() at the top of the loop
            else:
                backoff.sleep(delay)
            retries += 1


def explain_failure(
    failure: Failure,
    attempts: int,
    *,
    url: str,
    model: str,
    key_env: str | None,
    timeout_s: float,
) -> str:
    """The message for a call that failed for good: what happened and what to do."""
    tries = "once" if attempts == 1 else f"{attempts} times"
    detail = f" ({failure.detail})" if failure.detail else ""
    status = failure.status
    asked = failure.retry_after
    if failure.wait_refused:
        return (
            f"the server at {url} answered {status} and asked to wait {asked:.0f} s, "
            "longer than conductor waits; retry later or run fewer calls at once"
        )
    if failure.kind == "rate_limit":
        return (
            f"the server at {url} rate-limited us (429) {tries}; wait a while and retry, "
            "or run fewer calls at once"
        )
    if failure.kind in ("overloaded", "server"):
        return (
            f"the server at {url} answered {status} {tries}{detail}; "
            "check the server or retry later"
        )
    if failure.kind == "timeout":
        return (
            f"no reply within {timeout_s:g} s from {url} ({tries}): "
            "raise it with --model-timeout SECONDS (or model_timeout_s in the config) or "
            "check the server"
        )
    if failure.kind == "connection":
        return (
            f"could not get a reply from {url} ({tries}){detail}: is the server running "
            "and the base URL right?"
        )
    if failure.kind == "malformed":
        return (
            f"the reply from {url} was not valid JSON{detail}; check that the base URL "
            "points at the right API"
        )
    if failure.kind == "broken_stream":
        return f"the reply stream from {url} broke part-way{detail}; retry the run"
    if failure.kind == "auth":
        fix = f"check {key_env}" if key_env else "check the API key"
        return f"authentication failed at {url} ({status}){detail}: {fix}"
    if failure.kind == "not_found":
        return (
            f"the server at {url} answered 404 for model {model!r}{detail}: "
            "check the model name and the base URL"
        )
    return f"the server at {url} rejected the request ({status}){detail}"


class MalformedReply(Exception):
    """A reply that parsed, but not into what the API promises (raised by providers)."""


class StreamBroken(Exception):
    """A stream failed after some text was already handed to `on_text`: retrying would
    repeat that text, so the call fails instead."""


def failure_from_sdk(exc: BaseException, sdk: Any) -> Failure | None:
    """Describe an exception from the `anthropic` or `openai` SDK (same error shapes);
    None for anything that is not a provider failure (a bug: let it raise)."""
    if isinstance(exc, StreamBroken):
        return Failure("broken_stream", detail=str(exc))
    if isinstance(exc, MalformedReply):
        return Failure("malformed", detail=str(exc))
    if isinstance(exc, ValueError) and exc.__class__.__name__ == "JSONDecodeError":
        return Failure("malformed", detail=f"it began {getattr(exc, 'doc', '')[:60]!r}")
    if isinstance(exc, sdk.APIResponseValidationError):
        return Failure("malformed", detail=exc.message)
    if isinstance(exc, sdk.APIStatusError):
        detail = _api_message(exc.body) or ""
        return Failure.from_status(exc.status_code, exc.response.headers, detail)
    if isinstance(exc, sdk.APITimeoutError):
        return Failure("timeout")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return Failure("connection", detail=str(cause) if cause else "")
    if isinstance(exc, transport_errors()):
        # Raised bare by some SDK streams when the connection drops mid-reply.
        return Failure("connection", detail=str(exc))
    return None


def transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's network errors (the SDKs use `httpx2`, older ones `httpx`)."""
    found: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _api_message(body: object) -> str | None:
    """The human-readable message inside either API's error body, if any."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    if isinstance(body, str) and body:
        return body[:200]
    return None
