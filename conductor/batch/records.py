"""One batch item's record, as results.jsonl holds it, and running totals over records.

The record is the batch's unit: the runner writes one per finished (or interrupted) run,
the report, the comparison, the progress line, the HTML page and the TUI read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

FAILURE_KINDS = ("error", "declined", "limit", "no_answer", "interrupted", "scorer")
# Where an `error` item's failure came from (conductor/batch/outcomes.py: cause_of).
ERROR_CAUSES = ("sandbox", "model", "storage", "config", "runner")


class ItemRecord(TypedDict, total=False):
    """One line of results.jsonl: how one run of one item ended."""

    v: int
    item_id: str
    line: int
    label: str  # the item's line and first words (TaskItem.label), for people
    final: bool  # False: interrupted; the item runs again on resume
    run_id: str | None
    transcript: str | None  # relative to the batch folder
    status: str  # answered | no_answer | limit | error | interrupted
    answer: str | None
    target: str | None
    score: dict[str, Any] | None  # ScoreResult.to_dict(), or {"error": ..., "scored": False}
    rounds: int
    usage: dict[str, Any]
    expert_calls: int
    sandbox_runs: int
    duration_s: float
    # {"kind": exception type, "cause": sandbox | model | storage | config | runner,
    #  "message": ...}
    error: dict[str, str] | None
    reason: str  # declined or no_answer: why the run gave no answer
    recalled: int  # notes shown to the run
    notes_written: int
    finished_at: float
    session: int
    learning_usage: dict[str, Any]  # what distilling this run into notes cost
    node: str  # --ray: the worker that ran it
    moved_from: list[str]  # --ray: workers lost while running it
    method: str  # a comparison (--methods): the method of this run
    task_item_id: str  # a comparison: the task item (item_id names the item and method)


def is_scored(record: ItemRecord) -> bool:
    score = record.get("score") or {}
    return bool(score.get("scored")) and "error" not in score


def failure_kind(record: ItemRecord) -> str | None:
    """Which failure column an item counts in; None for an answered, scorable item."""
    if not record.get("final"):
        return "interrupted"
    status = record.get("status")
    if status in ("error", "declined", "limit", "no_answer"):
        return status
    if "error" in (record.get("score") or {}):
        return "scorer"
    return None


@dataclass
class Tally:
    """Running totals over the finished items in scope, for the progress display."""

    total: int = 0
    done: int = 0
    done_before: int = 0  # finished by earlier sessions
    scored: int = 0
    correct: int = 0
    errors: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    def add(self, record: ItemRecord) -> None:
        if not record.get("final"):
            return
        self.done += 1
        if is_scored(record):
            self.scored += 1
            self.correct += bool((record.get("score") or {}).get("correct"))
        self.errors += record.get("status") == "error"
        usage = record.get("usage") or {}
        self.tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
        self.cost_usd += float(usage.get("cost_usd", 0.0))

    @property
    def accuracy(self) -> float | None:
        return 100.0 * self.correct / self.scored if self.scored else None
