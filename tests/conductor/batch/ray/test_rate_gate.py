"""The cluster's rate gate on its own: the shared pause and the per-minute budgets."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from conductor.batch.ray import gate as gate_module
from conductor.batch.ray.gate import WINDOW_S, RateGate


def test_a_pause_holds_every_caller_and_budgets_count_the_whole_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The gate's clock stands still: what it answers depends on its calls, not on how
    # fast a busy machine gets from one call to the next.
    monkeypatch.setattr(
        gate_module, "time", SimpleNamespace(monotonic=lambda: 1000.0, sleep=time.sleep)
    )

    async def scenario() -> None:
        gate = RateGate(rpm=3, tpm=1000)
        assert [await gate.admit() for _ in range(3)] == [0.0, 0.0, 0.0]
        wait = await gate.admit()  # a fourth request within the minute waits its turn
        assert 0 < wait <= WINDOW_S
        stats = await gate.stats()
        assert stats["requests_admitted"] == 3 and stats["requests_held"] == 1

        tokens = RateGate(tpm=100)
        assert await tokens.admit() == 0.0
        await tokens.spent(150)  # that call used the minute's tokens: the next waits
        assert 0 < await tokens.admit() <= WINDOW_S

        shared = RateGate()
        await shared.pause(2.0)
        await shared.pause(0.5)  # a shorter pause never cuts a longer one short
        assert 1.5 < await shared.admit() <= 2.0
        stats = await shared.stats()
        assert stats["pauses"] == 2 and 1.9 < stats["paused_s"] <= 2.0

    asyncio.run(scenario())


class _Remote:
    """A stand-in for an actor method's `.remote`: records what it was sent."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def remote(self, tokens: int) -> None:
        self.sent.append(tokens)


class _Gate:
    def __init__(self) -> None:
        self.spent = _Remote()


def test_the_gate_hears_each_calls_tokens_through_the_one_metered_model() -> None:
    from conductor.batch.ray.gate import spent_on
    from conductor_kernel.interfaces import Completion, Message, Usage
    from conductor_kernel.limits.ledger import MeteredModel, UsageLedger

    class Model:
        name = "m"

        def complete(self, messages: list[Message], **_: object) -> Completion:
            return Completion("ok", Usage(input_tokens=30, output_tokens=12, calls=1))

    gate, ledger = _Gate(), UsageLedger()
    on_worker = MeteredModel(Model(), spent_on(gate))
    # The run's loop meters the worker's model on its ledger: the gate still hears.
    ledger.metered(on_worker, "meta").complete([Message("user", "hi")])
    on_worker.complete([Message("user", "again")])
    assert gate.spent.sent == [42, 42]
    assert ledger.total().calls == 1
