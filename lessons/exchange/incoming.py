"""Another notebook's types, notes and runs as values, every field checked, before any
of them is written (a merge reads them from a file, an import from JSON lines).

Each keeps apart what this notebook will use (a note's kind, key, text, code, answer and
source) from what the file merely claims (its verification, counters and hash; a run's
answer and target; a type's experience): `claimed` goes into history, never into the
columns this notebook's own checks fill.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lessons.exchange.shape import (
    ForeignFileError,
    checked_id,
    checked_int,
    checked_kind,
    checked_text,
)

# What a note's row claims about its trust; kept, never believed. (Its author too: a
# pitfall "by the distiller" would shape its type's experience, shown unlabelled.)
NOTE_CLAIMS = (
    "verification", "outcome", "confidence", "helpful", "harmful", "uses", "support",
    "content_hash", "near_hash", "source_run", "author",
)  # fmt: skip
TYPE_CLAIMS = (
    "suggestions", "procedure", "inherited_from", "experience_version", "runs", "correct",
    "wrong", "failed",
)  # fmt: skip
RUN_CLAIMS = (
    "answer", "target", "verification", "outcome", "notes_written", "notes_merged",
    "notes_skipped",
)  # fmt: skip
MAX_TERM_CHARS = 200
MAX_MEMBERS = 10**7


@dataclass(frozen=True)
class IncomingType:
    id: str
    name: str
    description: str
    retired: int
    created_at: float | None
    members: int
    terms: dict[str, int]
    claimed: dict[str, Any]


@dataclass(frozen=True)
class ClaimedEvent:
    """One row of the note's history as the file tells it."""

    at: float | None
    action: str
    run_id: str | None
    detail: str


@dataclass(frozen=True)
class IncomingNote:
    id: str  # the file's id: a claim too (the note gets one of ours)
    type_id: str | None  # the file's type id, mapped when written
    kind: str
    key: str
    text: str
    code: str
    answer: str | None
    source_run: str | None
    source_question: str
    source_task: str
    retired: int
    retired_reason: str | None
    created_at: float | None
    claimed: dict[str, Any]
    history: list[ClaimedEvent] = field(default_factory=list)


@dataclass(frozen=True)
class IncomingRun:
    run_id: str
    at: float | None
    question: str
    task: str
    type_id: str | None
    status: str
    claimed: dict[str, Any]


def incoming_type(row: dict[str, Any], terms: Any, where: str) -> IncomingType:
    """`row`: a checked task_types row (lessons/exchange/shape.py); `terms`: its term
    counts, as the file gives them (a JSON object, or the file's type_terms rows)."""
    members = checked_int(row["members"], f"{where}: members", high=MAX_MEMBERS)
    if not isinstance(terms, dict):
        raise ForeignFileError(f"{where}: terms are not an object of counts; nothing was written")
    counts = {}
    for term, count in terms.items():
        checked_text(term, f"{where}: a term", limit=MAX_TERM_CHARS)
        counts[term] = checked_int(count, f"{where}: the count of a term", high=members)
        if not term.strip() or counts[term] == 0:
            raise ForeignFileError(f"{where}: an empty term or count; nothing was written")
    return IncomingType(
        id=_id(row["id"], f"{where}: id"),
        name=checked_text(row["name"], f"{where}: name", limit=2000),
        description=row["description"],
        retired=checked_int(row["retired"], f"{where}: retired", high=1),
        created_at=row["created_at"],
        members=members,
        terms=counts,
        claimed={k: row[k] for k in TYPE_CLAIMS},
    )


def incoming_note(row: dict[str, Any], history: list[dict[str, Any]], where: str) -> IncomingNote:
    """`row`: a checked notes row; `history`: its note_history rows (checked the same way)."""
    return IncomingNote(
        id=_id(row["id"], f"{where}: id"),
        type_id=checked_id(row["type_id"], f"{where}: type_id", empty_ok=True),
        kind=checked_kind(row["kind"] if isinstance(row["kind"], str) else "", where),
        key=row["key"],
        text=row["text"],
        code=row["code"],
        answer=row["answer"],
        source_run=checked_id(row["source_run"], f"{where}: source_run", empty_ok=True),
        source_question=row["source_question"],
        source_task=checked_text(row["source_task"], f"{where}: source_task", limit=200),
        retired=checked_int(row["retired"], f"{where}: retired", high=1),
        retired_reason=row["retired_reason"],
        created_at=row["created_at"],
        claimed={k: row[k] for k in NOTE_CLAIMS},
        history=[claimed_event(h, f"{where}, history {n}") for n, h in enumerate(history, 1)],
    )


def claimed_event(row: dict[str, Any], where: str) -> ClaimedEvent:
    """`row`: a checked note_history row."""
    return ClaimedEvent(
        at=row["at"],
        action=checked_text(row["action"], f"{where}: action", limit=100),
        run_id=checked_id(row["run_id"], f"{where}: run_id", empty_ok=True),
        detail=row["detail"],
    )


def incoming_run(row: dict[str, Any], where: str) -> IncomingRun:
    return IncomingRun(
        run_id=_id(row["run_id"], f"{where}: run_id"),
        at=row["at"],
        question=checked_text(row["question"], f"{where}: question"),
        task=checked_text(row["task"], f"{where}: task", limit=200),
        type_id=checked_id(row["type_id"], f"{where}: type_id", empty_ok=True),
        status=checked_text(row["status"], f"{where}: status", limit=100),
        claimed={k: row[k] for k in RUN_CLAIMS},
    )


def _id(value: Any, what: str) -> str:
    checked = checked_id(value, what)
    assert checked is not None  # not empty_ok
    return checked
