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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conductor.replay_model import ReplayExhausted, ReplayModel
from conductor.replay_quotes import check_quotes
from conductor_kernel.events import Event, ExpertCallStarted, RunFinished, SandboxExec
from conductor_kernel.interfaces import ExecResult, Sandbox
from conductor_kernel.loop import Conductor
from conductor_kernel.run_config import RunConfig
from transcripts.published import (
    PublishedRecord,
    RecordedCall,
    normalise_expert_name,
    read_published,
)

MAX_META_TURNS = 16  # the published runs' own cap
PYTHON_TIMEOUT_S = 3.0  # as the paper's harness
SandboxFactory = Callable[[], Sandbox | None]


@dataclass
class Mismatch:
    line: int  # the record's line in its file
    # final_answer | expert_calls | rounds | sandbox | quoted_output | replay_error | no_reply
    kind: str
    detail: str


@dataclass
class RecordResult:
    line: int
    same_final_answer: bool = False
    same_expert_calls: bool = False
    same_rounds: bool = False
    retry_defect: bool = False
    sandbox_runs: int = 0
    sandbox_compared: int = 0  # runs with a recorded output to compare with
    sandbox_identical: int = 0
    quoted_rounds: int = 0  # rounds whose recorded expert outputs our loop sent back
    quoted_identical: int = 0  # ... quoting what the harness quoted (prompt words aside)
    input_tokens: int = 0
    input_tokens_cached: int = 0  # the uncached part when the history is cached
    duration_s: float = 0.0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def faithful(self) -> bool:
        return self.same_final_answer and self.same_expert_calls


@dataclass
class FileReport:
    file: str
    records: int = 0
    same_final_answer: int = 0
    same_expert_calls: int = 0
    same_answer_and_calls: int = 0
    same_rounds: int = 0
    sandbox_outputs_identical: int = 0
    sandbox_runs: int = 0
    sandbox_compared: int = 0
    quoted_rounds: int = 0
    quoted_identical: int = 0
    input_tokens: int = 0
    input_tokens_cached: int = 0
    retry_defect_records: int = 0
    retry_defect_faithful: int = 0
    read_problem: str | None = None
    sandbox: str = ""
    record_seconds: list[float] = field(default_factory=list, repr=False)
    duration_s: float = 0.0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def fidelity(self) -> float:
        return self.same_answer_and_calls / self.records if self.records else 0.0

    def add(self, result: RecordResult) -> None:
        self.records += 1
        self.same_final_answer += result.same_final_answer
        self.same_expert_calls += result.same_expert_calls
        self.same_answer_and_calls += result.faithful
        self.same_rounds += result.same_rounds
        self.sandbox_runs += result.sandbox_runs
        self.sandbox_compared += result.sandbox_compared
        self.sandbox_outputs_identical += result.sandbox_identical
        self.quoted_rounds += result.quoted_rounds
        self.quoted_identical += result.quoted_identical
        self.input_tokens += result.input_tokens
        self.input_tokens_cached += result.input_tokens_cached
        self.retry_defect_records += result.retry_defect
        self.retry_defect_faithful += result.retry_defect and result.faithful
        self.mismatches.extend(result.mismatches)
        self.record_seconds.append(result.duration_s)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["fidelity"] = round(self.fidelity, 4)
        data["mismatches"] = [asdict(m) for m in self.mismatches]
        del data["record_seconds"]
        return data


