"""A parsed published record as our events (read.py parses it).

`published_events` gives the meta turns, the expert calls the harness dispatched, the
code it ran and the output it reported, nudges, the retry defect and the answer: the one
conversion every reader uses (the importer writes them as a transcript, the audit and
the notebook read them). Token counts are estimates; the records hold none.
`example_events` makes a question with its known answer (a task file's line) a run that
answered it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    LimitHit,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import ExecResult, Usage
from conductor_kernel.text.tokens import estimate_tokens
from record.published.read import (
    META_TURN_CAP,
    MODEL,
    RECORDED_BACKEND,
    PublishedRecord,
    PublishedTurn,
    RecordedCall,
    harness_answer,
    strip_round,
)

# -- a published record as our events ------------------------------------------------


def run_id_for(record: PublishedRecord, method: str = "") -> str:
    """Stable per record; the method first for any but meta-prompting, so that a
    baseline's runs and meta-prompting's runs of one task never share an id."""
    prefix = f"{method}-" if method and method != "meta" else ""
    return f"published-{prefix}{record.task}-{record.line:04d}"


def without_calls(record: PublishedRecord) -> PublishedRecord:
    """The record as a baseline's harness ran it: no turn dispatched anything."""
    turns = []
    for n, turn in enumerate(record.turns):
        answer = harness_answer(turn.text) if turn.reply_to_it is None else None
        outcome = "answer" if answer is not None else ("nudge" if turn.reply_to_it else "last")
        turns.append(replace(turn, calls=None, answer=answer, outcome=outcome))
        if n == len(record.turns) - 1:
            record = replace(record, final_answer=answer)
    return replace(record, turns=turns)


def recorded_result(code_output: str) -> ExecResult:
    """An `ExecResult` from what the harness reported (it kept only one stream)."""
    if code_output.startswith("Execution took too long"):
        return ExecResult(timed_out=True, backend=RECORDED_BACKEND)
    if code_output.startswith("Error in execution:"):
        stderr = code_output.removeprefix("Error in execution:").strip()
        return ExecResult(stderr=stderr, exit_code=1, backend=RECORDED_BACKEND)
    if code_output.startswith("(No output was generated"):
        return ExecResult(exit_code=0, backend=RECORDED_BACKEND)
    return ExecResult(
        stdout=code_output, exit_code=0, backend=RECORDED_BACKEND, stdout_bytes=len(code_output)
    )


def published_events(
    record: PublishedRecord,
    *,
    source_file: str = "",
    run_id: str | None = None,
    method: str = "",
) -> list[Event]:
    """The events of one published run, in the order they happened: what the original
    harness did, as `parse_record` recovers it. `run_id` replaces the stable
    `published-<task>-<line>` (a caller holding runs of two folders apart); `method`
    names the method the run used, and a baseline's record should come through
    `without_calls` first."""
    return list(_events(record, run_id or run_id_for(record, method), source_file, method))


