"""Watching a streamed model call: cancel and the run's limits act mid-stream.

Each model call of a run gets a `StreamWatch` as its `on_text`. Every piece of text it
forwards is also a chance to stop: on cancel, or when the run's tokens, cost or wall
time would pass a limit counting this call's estimate so far, it raises
`StreamStopped`; the provider then closes the connection (the server stops
generating) and returns what came with the usage it knows. Finished calls are charged
to the run's `UsageLedger` (conductor_kernel/limits/ledger.py) the moment they return, from
whichever thread made them, so a cancel never loses the usage of a call that was paid
for.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Generator
from typing import Any, TypeVar, cast

from conductor_kernel.events import Event, LimitHit, TextDelta
from conductor_kernel.interfaces import StreamStopped, Usage
from conductor_kernel.limits.ledger import UsageLedger
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.protocol import answer_complete
from conductor_kernel.text.tokens import by_characters, estimate_tokens

T = TypeVar("T")
_DONE = object()
# After a cancel or a limit, how long the run waits for the calls in flight to close
# their streams and report their usage before it stops without them.
STOP_GRACE_S = 0.25
_POLL_S = 0.02


class RunCancelled(Exception):
    """The run was cancelled; it ends `interrupted`."""


class StreamLimit(Exception):
    """A limit was reached while a call streamed; the run ends with that `LimitHit`."""

    def __init__(self, hit: LimitHit) -> None:
        super().__init__(hit.limit)
        self.hit = hit


class RunGuard:
    """What every call of one run checks: the cancel flag and the limits."""

    def __init__(self, config: RunConfig, ledger: UsageLedger, cancel: threading.Event) -> None:
        self.config = config
        self.ledger = ledger
        self.cancel = cancel
        self.started = time.monotonic()
        self.limit: LimitHit | None = None  # the limit that stopped a stream, once hit
        self._lock = threading.Lock()
        self._closers: dict[int, Callable[[], None]] = {}

    def register(self, key: int, close: Callable[[], None] | None) -> None:
        """A stream in flight, and how to close it from another thread (None: done)."""
        with self._lock:
            if close is None:
                self._closers.pop(key, None)
            else:
                self._closers[key] = close

    def close_streams(self) -> None:
        """Close every stream in flight at once: the reads waiting on them end now,
        whether or not the server sends anything more (a stalled server included)."""
        with self._lock:
            closers = list(self._closers.values())
            self._closers.clear()
        for close in closers:
            try:
                close()
            except OSError:
                pass  # already closed

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def over_limit(
        self, run_id: str, extra_tokens: int = 0, extra_cost: float = 0.0
    ) -> LimitHit | None:
        """The first limit the run has reached, counting a call in flight."""
        cfg = self.config
        usage = self.ledger.run_total()
        checks = [
            ("tokens", usage.tokens_for_limits + extra_tokens, cfg.max_tokens),
            ("cost", usage.cost_usd + extra_cost, cfg.max_cost_usd),
            ("wall_time", self.elapsed(), cfg.max_wall_s),
        ]
        for name, value, maximum in checks:
            if maximum is not None and value >= maximum:
                return LimitHit(run_id=run_id, limit=name, value=value, maximum=maximum)
        return None

    def note_limit(self, hit: LimitHit) -> None:
        with self._lock:
            if self.limit is None:
                self.limit = hit


# Why a stream was stopped at a turn's closed final answer (Completion.stop_reason
# "stopped:answered"): the turn is whole, and is acted on as any other.
ANSWERED = "answered"
# What a turn may write after its answer closes before it is stopped there.
ANSWER_TAIL_CHARS = 200


class StreamWatch:
    """The `on_text` of one call: forwards text as `TextDelta`s, stops on cancel/limit."""

    def __init__(
        self,
        guard: RunGuard,
        emit: Callable[[Event], None],
        *,
        run_id: str,
        parent_id: str,
        model: Any,
        prompt: Callable[[], str],
        stop_at_answer: bool = False,
    ) -> None:
        self.guard = guard
        # A text-protocol meta turn ends at its answer: a small model ran 768 tokens of
        # fence lines past one, paid for and never read.
        self.stop_at_answer = stop_at_answer
        self._text: list[str] = []
        self._answered_at: int | None = None  # characters streamed when it closed
        self._marked = False  # an answer's marker has streamed
        self._tail = ""  # the end of the last piece, for a marker split across two
        self.emit = emit
        self.run_id = run_id
        self.parent_id = parent_id
        self.price = getattr(model, "price", None)
        self._prompt = prompt
        self._prompt_tokens: int | None = None
        self.chars = 0
        self.pieces = 0

    def attach(self, close: Callable[[], None]) -> None:
        """Called by a provider once its stream is open: how to close it from the run's
        thread. If a stop came first, the stream is closed at once."""
        self.guard.register(id(self), close)
        if self.guard.cancel.is_set() or self.guard.limit is not None:
            self.guard.close_streams()

    def detach(self) -> None:
        self.guard.register(id(self), None)

    @property
    def stop_reason(self) -> str | None:
        """Why the run stopped this stream, if it did (for a provider whose read failed
        because the stream was closed under it)."""
        if self.guard.cancel.is_set():
            return "cancelled"
        if self.guard.limit is not None:
            return f"limit:{self.guard.limit.limit}"
        return None

    def __call__(self, text: str) -> None:
        self.emit(TextDelta(parent_id=self.parent_id, run_id=self.run_id, text=text))
        self.chars += len(text)
        self.pieces += 1
        self.check()
        if self.stop_at_answer:
            self._past_answer(text)

    def _past_answer(self, text: str) -> None:
        """Stop a turn that writes on past its closed final answer. A model that ends
        there ends within a few characters, and its stream ends by itself, with the
        server's own usage; only one that runs on is cut (its usage then estimated)."""
        if self._answered_at is None:
            self._text.append(text)
            if not self._marked:
                # The turn is parsed only once an answer's marker has streamed (a long
                # turn of code is full of quotes): looked for in each piece, with the
                # end of the one before, where a marker may have been split.
                seen = self._tail + text
                self._marked = ">>" in seen or "FINAL ANSWER" in seen.upper()
                self._tail = seen[-len("FINAL ANSWER") :]
            # An answer closes on a quote or a fence: only then is it looked for.
            closes = '"' in text or "`" in text
            if self._marked and closes and answer_complete("".join(self._text)):
                self._answered_at = self.chars
                self._text = []
        elif self.chars - self._answered_at > ANSWER_TAIL_CHARS:
            raise StreamStopped(ANSWERED)

    def check_before(self) -> None:
        """Before the call: do not start it after a cancel or a limit already hit."""
        guard = self.guard
        if guard.cancel.is_set():
            raise StreamStopped("cancelled")
        if guard.limit is not None:
            raise StreamStopped(f"limit:{guard.limit.limit}")

    def check(self) -> None:
        self.check_before()
        guard = self.guard
        tokens, cost = self._in_flight()
        hit = guard.over_limit(self.run_id, tokens, cost)
        if hit is not None:
            guard.note_limit(hit)
            raise StreamStopped(f"limit:{hit.limit}")

    def _in_flight(self) -> tuple[int, float]:
        """This call's tokens so far, estimated: prompt (by tokenizer, once) plus output
        (a streamed piece is about a token; the tokenizer's fallback rule if pieces are big)."""
        cfg = self.guard.config
        if cfg.max_tokens is None and cfg.max_cost_usd is None:
            return 0, 0.0
        if self._prompt_tokens is None:
            self._prompt_tokens = estimate_tokens(self._prompt(), wait=False)
        output = max(self.pieces, by_characters(self.chars))
        cost = 0.0
        if self.price is not None and cfg.max_cost_usd is not None:
            cost = self.price.cost(Usage(input_tokens=self._prompt_tokens, output_tokens=output))
        return self._prompt_tokens + output, cost


