"""One replayed record against its published run: the final answer, the expert calls
(names and instructions, in order), the number of meta turns, the sandbox outputs
(conductor/replay/outputs.py) and what the loop quoted back (conductor/replay/quotes.py).
The replay is read through its fold (record/fold.py). Each difference becomes a
`Mismatch` on the record's `RecordResult`.
"""

from __future__ import annotations

from conductor.replay.outputs import same_code_output, short
from conductor.replay.quotes import check_quotes
from conductor.replay.results import Mismatch, RecordResult
from conductor_kernel.events import Event, ExpertCallStarted
from record.fold import RunOutline, outline
from record.published import PublishedRecord, RecordedCall, normalise_expert_name


def compare(
    record: PublishedRecord, events: list[Event], result: RecordResult, *, ran_code: bool
) -> None:
    """Final answer, expert calls and meta turns; the sandbox outputs when code ran."""
    line = record.line
    run = outline(events)
    finished = run.finished
    answer = finished.final_answer if finished else None
    result.same_final_answer = _same_answer(answer, record.final_answer)
    if not result.same_final_answer:
        detail = f"recorded {short(record.final_answer)}, replayed {short(answer)}"
        result.mismatches.append(Mismatch(line, "final_answer", detail))

    started = _calls_in_order(run)
    ours = [(e.round, normalise_expert_name(e.name), e.instruction.strip()) for e in started]
    theirs = [
        (t.number, c.expert, c.instruction.strip()) for t in record.turns for c in t.calls or []
    ]
    result.same_expert_calls = ours == theirs
    if not result.same_expert_calls:
        result.mismatches.append(Mismatch(line, "expert_calls", _first_difference(theirs, ours)))

    rounds = finished.rounds if finished else 0
    result.same_rounds = rounds == record.rounds
    if not result.same_rounds:
        detail = f"recorded {record.rounds} meta turns, replayed {rounds}"
        result.mismatches.append(Mismatch(line, "rounds", detail))

    if finished is not None:
        usage = finished.meta_usage
        result.input_tokens = usage.input_tokens
        result.input_tokens_cached = usage.input_tokens - usage.cache_read_tokens
    if ran_code:  # without a sandbox there is no output to compare
        _compare_sandbox(record, run, result)


def compare_quotes(
    record: PublishedRecord,
    events: list[Event],
    requests: list[str],
    result: RecordResult,
    *,
    ran_code: bool,
) -> None:
    """What our loop sent back each round against what the harness sent (replay_quotes)."""
    if not ran_code:
        return  # without a sandbox no run report exists to compare
    names: dict[int, list[str]] = {}
    for event in _calls_in_order(outline(events)):
        names.setdefault(event.round, []).append(event.name)
    check = check_quotes(record, requests, names)
    result.quoted_rounds, result.quoted_identical = check.rounds, check.identical
    for why in check.differences or []:
        result.mismatches.append(Mismatch(record.line, "quoted_output", why))


def _calls_in_order(run: RunOutline) -> list[ExpertCallStarted]:
    """The expert calls the replay started, by round and place in the turn (concurrent
    calls start in any order)."""
    started = [c.started for c in run.calls if c.started is not None]
    return sorted(started, key=lambda e: (e.round, e.index))


def _compare_sandbox(record: PublishedRecord, run: RunOutline, result: RecordResult) -> None:
    result.sandbox_runs += len(run.execs)
    for call in run.calls:
        recorded = _recorded_call(record, call.started) if call.started is not None else None
        if recorded is None or recorded.code_output is None:
            continue  # the original harness ran no code here
        for event in call.execs:
            result.sandbox_compared += 1
            same, why = same_code_output(event.result, recorded.code_output)
            if same:
                result.sandbox_identical += 1
            else:
                where = f"turn {call.started.round if call.started else '?'} {recorded.expert}"
                result.mismatches.append(Mismatch(record.line, "sandbox", f"{where}: {why}"))


def _recorded_call(record: PublishedRecord, call: ExpertCallStarted) -> RecordedCall | None:
    if not 1 <= call.round <= len(record.turns):
        return None
    for recorded in record.turns[call.round - 1].calls or []:
        if recorded.instruction.strip() == call.instruction.strip():
            return recorded
    return None


def _same_answer(ours: str | None, theirs: str | None) -> bool:
    if ours is None or theirs is None:
        return ours is None and theirs is None
    return ours.strip() == theirs.strip()


def _first_difference(theirs: list[tuple[int, str, str]], ours: list[tuple[int, str, str]]) -> str:
    for i, (a, b) in enumerate(zip(theirs, ours, strict=False)):
        if a != b:
            return (
                f"call {i + 1}: recorded turn {a[0]} {a[1]} {short(a[2], 40)}, "
                f"replayed turn {b[0]} {b[1]} {short(b[2], 40)}"
            )
    if len(theirs) > len(ours):
        a = theirs[len(ours)]
        return (
            f"recorded {len(theirs)} calls, replayed {len(ours)}; first missing: turn {a[0]} {a[1]}"
        )
    b = ours[len(theirs)]
    return f"recorded {len(theirs)} calls, replayed {len(ours)}; first extra: turn {b[0]} {b[1]}"