def _events(record: PublishedRecord, run_id: str, source_file: str, method: str) -> Iterator[Event]:
    clock = _Clock()
    yield RunStarted(
        run_id=run_id,
        ts=clock(),
        question=record.question,
        task=record.task,
        target=record.target,
        method=method,
        model=MODEL,
        expert_model=MODEL,
        sandbox=RECORDED_BACKEND,
        system_prompt=record.system,
        limits={"max_rounds": META_TURN_CAP, "python_timeout_s": 3.0},
        tags={
            "source": "published",
            "file": source_file,
            "line": record.line,
            "retry_defect": record.retry_defect,
        },
    )
    meta_usage, expert_usage = Usage(), Usage()
    expert_calls = sandbox_runs = 0
    history_tokens = estimate_tokens(record.system)
    for turn in record.turns:
        prompt = strip_round(turn.prompt)
        history_tokens += estimate_tokens(turn.prompt)
        started = MetaTurnStarted(run_id=run_id, ts=clock(), round=turn.number, user_message=prompt)
        yield started
        usage = Usage(
            input_tokens=history_tokens, output_tokens=estimate_tokens(turn.text), calls=1
        )
        history_tokens += usage.output_tokens
        meta_usage += usage
        yield MetaTurnFinished(
            parent_id=started.id,
            run_id=run_id,
            ts=clock(),
            round=turn.number,
            text=turn.text,
            usage=usage,
            model=MODEL,
        )
        for index, call in enumerate(turn.calls or []):
            expert_calls += 1
            for event in _call_events(call, run_id, started.id, turn.number, index, clock):
                if isinstance(event, SandboxExec):
                    sandbox_runs += 1
                if isinstance(event, ExpertCallFinished):
                    expert_usage += event.usage
                yield event
        yield from _turn_outcome(turn, run_id, started.id, clock)
    answered = record.final_answer is not None
    # A baseline's log that ends with a nudge hit its cap (12 or 16 turns there).
    capped = record.rounds >= META_TURN_CAP or (
        bool(method) and bool(record.turns) and record.turns[-1].outcome == "nudge"
    )
    if not answered and capped:
        cap = max(record.rounds, META_TURN_CAP) if not method else record.rounds
        yield LimitHit(run_id=run_id, ts=clock(), limit="rounds", value=record.rounds, maximum=cap)
    status = "answered" if answered else ("limit" if capped else "no_answer")
    yield RunFinished(
        run_id=run_id,
        ts=clock(),
        status=status,
        final_answer=record.final_answer,
        rounds=record.rounds,
        usage=meta_usage + expert_usage,
        meta_usage=meta_usage,
        expert_calls=expert_calls,
        sandbox_runs=sandbox_runs,
    )


def _call_events(
    call: RecordedCall, run_id: str, parent_id: str, round_no: int, index: int, clock: _Clock
) -> Iterator[Event]:
    started = ExpertCallStarted(
        parent_id=parent_id,
        run_id=run_id,
        ts=clock(),
        round=round_no,
        index=index,
        name=call.expert,
        instruction=call.instruction,
        prompt=call.instruction,  # the harness sent the instruction alone
        is_python=call.is_python,
    )
    yield started
    if call.code is not None and call.code_output is not None:
        yield SandboxExec(
            parent_id=started.id,
            run_id=run_id,
            ts=clock(),
            code=call.code,
            result=recorded_result(call.code_output),
            source="expert",
        )
    reply = call.reply or ""
    yield ExpertCallFinished(
        parent_id=started.id,
        run_id=run_id,
        ts=clock(),
        name=call.expert,
        text=reply,
        output=call.output or "",
        usage=Usage(
            input_tokens=estimate_tokens(call.instruction),
            output_tokens=estimate_tokens(reply),
            calls=1,
        ),
        model=MODEL,
        error="the published log lost this reply (harness retry defect)" if call.lost else None,
    )


def _turn_outcome(
    turn: PublishedTurn, run_id: str, parent_id: str, clock: _Clock
) -> Iterator[Event]:
    """What the harness did after the turn: took its answer, nudged, or lost its calls."""
    if turn.outcome == "answer" and turn.answer is not None:
        yield FinalAnswer(
            parent_id=parent_id, run_id=run_id, ts=clock(), round=turn.number, answer=turn.answer
        )
    elif turn.outcome == "nudge":
        yield Observation(
            parent_id=parent_id,
            run_id=run_id,
            ts=clock(),
            reason="no_call_or_answer",
            message=strip_round(turn.reply_to_it or ""),
        )
    elif turn.outcome == "lost":
        yield Observation(
            parent_id=parent_id,
            run_id=run_id,
            ts=clock(),
            reason="retry_defect",
            message=(
                "The original harness failed while handling this turn's expert calls and "
                "asked the meta model again; their replies never reached the log."
            ),
        )


class _Clock:
    """Increasing timestamps from the import time, so events keep their order."""

    def __init__(self) -> None:
        self._now = time.time()

    def __call__(self) -> float:
        self._now += 0.001
        return self._now


def example_events(run_id: str, question: str, target: str, task: str = "") -> list[Event]:
    """A question with its known answer (a task file's line) as a run that answered it:
    the smallest run worth learning from, a solved example."""
    return [
        RunStarted(run_id=run_id, question=question, target=target, task=task, model="published"),
        FinalAnswer(run_id=run_id, answer=target, round=1),
        RunFinished(run_id=run_id, status="answered", final_answer=target, rounds=1),
    ]
