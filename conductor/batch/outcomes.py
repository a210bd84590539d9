"""What one item's run puts in its record: the record it starts with, what the run's
events fill in as they pass, and how its end (finished, failed, stopped) is written.

The batch runner (conductor/batch/runner.py) drives the runs; this module owns the
fields, so that a failure is always recorded by its cause (sandbox, model, storage,
config, runner) and never as the model's answer.
"""

from __future__ import annotations

from typing import Any

from conductor.batch.cells import CellsClosed, CellStartError
from conductor.batch.records import ItemRecord
from conductor.batch.store import FORMAT_VERSION
from conductor.session import Session
from conductor.tasks.files import TaskItem
from conductor_kernel.errors import ConfigError, ModelUnreachable, UnknownModelError
from conductor_kernel.events import ErrorEvent, Event, NotesWritten, Recall, RunFinished, RunStarted
from conductor_kernel.interfaces import ModelError, SandboxUnavailable, Usage
from record.ending import ending
from record.migrations import DatabaseError

# The causes of a run's system failure, as the batch report lists them.
SYSTEM_CAUSES = ("sandbox", "model", "storage")


def base_record(
    item: TaskItem,
    run_id: str | None,
    started: float,
    session_no: int,
    described: dict[str, Any],
) -> ItemRecord:
    """An item's record before its run: an error until the run says otherwise."""
    transcript = f"runs/{run_id}.jsonl" if run_id else None
    record = ItemRecord(
        v=FORMAT_VERSION,
        item_id=item.id,
        line=item.line,
        label=item.label,
        final=False,
        run_id=run_id,
        transcript=transcript,
        status="error",
        answer=None,
        target=item.target,
        score=None,
        rounds=0,
        usage={},
        expert_calls=0,
        sandbox_runs=0,
        duration_s=0.0,
        error=None,
        recalled=0,
        notes_written=0,
        finished_at=started,
        session=session_no,
    )
    record.update(described)  # type: ignore[typeddict-item]
    return record


def note_event(event: Event, record: ItemRecord) -> None:
    """Fill in what the notebook did for this run, and a system failure, as events pass."""
    if isinstance(event, Recall):
        record["recalled"] = len(event.notes)
    elif isinstance(event, NotesWritten):
        record["notes_written"] = record.get("notes_written", 0) + len(event.note_ids)
        spent = Usage.from_dict(record.get("learning_usage")) + event.usage
        record["learning_usage"] = spent.to_dict()
    elif isinstance(event, RunStarted):
        record["run_id"] = event.run_id
    elif isinstance(event, ErrorEvent) and event.where in SYSTEM_CAUSES:
        # A system failure the loop saw during the run (conductor_kernel/run/loop.py).
        kind = f"{event.where.capitalize()}Failure"
        record["error"] = {"kind": kind, "cause": event.where, "message": event.message}


def complete(
    record: ItemRecord,
    finished: RunFinished | None,
    session: Session | None,
    failure: BaseException | None,
    *,
    fatal: bool,
) -> None:
    """Write the run's end into its record: what it finished with, or the failure that
    ended it; `fatal`: a failure that stops the batch, so the item runs again."""
    if finished is not None:
        record.update(_from_finished(finished))
        # The item's cost is the run's and its learning's (reported apart too).
        learning = Usage.from_dict(record.get("learning_usage"))
        record["usage"] = (finished.usage + learning).to_dict()
        record.pop("reason", None)
        run = session.last.outline if session is not None else None
        if record["status"] in ("declined", "no_answer") and run is not None:
            # The same account of the run's end every way in gives.
            record["reason"] = ending(run).why
    stored = session.storage_failures if session is not None else []
    if failure is None and stored and record["status"] != "interrupted":
        # The run's record is incomplete: not a grade of the model either.
        record["status"] = "error"
        record["error"] = {"kind": "StorageError", "cause": "storage", "message": stored[0]}
    if isinstance(failure, CellsClosed):  # stopped before it began: runs again
        record["status"] = "interrupted"
        record["run_id"] = record["transcript"] = None  # no run, no transcript
    elif failure is not None:
        record.update({"status": "error", "error": error_of(failure)})
    record["final"] = record["status"] != "interrupted" and not fatal


def cause_of(exc: BaseException) -> str:
    """Which part of the system an exception that ended a run comes from."""
    if isinstance(exc, ModelError | ModelUnreachable | UnknownModelError):
        return "model"
    if isinstance(exc, SandboxUnavailable | CellStartError):
        return "sandbox"
    if isinstance(exc, DatabaseError | OSError):
        return "storage"
    if isinstance(exc, ConfigError):
        return "config"
    return "runner"


def _from_finished(event: RunFinished) -> ItemRecord:
    return {
        "status": event.status,
        "answer": event.final_answer,
        "rounds": event.rounds,
        "usage": event.usage.to_dict(),
        "expert_calls": event.expert_calls,
        "sandbox_runs": event.sandbox_runs,
    }


def error_of(exc: BaseException) -> dict[str, str]:
    return {
        "kind": type(exc).__name__,
        "cause": cause_of(exc),
        "message": str(exc) or type(exc).__name__,
    }
