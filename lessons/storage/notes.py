"""Writing notes: add (skipping exact duplicates, merging near ones), retire, count.

Nothing is ever deleted. A note replaced by a better-verified version keeps its id and
its old text in `note_history`; a retired note stays, flagged, with the reason.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from conductor_kernel.errors import UserFacingError
from lessons.forms.problems import number_terms, question_hash
from lessons.forms.terms import content_terms, index_text, question_terms
from lessons.storage.store import Notebook, new_id, record_note_history
from lessons.values import NoteDraft

# How much a note's verification counts when ranking (see lessons/read/recall.py).
VERIFICATION_RANK = {
    "target": 5,
    "checker": 5,
    "tool": 4,
    "independent": 3,
    "sandbox-check": 3,
    "sandbox": 1,  # notes written before the scorers judged (migration 2)
    "agreement": 1,
    "none": 0,
}


@dataclass
class Provenance:
    run_id: str
    question: str
    task: str
    answer: str | None
    verification: str
    outcome: str


@dataclass
class AddResult:
    note_id: str
    action: str  # added | merged | skipped


def type_token(type_id: str | None) -> str:
    return f"tp_{type_id}" if type_id else "tp_none"


def note_terms(type_id: str | None, draft: NoteDraft, question: str) -> str:
    """The full-text index source of a note: its question, key, text, code, type, kind."""
    terms = question_terms(question) | content_terms(draft.key) | content_terms(draft.text)
    terms |= content_terms(draft.code)
    # The problem's numbers find it again across languages (lessons/forms/problems.py).
    numbers = " ".join(number_terms(question))
    return " ".join([type_token(type_id), f"kind_{draft.kind}", index_text(terms), numbers])


def add_note(
    conn: sqlite3.Connection, type_id: str | None, draft: NoteDraft, source: Provenance
) -> AddResult:
    """Add one note inside the caller's transaction."""
    digest = draft.content_hash
    row = conn.execute(
        "select id from notes where content_hash = ? and coalesce(type_id, '') = ? limit 1",
        (digest, type_id or ""),
    ).fetchone()
    if row is not None:
        # Nothing new to keep, but one more run arrived at the same note: count it.
        conn.execute(
            "update notes set support = support + 1, updated_at = ? where id = ?",
            (time.time(), row[0]),
        )
        record_note_history(
            conn, row[0], "duplicate-skipped", run_id=source.run_id, detail={"hash": digest}
        )
        return AddResult(row[0], "skipped")
    near = conn.execute(
        "select id, verification, text, code from notes where type_id is ? "
        "and kind = ? and near_hash = ? and retired = 0 order by seq limit 1",
        (type_id, draft.kind, draft.near_hash),
    ).fetchone()
    now = time.time()
    if near is not None:
        return _merge(conn, near, draft, source, now)
    note_id = new_id("n")
    conn.execute(
        "insert into notes (id, type_id, kind, key, text, code, answer, source_run, "
        "source_question, source_task, verification, outcome, confidence, content_hash, "
        "near_hash, author, terms, created_at, updated_at, question_hash) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            note_id,
            type_id,
            draft.kind,
            draft.key,
            draft.text,
            draft.code,
            source.answer,
            source.run_id,
            source.question,
            source.task,
            source.verification,
            source.outcome,
            draft.confidence,
            digest,
            draft.near_hash,
            draft.author,
            note_terms(type_id, draft, source.question),
            now,
            now,
            question_hash(source.question),
        ),
    )
    record_note_history(
        conn,
        note_id,
        "created",
        run_id=source.run_id,
        detail={"kind": draft.kind, "verification": source.verification},
    )
    return AddResult(note_id, "added")


