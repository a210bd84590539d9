"""Replaying the paper's published runs through our conductor, and how faithfully it goes.

Each published record runs through `Conductor` with both the meta model and the experts
answered by a `ReplayModel` over that record, and the code Expert Python wrote runs
again in our sandbox. The replay then asks: did our parser and loop reach the same
final answer, dispatch the same expert calls (names and instructions, in order), take
the same number of meta turns, and did the code print what it printed then?

Records with the original harness's retry defect (two meta turns in a row: the replies
to the first were lost) replay as they happened: the lost replies come back as a note
saying so, and the meta model's next recorded turn follows. They are counted among the
records and also reported apart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conductor.replay.compare import compare, compare_quotes
from conductor.replay.outputs import harness_view, recorded_view, same_code_output
from conductor.replay.results import FileReport, Mismatch, RecordResult
from conductor_kernel.events import Event
from conductor_kernel.interfaces import Sandbox
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from experts.replay import ReplayExhausted, ReplayModel
from record.published import PublishedRecord, read_published

# Where each part lives (replay_results, replay_compare, replay_outputs); callers import
# them from here as before.
__all__ = [
    "FileReport",
    "Mismatch",
    "RecordResult",
    "SandboxPool",
    "harness_view",
    "question_of",
    "recorded_view",
    "replay_config",
    "replay_file",
    "replay_record",
    "same_code_output",
]

MAX_META_TURNS = 16  # the published runs' own cap
PYTHON_TIMEOUT_S = 3.0  # as the paper's harness
SandboxFactory = Callable[[], Sandbox | None]


def replay_config(notice_round: int | None = None) -> RunConfig:
    """The published runs' own rules: 16 meta turns, calls before answers, 3 s of Python,
    the text protocol they were written in, and no check of an answer before it is
    taken (the published harness had none, so a record has no turn after its answer)."""
    return RunConfig(
        protocol="text",
        answer_check=False,
        max_rounds=MAX_META_TURNS,
        last_round_notice_at=notice_round,
        python_timeout_s=PYTHON_TIMEOUT_S,
        calls_and_answer="calls_first",
        prompt_cache=True,
        parallel_experts=True,
    )


def question_of(record: PublishedRecord) -> str:
    """The task description and input as the first user turn gave them."""
    first = record.first_user
    at = first.find("Question: ")
    end = first.find(record.question, at) if at != -1 and record.question else -1
    if end == -1:
        return record.question
    return first[at + len("Question: ") : end + len(record.question)]


def replay_record(
    record: PublishedRecord, sandbox: Sandbox | None, *, notice_round: int | None = None
) -> RecordResult:
    """One record through our conductor, compared with what the original harness did."""
    started = time.monotonic()
    model = ReplayModel(record)
    conductor = Conductor(model, model, sandbox, replay_config(record.notice_round or notice_round))
    result = RecordResult(line=record.line, retry_defect=record.retry_defect)
    events: list[Event] = []
    try:
        for event in conductor.run(question_of(record), task=record.task, target=record.target):
            if not event.transient:
                events.append(event)
    except ReplayExhausted as exc:
        result.mismatches.append(Mismatch(record.line, "replay_error", str(exc)))
    except Exception as exc:  # a system failure in one record must not end the replay
        result.mismatches.append(
            Mismatch(record.line, "replay_error", f"{type(exc).__name__}: {exc}")
        )
    compare(record, events, result, ran_code=sandbox is not None)
    compare_quotes(record, events, model.meta_requests, result, ran_code=sandbox is not None)
    if any(m.kind == "replay_error" for m in result.mismatches):
        # The run did not end as recorded: it failed, or wanted a turn the record lacks.
        result.same_final_answer = result.same_rounds = False
    for text in model.unmatched:
        result.mismatches.append(Mismatch(record.line, "no_reply", text))
    result.duration_s = time.monotonic() - started
    return result


class SandboxPool:
    """Sandboxes lent to replay workers, one run at a time each, opened when first needed.

    Replaying several files through one pool pays each sandbox's start-up once.
    """

    def __init__(self, open_sandbox: SandboxFactory) -> None:
        self._open = open_sandbox
        self._lock = threading.Lock()
        self._free: list[Sandbox | None] = []
        self.opened: list[Sandbox] = []

    def acquire(self) -> Sandbox | None:
        with self._lock:
            if self._free:
                return self._free.pop()
        box = self._open()
        if box is not None:
            with self._lock:
                self.opened.append(box)
        return box

    def release(self, box: Sandbox | None) -> None:
        with self._lock:
            self._free.append(box)

    @property
    def name(self) -> str:
        return self.opened[0].name if self.opened else "none"

    def close(self) -> None:
        with self._lock:
            boxes, self.opened, self._free = self.opened, [], []
        for box in boxes:
            box.close()


def replay_file(
    path: Path | str,
    sandboxes: SandboxPool | SandboxFactory,
    *,
    limit: int | None = None,
    jobs: int = 1,
    on_record: Callable[[RecordResult], None] | None = None,
) -> FileReport:
    """Replay every record of a published file; `jobs` records at a time.

    Given a factory rather than a `SandboxPool`, the sandboxes it opens are closed at
    the end; a pool stays open for the caller's next file.
    """
    started = time.monotonic()
    published = read_published(path, limit=limit)
    report = FileReport(file=str(path))
    if published.problem is not None:
        report.read_problem = str(published.problem)
    notice_round = next((r.notice_round for r in published.records if r.notice_round), None)
    pool = sandboxes if isinstance(sandboxes, SandboxPool) else SandboxPool(sandboxes)

    def one(record: PublishedRecord) -> RecordResult:
        box = pool.acquire()
        try:
            result = replay_record(record, box, notice_round=notice_round)
        finally:
            pool.release(box)
        if on_record is not None:
            on_record(result)
        return result

    try:
        results: Iterable[RecordResult]
        if jobs > 1:
            with ThreadPoolExecutor(max_workers=jobs) as executor:
                results = list(executor.map(one, published.records))
        else:
            results = [one(r) for r in published.records]
        for result in sorted(results, key=lambda r: r.line):
            report.add(result)
        report.sandbox = pool.name
    finally:
        if pool is not sandboxes:
            pool.close()
    report.duration_s = time.monotonic() - started
    return report
