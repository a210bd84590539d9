"""Importing the paper's published runs as our own transcripts.

Each published record becomes one event transcript (`runs/<run-id>.jsonl`) indexed in
`runs.db`, so it can be listed, searched, shown and audited like a run of ours. The
events say what the original harness did, as `record.published` recovers it:
meta turns, the expert calls it dispatched (its name for each, our instruction text),
the code it ran and the output it reported, nudges, the retry defect, the answer.

Run ids are stable (`published-<task>-<line>`, with the method first for any but
meta-prompting: `published-standard-<task>-<line>`): importing a file again replaces its
runs instead of adding copies. Token counts are estimates; the records hold none.

A baseline's runs (`method` set, `expert_calls=False`) are one conversation: no turn is
read for calls, a turn without an answer was nudged, and a log ending with a nudge nobody
answered hit the harness's cap.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

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
from conductor_kernel.tokens import estimate_tokens
from record.home import runs_dir
from record.published import (
    PublishedRecord,
    PublishedTurn,
    RecordedCall,
    harness_answer,
    read_published,
    strip_round,
)
from record.writer import TranscriptWriter
from transcripts.index import RunIndex

MODEL = "gpt-4 (published run)"
META_TURN_CAP = 16
RECORDED_BACKEND = "recorded"


@dataclass
class ImportReport:
    file: str
    run_ids: list[str] = field(default_factory=list)
    retry_defect_records: int = 0
    answered: int = 0
    problem: str | None = None  # the bad line that ended reading, if any

    @property
    def imported(self) -> int:
        return len(self.run_ids)


def run_id_for(record: PublishedRecord, method: str = "") -> str:
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


def record_events(
    record: PublishedRecord, *, source_file: str = "", method: str = ""
) -> Iterator[Event]:
    """The events of one published run, in the order they happened."""
    run_id = run_id_for(record, method)
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


def import_file(
    path: Path | str,
    *,
    limit: int | None = None,
    runs_path: Path | None = None,
    index: RunIndex | None = None,
    method: str = "",
    expert_calls: bool = True,
) -> ImportReport:
    """Write and index one transcript per record of a published file; `method` names
    the method its runs used, and a baseline's (`expert_calls=False`) dispatched none."""
    published = read_published(path, limit=limit)
    directory = runs_path or runs_dir()
    index = index if index is not None else RunIndex()
    report = ImportReport(file=str(path))
    if published.problem is not None:
        report.problem = str(published.problem)
    for record in published.records:
        if not expert_calls:
            record = without_calls(record)
        target = directory / f"{run_id_for(record, method)}.jsonl"
        target.unlink(missing_ok=True)  # a re-import replaces the run
        with TranscriptWriter(target) as writer:
            for event in record_events(record, source_file=Path(path).name, method=method):
                writer.handle(event)
        index.add_transcript(target, source="published")
        report.run_ids.append(run_id_for(record, method))
        report.retry_defect_records += record.retry_defect
        report.answered += record.final_answer is not None
    return report
