"""Retries and backoff: a 429 waits as long as retry-after says, 5xx and dropped
connections are retried, what cannot be retried fails at once with a clear error, the
backoff's jitter, and one backoff shared by threads (each call still gets its own reply).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from provider_models import FAST, HI, PROVIDERS, make_model

from conductor_kernel.interfaces import Message, ModelError
from equipment.wire_formats import last_user_text
from equipment.wire_server import Fault, WireServer
from experts.retry import Backoff, parse_retry_after


class RecordingBackoff(Backoff):
    """A backoff that notes every wait it is asked for: what a call waited, by its own
    account rather than by a clock on a busy machine."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.asked: list[float] = []

    def pause(self, seconds: float) -> None:
        self.asked.append(seconds)
        super().pause(seconds)

    def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        super().sleep(seconds)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("in_ms", [False, True])
def test_429_waits_as_long_as_retry_after_says_and_counts_the_retry(
    provider: str, in_ms: bool, server: WireServer
) -> None:
    server.inject(Fault.rate_limit(0.5, in_ms=in_ms))
    server.add("after the wait")
    # A long exponential base: only the server's retry-after can make the wait 0.5 s.
    backoff = RecordingBackoff(base_s=5.0, cap_s=5.0)
    model = make_model(provider, server, backoff=backoff)
    completion = model.complete(HI, on_text=lambda _: None)
    assert completion.text == "after the wait"
    assert completion.retries == 1
    first, second = server.requests
    assert first.status == 429 and second.fault is None
    assert second.ts - first.ts >= 0.5
    # One wait, of the 0.5 s asked plus at most 10% jitter: not the 5 s backoff.
    assert len(backoff.asked) == 1 and 0.5 <= backoff.asked[0] <= 0.55
    # Our layer retried, not the SDK's (its retry counter header stays at 0).
    assert {r.headers.get("x-stainless-retry-count") for r in server.requests} == {"0"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_5xx_and_overloaded_are_retried(provider: str, server: WireServer) -> None:
    server.inject(Fault.server_error(500), Fault.overloaded(), Fault.server_error(503))
    server.add("third time lucky")
    completion = make_model(provider, server).complete(HI)
    assert (completion.text, completion.retries) == ("third time lucky", 3)
    assert [r.status for r in server.requests] == [500, 529, 503, 200]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_that_keeps_failing_gives_a_clear_error(provider: str, server: WireServer) -> None:
    server.inject(*[Fault.server_error(500)] * 3)
    model = make_model(provider, server, max_retries=2)
    with pytest.raises(ModelError) as err:
        model.complete(HI)
    message = str(err.value)
    assert "answered 500 3 times" in message and model.base_url in message
    assert "check the server or retry later" in message
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("streamed", [False, True])
def test_a_malformed_body_is_a_clear_error_and_not_retried(
    provider: str, streamed: bool, server: WireServer
) -> None:
    server.inject(Fault.malformed("<html>gateway error</html>"))
    on_text = (lambda _: None) if streamed else None
    with pytest.raises(ModelError, match="was not valid JSON") as err:
        make_model(provider, server).complete(HI, on_text=on_text)
    if not streamed:
        assert "<html>gateway error" in str(err.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_reply_slower_than_the_timeout_is_retried_then_reported(
    provider: str, server: WireServer
) -> None:
    # The server would answer after ten minutes: the error comes first, so the client gave
    # up on its own timeout, not on the server (had it waited, the test's timeout fails it).
    server.inject(Fault.delay(600), Fault.delay(600))
    model = make_model(provider, server, timeout=0.3, max_retries=1)
    with pytest.raises(ModelError) as err:
        model.complete(HI, on_text=lambda _: None)
    assert f"no reply within 0.3 s from {model.base_url} (2 times)" in str(err.value)
    assert "stalled" in str(err.value) and "--model-timeout" in str(err.value)
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_dropped_connection_is_retried_before_any_text(provider: str, server: WireServer) -> None:
    server.inject(Fault.disconnect(after_events=1))
    server.add("whole reply")
    completion = make_model(provider, server).complete(HI, on_text=lambda _: None)
    assert (completion.text, completion.retries) == ("whole reply", 1)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_cut_after_text_fails_rather_than_repeat_the_text(
    provider: str, server: WireServer
) -> None:
    server.inject(Fault.disconnect(after_events=6))
    pieces: list[str] = []
    with pytest.raises(ModelError, match="broke part-way"):
        make_model(provider, server).complete(HI, on_text=pieces.append)
    assert pieces and len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_retry_after_longer_than_we_wait_fails_at_once(provider: str, server: WireServer) -> None:
    server.inject(Fault.rate_limit(600))
    backoff = RecordingBackoff(**FAST)
    with pytest.raises(ModelError, match="asked to wait 600 s"):
        make_model(provider, server, backoff=backoff).complete(HI)
    assert backoff.asked == [] and len(server.requests) == 1  # no wait, no retry


@pytest.mark.parametrize("provider", PROVIDERS)
def test_concurrent_calls_from_threads_each_get_their_own_reply(provider: str) -> None:
    calls = 12
    together = threading.Barrier(calls)

    def echo(body: dict[str, Any]) -> str:
        # Every request waits here for all the others: they pass only if the calls were
        # in flight at once, not one after another (then the barrier breaks).
        together.wait(timeout=60)
        return "echo: " + last_user_text(body)

    with WireServer(responder=echo) as wire:
        model = make_model(provider, wire)
        with ThreadPoolExecutor(max_workers=calls) as pool:
            texts = list(
                pool.map(
                    lambda i: (
                        model.complete(
                            [Message("user", f"question {i}")], on_text=lambda _: None
                        ).text
                    ),
                    range(calls),
                )
            )
    assert texts == [f"echo: question {i}" for i in range(calls)]
    assert len(wire.requests) == calls


def test_a_rate_limit_seen_by_one_thread_holds_back_the_others(server: WireServer) -> None:
    server.responder = lambda body: "ok"
    server.inject(Fault.rate_limit(0.6))
    shared = Backoff(base_s=5.0)
    first = make_model("openai", server, backoff=shared)
    second = make_model("anthropic", server, backoff=shared)
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(first.complete(HI)))
    worker.start()
    while not shared.pauses:  # the first thread has seen its 429 and paused everyone
        time.sleep(0.01)
    second.complete(HI)
    worker.join()
    rate_limited = server.requests[0]
    assert rate_limited.status == 429
    later = server.requests[1:]
    assert len(later) == 2
    assert min(r.ts for r in later) - rate_limited.ts >= 0.6
    assert results[0].retries == 1 and shared.pauses == 1


def test_retry_after_is_read_in_each_of_its_forms() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    in_30s = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 28 <= (parse_retry_after({"retry-after": in_30s}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_grows_with_jitter_and_never_waits_less_than_retry_after() -> None:
    backoff = Backoff(base_s=0.5, cap_s=4.0, seed=1)
    delays = [backoff.delay(n) for n in range(6)]
    for n, delay in enumerate(delays):
        ceiling = min(4.0, 0.5 * 2**n)
        assert ceiling / 2 <= delay <= ceiling
    assert len({round(d, 6) for d in delays}) == len(delays)  # jittered, not fixed
    assert all(3.0 <= backoff.delay(0, retry_after=3.0) <= 3.3 for _ in range(20))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_truncated_plain_body_is_retried(provider: str, server: WireServer) -> None:
    # A non-streamed call (as the notebook's learning calls are): the server promises a
    # whole JSON body, sends half of it and hangs up.
    server.inject(Fault.disconnect())
    server.add("whole reply")
    completion = make_model(provider, server).complete(HI)
    assert (completion.text, completion.retries) == ("whole reply", 1)
    assert server.requests[0].fault == "disconnect" and not server.requests[0].body.get("stream")
