"""Replaying the paper's published baseline runs through our method implementations.

A baseline record (../shared/data/meta-prompting/transcripts/baselines/METHOD/TASK.jsonl)
is one conversation with the model: the method's prompt and the question, the model's
turns, and after each turn without `>> FINAL ANSWER:` a nudge, up to the harness's cap.
Each record runs through our implementation of its method (conductor/methods) with a
`TurnsReplayModel` answering from the record's turns (for expert-dynamic, first with the
expert description the record shows, then with its turns). Then: did our method take
the same final answer, after the same number of turns?

The harness's rule, recovered from the records: a turn ends the run when it holds
`>> FINAL ANSWER:`, and the answer is the triple-quoted text after the last marker
(`record.published.harness_answer`); a record whose log ends with a nudge nobody
answered hit the cap, and has no answer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conductor.methods import PUBLISHED_FOLDERS, get_method
from conductor.replay.outputs import short
from conductor.replay.results import FileReport, Mismatch, RecordResult
from conductor_kernel.bounded import loads_json
from conductor_kernel.errors import TranscriptError
from conductor_kernel.events import Event, RunFinished
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from experts.replay import ReplayExhausted, TurnsReplayModel
from record.published import (
    harness_answer,
    must_be_a_file,
    nothing_readable,
    parse_record,
    strip_round,
)

# The cap seen in the records: capped logs hold 12 or 16 model turns; none answered later.
MAX_TURNS = 16
# Where expert-dynamic's record ends the expert description and starts its instruction.
_IDENTITY_END = re.compile(r"\n\nNow given the above identity background")
DYNAMIC = "expert-dynamic"


@dataclass
class BaselineRecord:
    """One published baseline run, as the harness ran it."""

    line: int
    task: str
    method: str
    question: str  # the task's description and input, as the first user message gave them
    target: str | None
    task_input: str = ""  # the record's `input`, as the task file has it
    turns: list[str] = field(default_factory=list)  # the model's turns, in order
    identity: str | None = None  # expert-dynamic: the description the model wrote first
    capped: bool = False  # the log ends with a nudge nobody answered: the cap was hit
    notice_round: int | None = None  # the round whose user turn said "last round"
    final_answer: str | None = None  # by the harness's rule

    @property
    def rounds(self) -> int:
        return len(self.turns)

    @property
    def calls(self) -> list[str]:
        """What the replay model answers, in order: the description first, if any."""
        return ([self.identity or ""] if self.method == DYNAMIC else []) + self.turns


def question_in(first_user: str, task_input: str) -> str:
    """The question as the record's first user message gave it: from the last
    `Question: ` before the input, else the input alone."""
    end = first_user.rfind(task_input) if task_input else -1
    if end == -1:
        return task_input
    at = first_user.rfind("Question: ", 0, end)
    if at == -1:
        return task_input
    return first_user[at + len("Question: ") : end + len(task_input)]


def parse_baseline(raw: dict[str, Any], *, line: int, task: str, method: str) -> BaselineRecord:
    """A baseline record; raises ValueError when its shape is wrong."""
    published = parse_record(raw, line=line, task=task)  # checks the message log's shape
    log = raw["message_log"]
    turns = [m["content"] for m in log if m["role"] == "assistant"]
    if not turns:
        raise ValueError("no model turn in 'message_log'")
    record = BaselineRecord(
        line=line,
        task=task,
        method=method,
        question=question_in(published.first_user, published.question),
        target=published.target,
        task_input=published.question,
        turns=turns,
        capped=log[-1]["role"] == "user",
        notice_round=published.notice_round,
    )
    if not record.capped:
        record.final_answer = harness_answer(turns[-1])
    if method == DYNAMIC:
        cut = _IDENTITY_END.search(published.first_user)
        if cut is None:
            raise ValueError("no expert description before the question (expert-dynamic)")
        record.identity = strip_round(published.first_user[: cut.start()]).strip()
    return record


def method_of_path(path: Path | str) -> str | None:
    """The method of a published file, from its folder's name (None: not known)."""
    return PUBLISHED_FOLDERS.get(Path(path).parent.name)


