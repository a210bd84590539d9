"""One metered model: each call that returns is told once to every meter on the model.

A run's ledger, the ablation's tally of what learning cost and the Ray rate gate's token
budget all count through `MeteredModel`; they used to be three classes, and wrapping
one in another either nested or (the ledger's rule, "never count a call twice") dropped
the other's count. Here any stack of meterings is generated and every meter's count is
checked against the calls made.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.interfaces import Completion, Message, Usage
from conductor_kernel.limits.ledger import MeteredModel, UsageLedger


@dataclass
class Counted:
    """A chat model whose n-th call used n input tokens."""

    name: str = "counted"
    offline: bool = True
    calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def complete(self, messages: list[Message], **_: Any) -> Completion:
        with self.lock:
            self.calls += 1
            n = self.calls
        return Completion(f"reply {n}", Usage(input_tokens=n, output_tokens=1, calls=1), "m")


class Tally:
    """A meter of its own (as the rate gate's): the tokens it was told of."""

    def __init__(self) -> None:
        self.tokens = 0
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, completion: Completion) -> None:
        with self._lock:
            self.tokens += completion.usage.input_tokens
            self.calls += 1


# One step of wrapping: metered on ledger i under a purpose, or given a tally of its own.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("ledger"), st.integers(0, 2), st.sampled_from(["meta", "recall"])),
        st.tuples(st.just("tally"), st.integers(0, 1), st.just("")),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(steps, st.integers(1, 6))
def test_every_meter_counts_each_call_once_however_the_model_is_wrapped(
    wrapping: list[tuple[str, int, str]], calls: int
) -> None:
    inner = Counted()
    ledgers = [UsageLedger() for _ in range(3)]
    tallies = [Tally() for _ in range(2)]
    model: Any = inner
    last_purpose: dict[int, str] = {}
    tallied: Counter[int] = Counter()
    for kind, i, purpose in wrapping:
        if kind == "ledger":
            model = ledgers[i].metered(model, purpose)
            last_purpose[i] = purpose
        else:
            model = MeteredModel(model, tallies[i])
            tallied[i] += 1
    for _ in range(calls):
        model.complete([Message("user", "hi")])

    assert isinstance(model, MeteredModel) and model.inner is inner  # one wrapper, flat
    spent = calls * (calls + 1) // 2  # 1 + 2 + ... input tokens
    for i, ledger in enumerate(ledgers):
        if i in last_purpose:  # once per call, under the purpose it was last metered for
            assert ledger.by_purpose() == {
                last_purpose[i]: Usage(input_tokens=spent, output_tokens=calls, calls=calls)
            }
        else:
            assert ledger.entries == []
    for i, tally in enumerate(tallies):  # a meter added twice is told twice: as asked
        assert (tally.calls, tally.tokens) == (calls * tallied[i], spent * tallied[i])


def test_a_rate_gates_meter_survives_the_runs_ledger_and_the_notebooks_metering() -> None:
    """As on a Ray worker: the gate's meter is on the model the session gets; the loop
    meters it on the run's ledger as "meta", the notebook again as "learning"."""
    gate, ledger = Tally(), UsageLedger()
    on_worker = MeteredModel(Counted(), gate)
    ledger.metered(on_worker, "meta").complete([Message("user", "a turn")])
    learning = ledger.metered(ledger.metered(on_worker, "recall"), "learning")
    learning.complete([Message("user", "reflect")])
    assert (gate.calls, gate.tokens) == (2, 3)
    assert {p: u.input_tokens for p, u in ledger.by_purpose().items()} == {
        "meta": 1,
        "learning": 2,
    }


def test_attributes_are_the_wrapped_models() -> None:
    inner = Counted(name="the model", offline=False)
    model = UsageLedger().metered(MeteredModel(inner, Tally()), "meta")
    assert (model.name, model.offline) == ("the model", False)


def test_calls_from_many_threads_are_each_counted_once() -> None:
    ledger, tally = UsageLedger(), Tally()
    model = ledger.metered(MeteredModel(Counted(), tally), "expert")
    threads = [
        threading.Thread(target=lambda: [model.complete([]) for _ in range(50)]) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = ledger.total()
    assert total.calls == tally.calls == 400
    assert total.input_tokens == tally.tokens == 400 * 401 // 2


def test_the_product_defines_one_metered_model() -> None:
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    packages = ("conductor_kernel", "record", "experts", "sandbox", "transcripts", "lessons")
    found = [
        f"{path.relative_to(root)}:{node.name}"
        for package in (*packages, "conductor", "tui")
        for path in (root / package).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and "metered" in node.name.lower()
    ]
    assert found == ["conductor_kernel/limits/ledger.py:MeteredModel"]


class Allowance:
    """A meter with admission: at most `calls` calls, each reply limited to `cap`."""

    def __init__(self, calls: int, cap: int) -> None:
        self.left, self.cap, self.told = calls, cap, 0

    def admit(self, messages: list[Message], *, system: str | None, max_tokens: int | None) -> int:
        if self.left <= 0:
            raise RuntimeError("over the allowance")
        self.left -= 1
        return min(max_tokens or self.cap, self.cap)

    def __call__(self, completion: Completion) -> None:
        self.told += 1


@settings(max_examples=50, deadline=None)
@given(calls=st.integers(0, 4), asked=st.integers(1, 6), wanted=st.integers(1, 500))
def test_a_meter_with_admission_limits_and_refuses_calls_before_they_are_made(
    calls: int, asked: int, wanted: int
) -> None:
    seen: list[int | None] = []

    class Recorder(Counted):
        def complete(self, messages: list[Message], **kw: Any) -> Completion:
            seen.append(kw.get("max_tokens"))
            return super().complete(messages, **kw)

    inner, allowance, ledger = Recorder(), Allowance(calls, 100), UsageLedger()
    model = ledger.metered(MeteredModel(inner, allowance), "learning")  # the stack keeps it
    made = refused = 0
    for _ in range(asked):
        try:
            model.complete([Message("user", "q")], max_tokens=wanted)
            made += 1
        except RuntimeError:
            refused += 1
    assert made == min(calls, asked) == inner.calls == allowance.told
    assert refused == asked - made
    assert seen == [min(wanted, 100)] * made  # lowered to fit, never raised
    assert ledger.total().calls == made  # a refused call is not made, so not counted