def replay_config(notice_round: int | None = None) -> RunConfig:
    """The published runs' own rules: 16 meta turns, calls before answers, 3 s of Python."""
    return RunConfig(
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
    _compare(record, events, result, ran_code=sandbox is not None)
    _compare_quotes(record, events, model.meta_requests, result, ran_code=sandbox is not None)
    if any(m.kind == "replay_error" for m in result.mismatches):
        # The run did not end as recorded: it failed, or wanted a turn the record lacks.
        result.same_final_answer = result.same_rounds = False
    for text in model.unmatched:
        result.mismatches.append(Mismatch(record.line, "no_reply", text))
    result.duration_s = time.monotonic() - started
    return result


def _compare(
    record: PublishedRecord, events: list[Event], result: RecordResult, *, ran_code: bool
) -> None:
    line = record.line
    finished = next((e for e in events if isinstance(e, RunFinished)), None)
    answer = finished.final_answer if finished else None
    result.same_final_answer = _same_answer(answer, record.final_answer)
    if not result.same_final_answer:
        detail = f"recorded {_short(record.final_answer)}, replayed {_short(answer)}"
        result.mismatches.append(Mismatch(line, "final_answer", detail))

    started = sorted(
        (e for e in events if isinstance(e, ExpertCallStarted)), key=lambda e: (e.round, e.index)
    )
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
        _compare_sandbox(record, started, events, result)


def _compare_quotes(
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
    started = sorted(
        (e for e in events if isinstance(e, ExpertCallStarted)), key=lambda e: (e.round, e.index)
    )
    for event in started:
        names.setdefault(event.round, []).append(event.name)
    check = check_quotes(record, requests, names)
    result.quoted_rounds, result.quoted_identical = check.rounds, check.identical
    for why in check.differences or []:
        result.mismatches.append(Mismatch(record.line, "quoted_output", why))


def _compare_sandbox(
    record: PublishedRecord,
    started: list[ExpertCallStarted],
    events: list[Event],
    result: RecordResult,
) -> None:
    by_id = {e.id: e for e in started}
    for event in events:
        if not isinstance(event, SandboxExec):
            continue
        result.sandbox_runs += 1
        call = by_id.get(event.parent_id or "")
        recorded = _recorded_call(record, call) if call else None
        if recorded is None or recorded.code_output is None:
            continue  # the original harness ran no code here
        result.sandbox_compared += 1
        same, why = same_code_output(event.result, recorded.code_output)
        if same:
            result.sandbox_identical += 1
        else:
            where = f"turn {call.round if call else '?'} {recorded.expert}"
            result.mismatches.append(Mismatch(record.line, "sandbox", f"{where}: {why}"))


def _recorded_call(record: PublishedRecord, call: ExpertCallStarted) -> RecordedCall | None:
    if not 1 <= call.round <= len(record.turns):
        return None
    for recorded in record.turns[call.round - 1].calls or []:
        if recorded.instruction.strip() == call.instruction.strip():
            return recorded
    return None


def harness_view(result: ExecResult) -> tuple[str, str]:
    """What the original harness would have reported for this run: (kind, text)."""
    if result.infra_error:
        return "sandbox_failed", result.infra_error
    if result.timed_out:
        return "timeout", ""
    if result.stdout.strip():
        return "stdout", result.stdout.strip()
    if result.stderr.strip():
        return "error", _last_line(result.stderr)
    return "empty", ""


def recorded_view(code_output: str) -> tuple[str, str]:
    """The harness's report of a run, classified the same way as `harness_view`."""
    if code_output.startswith("Execution took too long"):
        return "timeout", ""
    if code_output.startswith("Error in execution:"):
        return "error", _last_line(code_output)
    if code_output.startswith("(No output was generated"):
        return "empty", ""
    return "stdout", code_output.strip()


def same_code_output(result: ExecResult, code_output: str) -> tuple[bool, str]:
    """Whether our run printed what the recorded run printed, and if not, how it differs.

    The harness kept stdout and dropped stderr whenever stdout was non-empty, so stdout
    is compared whole; for a failure, the exception line (file paths differ).
    """
    ours, theirs = harness_view(result), recorded_view(code_output)
    if ours == theirs:
        return True, ""
    if ours[0] != theirs[0]:
        return (
            False,
            f"recorded {theirs[0]} {_short(theirs[1])}, replayed {ours[0]} {_short(ours[1])}",
        )
    return False, f"{ours[0]} differs: recorded {_short(theirs[1])}, replayed {_short(ours[1])}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _same_answer(ours: str | None, theirs: str | None) -> bool:
    if ours is None or theirs is None:
        return ours is None and theirs is None
    return ours.strip() == theirs.strip()


def _short(text: str | None, width: int = 70) -> str:
    if text is None:
        return "no answer"
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[: width - 3] + "...")


def _first_difference(theirs: list[tuple[int, str, str]], ours: list[tuple[int, str, str]]) -> str:
    for i, (a, b) in enumerate(zip(theirs, ours, strict=False)):
        if a != b:
            return (
                f"call {i + 1}: recorded turn {a[0]} {a[1]} {_short(a[2], 40)}, "
                f"replayed turn {b[0]} {b[1]} {_short(b[2], 40)}"
            )
    if len(theirs) > len(ours):
        a = theirs[len(ours)]
        return (
            f"recorded {len(theirs)} calls, replayed {len(ours)}; first missing: turn {a[0]} {a[1]}"
        )
    b = ours[len(theirs)]
    return f"recorded {len(theirs)} calls, replayed {len(ours)}; first extra: turn {b[0]} {b[1]}"


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
