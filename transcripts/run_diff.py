"""Two runs side by side, aligned round by round and call by call.

Rounds are aligned by what their calls were (expert names and instructions), so one
run's extra round shows as a round only one side has instead of shifting every later
pair; calls inside a pair of rounds are aligned the same way. A pair is *same* when
every compared field is equal: the meta model's text, and for a call its expert, its
instruction, its reply, the code it ran and that code's stdout, stderr and exit. What
only follows from those (the next round's prompt, which quotes the outputs; ids,
times, token estimates) is shown but not counted as a change.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from record.audit import audited
from record.fold import CallView, RoundView, RunOutline

Status = Literal["same", "changed", "only_left", "only_right"]
_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
T = TypeVar("T")


@dataclass
class FieldDiff:
    name: str
    left: str
    right: str

    @property
    def same(self) -> bool:
        return self.left == self.right

    def ops(self) -> list[tuple[str, str]]:
        """The change as (`=`|`-`|`+`, text) pieces, word by word."""
        return inline_diff(self.left, self.right)


@dataclass
class CallPair:
    left: CallView | None
    right: CallView | None
    fields: list[FieldDiff] = field(default_factory=list)

    @property
    def status(self) -> Status:
        if self.left is None:
            return "only_right"
        if self.right is None:
            return "only_left"
        return "same" if all(f.same for f in self.fields) else "changed"

    @property
    def changed(self) -> list[FieldDiff]:
        return [f for f in self.fields if not f.same]

    @property
    def name(self) -> str:
        return (self.left or self.right).name  # type: ignore[union-attr]


@dataclass
class RoundPair:
    left: RoundView | None
    right: RoundView | None
    meta: FieldDiff
    calls: list[CallPair] = field(default_factory=list)
    position: int = 0  # 1-based place among the aligned rounds

    @property
    def status(self) -> Status:
        if self.left is None:
            return "only_right"
        if self.right is None:
            return "only_left"
        if self.meta.same and all(c.status == "same" for c in self.calls):
            return "same"
        return "changed"

    @property
    def label(self) -> str:
        numbers = [str(r.number) if r else "-" for r in (self.left, self.right)]
        return numbers[0] if numbers[0] == numbers[1] else " / ".join(numbers)


@dataclass
class RunDiff:
    left: RunOutline
    right: RunOutline
    rounds: list[RoundPair]
    question: FieldDiff
    final: FieldDiff

    @property
    def changes(self) -> list[tuple[RoundPair, CallPair | None, FieldDiff | None]]:
        """Every difference: a round or call only one side has, or a field that differs."""
        found: list[tuple[RoundPair, CallPair | None, FieldDiff | None]] = []
        for pair in self.rounds:
            if pair.status in ("only_left", "only_right"):
                found.append((pair, None, None))
                continue
            if not pair.meta.same:
                found.append((pair, None, pair.meta))
            for call in pair.calls:
                if call.status in ("only_left", "only_right"):
                    found.append((pair, call, None))
                found += [(pair, call, f) for f in call.changed]
        return found

    @property
    def identical(self) -> bool:
        return self.question.same and self.final.same and not self.changes


def inline_diff(left: str, right: str) -> list[tuple[str, str]]:
    """Word-level differences: a list of (`=`, common) / (`-`, left only) / (`+`, right only)."""
    a, b = _TOKENS.findall(left), _TOKENS.findall(right)
    ops: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            ops.append(("=", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            ops.append(("-", "".join(a[i1:i2])))
        if j2 > j1:
            ops.append(("+", "".join(b[j1:j2])))
    return ops


def _flat(text: str) -> str:
    return " ".join(text.split())


def _call_key(call: CallView) -> tuple[str, str]:
    return (call.name, _flat(call.instruction))


def _round_key(r: RoundView) -> Hashable:
    return tuple(_call_key(c) for c in r.calls) or ("text", _flat(r.text)[:200])


def _exec_parts(call: CallView) -> dict[str, list[str]]:
    """Per part of a sandbox run (code, stdout, stderr, exit status), one entry per run."""
    parts: dict[str, list[str]] = {"code": [], "stdout": [], "stderr": [], "exit status": []}
    for x in call.execs:
        status = "timed out" if x.result.timed_out else f"exit {x.result.exit_code}"
        if x.result.signal is not None:
            status = f"signal {x.result.signal}"
        for name, value in zip(
            parts, (x.code, x.result.stdout, x.result.stderr, status), strict=True
        ):
            parts[name].append(value)
    return parts


def _compare_calls(left: CallView, right: CallView) -> list[FieldDiff]:
    fields = [
        FieldDiff("expert", left.name, right.name),
        FieldDiff("instruction", left.instruction, right.instruction),
        FieldDiff("reply", left.reply, right.reply),
    ]
    ours, theirs = _exec_parts(left), _exec_parts(right)
    for name in ours:  # several runs of one call are joined, in order
        fields.append(FieldDiff(name, "\n---\n".join(ours[name]), "\n---\n".join(theirs[name])))
    return fields


def _align(
    left: list[T], right: list[T], key: Callable[[T], Hashable]
) -> list[tuple[T | None, T | None]]:
    """Pairs of items, aligned where their keys match; unmatched stretches pair in order."""
    matcher = difflib.SequenceMatcher(
        None, [key(x) for x in left], [key(x) for x in right], autojunk=False
    )
    pairs: list[tuple[T | None, T | None]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a, b = left[i1:i2], right[j1:j2]
        if tag == "equal" or tag == "replace":
            common = min(len(a), len(b))
            pairs += list(zip(a[:common], b[:common], strict=True))
            pairs += [(x, None) for x in a[common:]] + [(None, y) for y in b[common:]]
        else:
            pairs += [(x, None) for x in a] + [(None, y) for y in b]
    return pairs


def _round_pair(left: RoundView | None, right: RoundView | None) -> RoundPair:
    pair = RoundPair(
        left, right, FieldDiff("meta model", left.text if left else "", right.text if right else "")
    )
    if left is None or right is None:
        return pair
    for a, b in _align(left.calls, right.calls, _call_key):
        call = CallPair(a, b)
        if a is not None and b is not None:
            call.fields = _compare_calls(a, b)
        pair.calls.append(call)
    return pair


def diff_runs(left: RunOutline, right: RunOutline) -> RunDiff:
    """The two runs aligned; each side carries its audit findings, which the views show."""
    audited(left)
    audited(right)
    rounds = [_round_pair(a, b) for a, b in _align(left.rounds, right.rounds, _round_key)]
    for position, pair in enumerate(rounds, start=1):
        pair.position = position

    def answer(run: RunOutline) -> str:
        return run.final.answer if run.final is not None else ""

    return RunDiff(
        left,
        right,
        rounds,
        question=FieldDiff("question", left.question, right.question),
        final=FieldDiff("final answer", answer(left), answer(right)),
    )
