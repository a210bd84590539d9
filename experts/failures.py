"""What went wrong with a provider call, independently of the SDK that saw it.

Provider modules turn their SDK's exceptions into a `Failure` (`failure_from_sdk`): the
kind (rate limit, overload, server error, timeout, unreachable server, broken stream,
...), the status, and how long the server asked us to wait. `experts.retry` decides
from it whether to try again; `explain_failure` words the message the user sees.
"""

from __future__ import annotations

import contextlib
import email.utils
import importlib
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

T = TypeVar("T")

FailureKind = Literal[
    "rate_limit",  # 429
    "overloaded",  # 503 / 529: the provider as a whole is busy
    "server",  # other 5xx, 408, 409
    "timeout",
    "connection",
    "unreachable",  # refused / unknown host / no route: retrying cannot help
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
    cause: str = ""  # for `unreachable`: refused | dns | no_route

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
            f"no reply within {timeout_s:g} s from {url} ({tries}): the server is stalled "
            "or overloaded; check it, or raise the timeout with --model-timeout SECONDS "
            "(or model_timeout_s in the config)"
        )
    if failure.kind == "unreachable":
        return explain_unreachable(failure, url)
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


def explain_unreachable(failure: Failure, url: str) -> str:
    """Why the server cannot be reached and what to do; the fix depends on the cause."""
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or url
    official = host.endswith(("api.openai.com", "api.anthropic.com"))
    if failure.cause == "dns":
        if official:
            return (
                f"cannot look up {host}: this machine has no working network or DNS, so "
                "the hosted API cannot be reached. Connect to the internet, or use a local "
                "server (see docs/models.md), or `--model demo` to try conductor offline"
            )
        return (
            f"cannot look up the host {host!r} in {url} (name resolution failed): check the "
            "host name in the base URL or model spec, and this machine's network"
        )
    if failure.cause == "refused":
        return (
            f"nothing is listening at {url} (connection refused): start the model server "
            "there, or point conductor at the right port (OPENAI_BASE_URL, "
            "ANTHROPIC_BASE_URL, or NAME@URL in the model spec; see docs/models.md)"
        )
    return (
        f"cannot reach {url} ({failure.detail or 'no route to host'}): check the address "
        "and this machine's network"
    )


class MalformedReply(Exception):
    """A reply that parsed, but not into what the API promises (raised by providers)."""


class StreamBroken(Exception):
    """A stream failed after some text was already handed to `on_text`: retrying would
    repeat that text, so the call fails instead."""


class StreamCut(Exception):
    """A stream that ended in good order before saying how the reply ended (no stop
    reason): a proxy or a dying server closed it part-way. Its text may end mid-answer,
    so it is never taken as a reply; before any text it is retried like a dropped
    connection (after text, providers raise `StreamBroken`)."""


def require_ending(stop_reason: str, pieces: list[str], field: str) -> None:
    """A stream that ended in good order must have said how the reply ended (its
    `field`); one that did not was cut part-way: `StreamCut` before any text (retried),
    `StreamBroken` after (its text may end mid-answer)."""
    if stop_reason:
        return
    cut = f"the stream ended before the reply's {field}"
    if pieces:
        raise StreamBroken(f"after {sum(map(len, pieces))} characters: {cut}")
    raise StreamCut(cut)


def reading(events: Iterable[T]) -> Iterator[T]:
    """The events of a reply stream, as the SDK reads them; an error the SDK raises while
    reading one that is neither the API's nor the network's (a body that is not UTF-8,
    JSON of a shape it cannot take) is the reply's fault: `MalformedReply`."""
    iterator = iter(events)
    while True:
        with reply_shape("an event"):
            try:
                event = next(iterator)
            except StopIteration:
                return
        yield event


@contextlib.contextmanager
def reply_shape(what: str) -> Iterator[None]:
    """Reading `what` of a reply: fields missing or of another type (an event whose
    `delta` is null, a number where text belongs, a list for an object) and bytes that
    do not decode make it a `MalformedReply`, never a raw `TypeError` or
    `UnicodeDecodeError` that ends the run with a traceback."""
    try:
        yield
    except (AttributeError, TypeError, LookupError, ValueError) as exc:
        raise MalformedReply(f"{what} the API never sends: {type(exc).__name__}: {exc}") from exc


def reply_text(value: object) -> str:
    """A piece of reply text, which must be a string (or absent)."""
    if value is None:
        raise TypeError("text is null")
    if not isinstance(value, str):
        raise TypeError(f"text is a {type(value).__name__}")
    return value