def in_worker(
    guard: RunGuard, work: Callable[[Callable[[Event], None]], T], *, run_id: str
) -> Generator[Event, None, T]:
    """Run `work(emit)` in a thread, yielding the events it emits as they come.

    A cancel (or the wall-time limit, which needs no text to arrive) is seen within
    `_POLL_S` even while text streams; the calls in flight then get `STOP_GRACE_S` to
    close their streams and charge their usage before the run stops anyway
    (`RunCancelled` or `StreamLimit`). A call stopped part-way returns normally with
    what it had: the caller records it, then stops.
    """
    # queue.Queue, not SimpleQueue: on CPython 3.11 a signal handled inside
    # SimpleQueue.get(timeout=...) near its deadline turns the wait into one without a
    # timeout, so a Ctrl-C whose handler asks for a cancel was never seen (the run hung
    # until the worker's next event). Queue waits through a lock that re-checks it.
    events: queue.Queue[Any] = queue.Queue()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work(events.put)
        except BaseException as exc:
            box["error"] = exc
        finally:
            events.put(_DONE)

    threading.Thread(target=target, daemon=True, name="conductor-worker").start()
    stop_deadline: float | None = None
    while True:
        if stop_deadline is None:
            if guard.cancel.is_set():
                stop_deadline = time.monotonic() + STOP_GRACE_S
                guard.close_streams()
            elif guard.config.max_wall_s is not None and guard.limit is None:
                hit = guard.over_limit(run_id)
                if hit is not None and hit.limit == "wall_time":
                    guard.note_limit(hit)
                    stop_deadline = time.monotonic() + STOP_GRACE_S
                    guard.close_streams()
            elif guard.limit is not None:  # a call's stream hit a limit: stop the others
                stop_deadline = time.monotonic() + STOP_GRACE_S
                guard.close_streams()
        timeout = _POLL_S
        if stop_deadline is not None:
            timeout = stop_deadline - time.monotonic()
            if timeout <= 0:
                stop_now(guard)
        try:
            item = events.get(timeout=max(timeout, 0.001))
        except queue.Empty:
            continue
        if item is _DONE:
            break
        yield item
    if "error" in box:
        error = box["error"]
        if isinstance(error, StreamStopped) or stop_deadline is not None:
            stop_now(guard)  # a model that does not stream let the stop through
        raise error
    return cast(T, box["value"])  # work() returned it


def stop_now(guard: RunGuard) -> None:
    """End the run: cancelled, or at the limit a stream was stopped at."""
    if guard.cancel.is_set():
        raise RunCancelled()
    if guard.limit is not None:
        raise StreamLimit(guard.limit)
    raise RunCancelled()