def _merge(
    conn: sqlite3.Connection,
    near: tuple,
    draft: NoteDraft,
    source: Provenance,
    now: float,
) -> AddResult:
    """A near-duplicate strengthens the note; a better-verified one replaces its text."""
    note_id, verification, old_text, old_code = near
    better = VERIFICATION_RANK.get(source.verification, 0) > VERIFICATION_RANK.get(verification, 0)
    detail = {"from_run": source.run_id, "text": draft.text, "code": draft.code}
    if better:
        detail.update({"replaced_text": old_text, "replaced_code": old_code})
        conn.execute(
            "update notes set text = ?, code = ?, verification = ?, outcome = ?, "
            "source_run = ?, source_question = ?, answer = ?, content_hash = ?, terms = ? "
            "where id = ?",
            (
                draft.text,
                draft.code,
                source.verification,
                source.outcome,
                source.run_id,
                source.question,
                source.answer,
                draft.content_hash,
                note_terms(_type_of(conn, note_id), draft, source.question),
                note_id,
            ),
        )
    conn.execute(
        "update notes set support = support + 1, confidence = max(confidence, ?), "
        "updated_at = ? where id = ?",
        (draft.confidence, now, note_id),
    )
    record_note_history(conn, note_id, "merged", run_id=source.run_id, detail=detail)
    return AddResult(note_id, "merged")


def _type_of(conn: sqlite3.Connection, note_id: str) -> str | None:
    row = conn.execute("select type_id from notes where id = ?", (note_id,)).fetchone()
    return row[0] if row else None


def set_retired(
    conn: sqlite3.Connection, note_id: str, retired: bool, reason: str, run_id: str | None = None
) -> bool:
    """Retire (or restore) a note; False when it already was."""
    changed = conn.execute(
        "update notes set retired = ?, retired_reason = ?, updated_at = ? "
        "where id = ? and retired = ?",
        (int(retired), reason if retired else None, time.time(), note_id, int(not retired)),
    ).rowcount
    if changed:
        record_note_history(
            conn,
            note_id,
            "retired" if retired else "restored",
            run_id=run_id,
            detail={"reason": reason},
        )
    return bool(changed)


# Which way a recalled note's counters move with the run's outcome.
FEEDBACK = {
    "correct": "helpful",
    "verified": "helpful",
    "wrong": "harmful",
    "unanswered": "harmful",
}


def record_recall_feedback(
    conn: sqlite3.Connection,
    run_id: str,
    recalled: list[dict],
    outcome: str,
    status: str,
    cited: set[str] | None = None,
) -> dict[str, str]:
    """Count the run on every note it was shown; returns note id -> effect.

    Credit where used (ACE): only the notes the meta model cited move helpful/harmful
    with the outcome; the others count a use. `cited=None` means every shown note was
    used (a caller that cannot tell). A run that stopped for a system reason says
    nothing about the notes.
    """
    judged = "used" if status in ("error", "interrupted") else FEEDBACK.get(outcome, "used")
    now = time.time()
    effects: dict[str, str] = {}
    for item in recalled:
        note_id = str(item.get("id", ""))
        exists = conn.execute("select 1 from notes where id = ?", (note_id,)).fetchone()
        if not exists:
            continue
        effect = judged if cited is None or note_id in cited else "used"
        column = {"helpful": "helpful = helpful + 1, ", "harmful": "harmful = harmful + 1, "}
        conn.execute(
            f"update notes set {column.get(effect, '')}uses = uses + 1, updated_at = ? "
            "where id = ?",
            (now, note_id),
        )
        conn.execute(
            "insert into recalls (run_id, note_id, rank, score, relevance, outcome, at) "
            "values (?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                note_id,
                int(item.get("rank", 0)),
                float(item.get("score", 0.0)),
                float(item.get("relevance", item.get("score", 0.0))),
                outcome,
                now,
            ),
        )
        record_note_history(
            conn, note_id, f"recalled-{effect}", run_id=run_id, detail={"outcome": outcome}
        )
        effects[note_id] = effect
    return effects


class NoteNotFound(UserFacingError):
    """No note has that id (or the prefix is ambiguous)."""


def retire(book: Notebook, note_id: str, *, reason: str = "", restore: bool = False) -> bool:
    """Retire a note (or restore it) in one transaction, with a history row.

    Returns False when the note already was in that state.
    """
    note = book.find_note(note_id)
    if note is None:
        raise NoteNotFound(
            f"no note {note_id!r} in {book.path} (or the prefix fits several); "
            "`conductor notebook list` shows the ids."
        )
    return book.write(lambda conn: set_retired(conn, note["id"], not restore, reason))