def failure_from_sdk(exc: BaseException, sdk: Any) -> Failure | None:
    """Describe an exception from the `anthropic` or `openai` SDK (same error shapes);
    None for anything that is not a provider failure (a bug: let it raise)."""
    if isinstance(exc, StreamBroken):
        return Failure("broken_stream", detail=str(exc))
    if isinstance(exc, MalformedReply):
        return Failure("malformed", detail=str(exc))
    if isinstance(exc, StreamCut):
        return Failure("connection", detail=str(exc))
    if isinstance(exc, ValueError) and exc.__class__.__name__ == "JSONDecodeError":
        return Failure("malformed", detail=f"it began {getattr(exc, 'doc', '')[:60]!r}")
    if isinstance(exc, sdk.APIResponseValidationError):
        return Failure("malformed", detail=exc.message)
    if isinstance(exc, sdk.APIStatusError):
        detail = _api_message(exc.body) or ""
        if exc.status_code < 400:
            # An error event inside a stream that began with 200 (Anthropic's
            # `overloaded_error`): the event's type says what it was, not the status.
            return _failure_from_error_body(exc.body, detail)
        return Failure.from_status(exc.status_code, exc.response.headers, detail)
    if isinstance(exc, sdk.APITimeoutError):
        return Failure("timeout")
    if isinstance(exc, sdk.APIConnectionError):
        return _connection_failure(exc)
    if isinstance(exc, sdk.APIError):
        # OpenAI-compatible servers send `data: {"error": ...}` inside a stream; the SDK
        # raises it as a bare APIError with that body.
        return _failure_from_error_body(exc.body, _api_message(exc.body) or str(exc))
    if isinstance(exc, transport_errors()):
        # Raised bare by some SDK streams when the connection drops mid-reply.
        return _connection_failure(exc)
    if isinstance(exc, _http_errors("DecodingError")):
        # A body whose content-encoding does not decode (a gateway's broken gzip).
        return Failure("malformed", detail=f"its body could not be decoded: {exc}")
    return None


# The error types both APIs put in an error body, by what they mean for a retry.
_ERROR_TYPE_STATUS = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "api_error": 500,
    "server_error": 500,
    "internal_server_error": 500,
    "timeout_error": 504,
    "service_unavailable": 503,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
}


def _failure_from_error_body(body: object, detail: str) -> Failure:
    inner = body.get("error", body) if isinstance(body, dict) else None
    status = 500  # an error the server gave no type for: treat as the server's
    if isinstance(inner, dict):
        kind = str(inner.get("type") or inner.get("code") or "")
        code = inner.get("code")
        if kind in _ERROR_TYPE_STATUS:
            status = _ERROR_TYPE_STATUS[kind]
        elif isinstance(code, int) and 400 <= code < 600:
            status = code
        if kind and kind not in detail:
            detail = f"{kind}: {detail}" if detail else kind
    return Failure.from_status(status, None, detail)


def _connection_failure(exc: BaseException) -> Failure:
    """`unreachable` when the server cannot be reached at all, else `connection`."""
    import socket

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, socket.gaierror):
            return Failure("unreachable", detail=str(seen), cause="dns")
        if isinstance(seen, ConnectionRefusedError):
            return Failure("unreachable", detail=str(seen), cause="refused")
        if isinstance(seen, OSError) and seen.errno in (101, 113):  # ENETUNREACH, EHOSTUNREACH
            return Failure("unreachable", detail=str(seen), cause="no_route")
        seen = seen.__cause__ or seen.__context__
    text = " ".join(str(e) for e in _chain(exc)).lower()
    if "name or service not known" in text or "name resolution" in text or "nodename nor" in text:
        return Failure("unreachable", detail=text[:200], cause="dns")
    if "connection refused" in text:
        return Failure("unreachable", detail=text[:200], cause="refused")
    cause = exc.__cause__ or exc.__context__
    return Failure("connection", detail=str(cause) if cause else str(exc))


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(found) < 8:
        found.append(seen)
        seen = seen.__cause__ or seen.__context__
    return found


def transport_errors(*also: type[BaseException]) -> tuple[type[BaseException], ...]:
    """The HTTP library's network errors (the SDKs use `httpx2`, older ones `httpx`).

    `also` are put first, so `except transport_errors(sdk.APIError)` catches both.
    """
    return (*also, *_http_errors("TransportError"))


def _installed_http_libraries() -> tuple[Any, ...]:
    found = []
    for library in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(library))
        except ImportError:
            continue
    return tuple(found)


# Imported with this module (a provider's, in the thread that opens the model), never
# first inside a worker's `except`: the openai SDK reads `sys.modules["httpx"]` as it
# works, and met it half-initialised while a worker imported it here ("partially
# initialized module 'httpx' has no attribute 'Timeout'": a batch item ended `error`).
_HTTP_LIBRARIES = _installed_http_libraries()


def _http_errors(name: str) -> tuple[type[BaseException], ...]:
    """The HTTP libraries' exception class `name`, from each one installed."""
    return tuple(getattr(library, name) for library in _HTTP_LIBRARIES if hasattr(library, name))


def _api_message(body: object) -> str | None:
    """The human-readable message inside either API's error body, if any."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    if isinstance(body, str) and body:
        return body[:200]
    return None
