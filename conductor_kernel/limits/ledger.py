"""One usage ledger per run: every model call of the run writes to it.

The meta turns, the experts, and the notebook's calls (recall narrowing, reflection,
task-type choice, induction) all go through `UsageLedger.metered(model, purpose)`, which
records each call's usage the moment the call returns. The run's limits are checked
against the ledger, and `RunFinished.usage`, `runs.db` and batch reports read it, so a
call that returned is counted whichever way the run ends afterwards.

A call cut short (cancelled mid-stream) returns what it had used, estimated. A call that
fails after the server began answering (a reset or stall after streamed text, attempts
retried after a stream broke) raises an error carrying what it spent (`spent_on`); the
metered model records that too before the error goes on, so no failure spends for free.

`MeteredModel` is the one wrapper that counts calls; what it counts into is passed in
(a meter), so the batch's ablation and the Ray rate gate use it too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from conductor_kernel.interfaces import (
    CallRole,
    ChatModel,
    Completion,
    Message,
    TextCallback,
    ToolSpec,
    Usage,
)

# Purposes a call is recorded under. The run's own calls come first; learning's calls
# are made after `RunFinished` and are reported in their own event.
RUN_PURPOSES = ("meta", "expert", "recall")
LEARNING_PURPOSES = ("reflection", "type_choice", "induction", "learning")


# What a metered model tells after each call that returned: its completion.
Meter = Callable[[Completion], None]


@runtime_checkable
class Admission(Protocol):
    """A meter that is also asked before each call: it returns the reply limit the call
    may have (lowered to fit what is left) or raises to refuse the call, which is then
    not made. The learning budget is one (lessons/write/budget.py)."""

    def admit(
        self, messages: list[Message], *, system: str | None, max_tokens: int | None
    ) -> int | None: ...


# The attribute of an exception that holds what its failed call spent (a `Usage`).
_SPENT = "conductor_spent_usage"
# The stop reason of the completion a meter is told for a call that failed.
FAILED_CALL = "failed"


def mark_spent(error: BaseException, usage: Usage) -> None:
    """Attach to `error` what its failed call spent, for the meters to record."""
    setattr(error, _SPENT, usage)


def spent_on(error: BaseException) -> Usage | None:
    """What the failed call that raised `error` spent, if anything was known."""
    usage = getattr(error, _SPENT, None)
    return usage if isinstance(usage, Usage) else None


@dataclass(frozen=True)
class LedgerEntry:
    purpose: str
    usage: Usage
    model: str = ""


class UsageLedger:
    """Thread-safe: experts of one turn record from several threads at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[LedgerEntry] = []

    def record(self, purpose: str, usage: Usage, model: str = "") -> None:
        with self._lock:
            self._entries.append(LedgerEntry(purpose, usage, model))

    @property
    def entries(self) -> list[LedgerEntry]:
        with self._lock:
            return list(self._entries)

    def total(self, *purposes: str) -> Usage:
        """The sum over the given purposes (every purpose when none is given)."""
        total = Usage()
        for entry in self.entries:
            if not purposes or entry.purpose in purposes:
                total += entry.usage
        return total

    def run_total(self) -> Usage:
        """What the run itself spent: everything but learning."""
        total = Usage()
        for entry in self.entries:
            if entry.purpose not in LEARNING_PURPOSES:
                total += entry.usage
        return total

    def learning_total(self) -> Usage:
        return self.total(*LEARNING_PURPOSES)

    def mark(self) -> int:
        """A position in the ledger; `since(mark)` sums what was recorded after it."""
        with self._lock:
            return len(self._entries)

    def since(self, mark: int) -> Usage:
        total = Usage()
        for entry in self.entries[mark:]:
            total += entry.usage
        return total

    def by_purpose(self) -> dict[str, Usage]:
        out: dict[str, Usage] = {}
        for entry in self.entries:
            out[entry.purpose] = out.get(entry.purpose, Usage()) + entry.usage
        return out

    def meter(self, purpose: str) -> LedgerMeter:
        """A meter that records each call on this ledger under `purpose`."""
        return LedgerMeter(self, purpose)

    def metered(self, model: ChatModel, purpose: str) -> MeteredModel:
        """`model` with its calls recorded here under `purpose`. A model already metered
        on this ledger is recorded once, under the new purpose; its other meters (a
        cluster's rate gate, another ledger) stay."""
        meters: tuple[Meter, ...] = ()
        if isinstance(model, MeteredModel):
            meters = tuple(m for m in model.meters if getattr(m, "ledger", None) is not self)
            model = model.inner
        return MeteredModel(model, *meters, self.meter(purpose))


@dataclass(frozen=True)
class LedgerMeter:
    """Records each call's usage on a ledger under one purpose."""

    ledger: UsageLedger
    purpose: str

    def __call__(self, completion: Completion) -> None:
        self.ledger.record(self.purpose, completion.usage, completion.model)


class MeteredModel:
    """A `ChatModel` that hands each returned call to its meters, in order.

    The one wrapper for counting calls: a run's ledger (`UsageLedger.metered`), the
    ablation's tally of what learning cost, a Ray cluster's token budget. Metering a
    metered model again adds meters to one wrapper rather than nesting wrappers. Every
    other attribute (`name`, an `offline` flag, `backoff`...) is the wrapped model's.
    """

    inner: ChatModel
    meters: tuple[Meter, ...]

    def __init__(self, model: ChatModel, *meters: Meter) -> None:
        if isinstance(model, MeteredModel):
            meters = (*model.meters, *meters)
            model = model.inner
        self.inner = model
        self.meters = meters

    @property
    def name(self) -> str:
        return self.inner.name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        on_text: TextCallback | None = None,
        cache: bool = False,
        role: CallRole = "meta",
        max_tokens: int | None = None,
        tools: Sequence[ToolSpec] | None = None,
        grammar: str | None = None,
        temperature: float | None = None,
    ) -> Completion:
        for meter in self.meters:
            if isinstance(meter, Admission):
                max_tokens = meter.admit(messages, system=system, max_tokens=max_tokens)
        # Passed on only when given: a model that takes no tools need not know the word.
        offer: dict[str, Any] = {} if tools is None else {"tools": tools}
        if grammar is not None:
            offer["grammar"] = grammar
        if temperature is not None:
            offer["temperature"] = temperature
        try:
            completion = self.inner.complete(
                messages,
                system=system,
                on_text=on_text,
                cache=cache,
                role=role,
                max_tokens=max_tokens,
                **offer,
            )
        except Exception as error:
            spent = spent_on(error)
            if spent is not None:
                failed = Completion("", spent, self.inner.name, FAILED_CALL)
                for meter in self.meters:
                    meter(failed)
            raise
        for meter in self.meters:
            meter(completion)
        return completion