def read_baselines(
    path: Path | str, method: str, *, limit: int | None = None
) -> tuple[list[BaselineRecord], TranscriptError | None]:
    """Every record up to `limit` or the first bad line, which is returned, not raised."""
    path = Path(path)
    example = "../shared/data/meta-prompting/transcripts/baselines/Standard/GameOf24.jsonl"
    must_be_a_file(path, f"give a published baseline file, e.g. {example}")
    records: list[BaselineRecord] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            if limit is not None and len(records) >= limit:
                break
            try:
                raw = loads_json(text)
                if not isinstance(raw, dict):
                    raise ValueError("not a JSON object")
                records.append(parse_baseline(raw, line=number, task=path.stem, method=method))
            except ValueError as exc:  # JSONDecodeError and TooDeep are
                problem = TranscriptError(str(path), number, f"not a baseline record: {exc}")
                nothing_readable(path, records, problem, "baseline record")
                return records, problem
    return records, None


def replay_config(record: BaselineRecord) -> RunConfig:
    """The harness's rules for this record: its cap (the turns of a capped record, else
    16), its last-round notice; expert-dynamic's description is one turn more."""
    extra = 1 if record.method == DYNAMIC else 0
    turns = record.rounds if record.capped else max(MAX_TURNS, record.rounds)
    notice = record.notice_round + extra if record.notice_round else None
    return RunConfig(
        protocol="text",
        max_rounds=turns + extra,
        last_round_notice_at=notice,
        python=False,
        prompt_cache=True,
    )


def replay_baseline(record: BaselineRecord) -> RecordResult:
    """One record through our implementation of its method, compared with the record."""
    started = time.monotonic()
    model = TurnsReplayModel(record.calls, line=record.line)
    method = get_method(record.method)
    conductor = Conductor(model, model, None, replay_config(record), method=method)
    result = RecordResult(line=record.line, same_expert_calls=True)  # no method calls any
    events: list[Event] = []
    try:
        for event in conductor.run(record.question, task=record.task, target=record.target):
            if not event.transient:
                events.append(event)
    except ReplayExhausted as exc:
        result.mismatches.append(Mismatch(record.line, "replay_error", str(exc)))
    except Exception as exc:  # a failure in one record must not end the replay
        result.mismatches.append(
            Mismatch(record.line, "replay_error", f"{type(exc).__name__}: {exc}")
        )
    finished = next((e for e in events if isinstance(e, RunFinished)), None)
    answer = finished.final_answer if finished is not None else None
    failed = any(m.kind == "replay_error" for m in result.mismatches)
    result.same_final_answer = not failed and _same(answer, record.final_answer)
    if not result.same_final_answer and not failed:
        detail = f"recorded {short(record.final_answer)}, replayed {short(answer)}"
        result.mismatches.append(Mismatch(record.line, "final_answer", detail))
    extra = 1 if record.method == DYNAMIC else 0
    rounds = (finished.rounds - extra) if finished is not None else 0
    result.same_rounds = not failed and rounds == record.rounds
    if not result.same_rounds and not failed:
        detail = f"recorded {record.rounds} model turns, replayed {rounds}"
        result.mismatches.append(Mismatch(record.line, "rounds", detail))
    if finished is not None:
        result.input_tokens = finished.meta_usage.input_tokens
        result.input_tokens_cached = result.input_tokens - finished.meta_usage.cache_read_tokens
    result.duration_s = time.monotonic() - started
    return result


def _same(ours: str | None, theirs: str | None) -> bool:
    if ours is None or theirs is None:
        return ours is None and theirs is None
    return ours.strip() == theirs.strip()


def replay_baseline_file(
    path: Path | str,
    method: str,
    *,
    limit: int | None = None,
    jobs: int = 1,
    on_record: Callable[[RecordResult], None] | None = None,
) -> FileReport:
    """Replay every record of a published baseline file; `jobs` records at a time."""
    started = time.monotonic()
    records, problem = read_baselines(path, method, limit=limit)
    report = FileReport(file=str(path), method=method, sandbox="none")
    if problem is not None:
        report.read_problem = str(problem)

    def one(record: BaselineRecord) -> RecordResult:
        result = replay_baseline(record)
        if on_record is not None:
            on_record(result)
        return result

    results: Iterable[RecordResult]
    if jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as executor:
            results = list(executor.map(one, records))
    else:
        results = [one(r) for r in records]
    for result in sorted(results, key=lambda r: r.line):
        report.add(result)
    report.duration_s = time.monotonic() - started
    return report
