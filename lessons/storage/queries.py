"""What the CLI and the TUI read from a notebook: listings, history, search, counts.

The application writes no SQL of its own; its reads of notebook.db are here, beside
the store that opens the file (lessons/storage/store.py). Every function reads under
`read_errors`: a file that is locked or damaged raises `DatabaseError`, whose message
names the file and what to do, and search text SQLite cannot take raises
`SearchSyntaxError`. Callers show the message.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from conductor_kernel.text.display import visible_line
from lessons.forms.terms import content_terms, fts_query
from lessons.storage.store import (
    REPAIR_HINT,
    Notebook,
    NoteRecord,
    Row,
    TaskTypeRecord,
    note_record,
    task_type_record,
)
from lessons.values import trust_name
from record.fts import SearchSyntaxError
from record.migrations import is_busy, read_errors

# How a listing of task types may be sorted (the value is its ORDER BY).
TYPE_ORDERS = {"members": "members desc", "name": "name"}


@dataclass(frozen=True)
class HistoryEntry:
    """One change to a note or a task type, and the run that made it (if any)."""

    at: float
    action: str
    run_id: str | None
    detail: str  # JSON object


@dataclass(frozen=True)
class RecallEntry:
    """One run a note was recalled in: its rank and score there, and how the run went."""

    run_id: str
    rank: int
    score: float
    outcome: str | None


@contextlib.contextmanager
def _explained(book: Notebook) -> Iterator[None]:
    with read_errors(book.path, repair=REPAIR_HINT):
        yield


def _read(book: Notebook, sql: str, params: Any = ()) -> list[Row]:
    with _explained(book):
        return book.read(sql, params)


# -- single lookups -------------------------------------------------------------------


def lookup_note(book: Notebook, ref: str) -> NoteRecord | None:
    """A note by id or unique id prefix; None when none (or several) fit."""
    with _explained(book):
        return book.find_note(ref)


def lookup_type(book: Notebook, ref: str) -> TaskTypeRecord | None:
    """A task type by id, unique id prefix, or name; None when none (or several) fit."""
    with _explained(book):
        return book.find_type(ref)


# -- listings -------------------------------------------------------------------------


def task_types(
    book: Notebook, *, order: Literal["members", "name"] = "members", limit: int = -1
) -> list[TaskTypeRecord]:
    """Task types in use (not retired), the largest first or by name; -1: no limit."""
    rows = _read(
        book,
        f"select * from task_types where retired = 0 order by {TYPE_ORDERS[order]} limit ?",
        (limit,),
    )
    return [task_type_record(row) for row in rows]


def recent_notes(
    book: Notebook,
    *,
    retired: bool = False,
    type_id: str | None = None,
    kind: str | None = None,
    limit: int = 50,
) -> list[NoteRecord]:
    """Notes, newest first: active ones (or retired ones), of one type or kind if given."""
    where: list[str] = ["retired = ?"]
    params: list[object] = [1 if retired else 0]
    if type_id is not None:
        where.append("type_id = ?")
        params.append(type_id)
    if kind is not None:
        where.append("kind = ?")
        params.append(kind)
    rows = _read(
        book,
        f"select * from notes where {' and '.join(where)} order by seq desc limit ?",
        (*params, limit),
    )
    return [note_record(row) for row in rows]


def browse_notes(
    book: Notebook,
    words: str = "",
    *,
    type_id: str | None = None,
    untyped: bool = False,
    limit: int = 500,
) -> list[NoteRecord]:
    """Active notes holding every word of `words` (best match first), or all of them
    (most trusted first) when `words` is blank; of one type, or of none when `untyped`.

    Words are matched as the notebook indexes them (lessons.forms.terms), so this finds what
    recall would.
    """
    if type_id is not None and untyped:
        raise ValueError("a note has one type or none: pass type_id or untyped, not both")
    where: list[str] = ["n.retired = 0"]
    params: list[object] = []
    if untyped:
        where.append("n.type_id is null")
    elif type_id is not None:
        where.append("n.type_id = ?")
        params.append(type_id)
    if not words.strip():
        rows = _read(
            book,
            f"select n.* from notes n where {' and '.join(where)} "
            "order by n.confidence desc, n.seq limit ?",
            (*params, limit),
        )
        return [note_record(row) for row in rows]
    terms = sorted(content_terms(words))
    if not terms:
        return []
    query = fts_query([], all_of=terms)  # every word must match, as in a search box
    sql = (
        "select n.* from notes_fts join notes n on n.seq = notes_fts.rowid "
        f"where notes_fts match ? and {' and '.join(where)} order by notes_fts.rank limit ?"
    )
    with _explained(book):
        try:
            rows = book.read(sql, (query, *params, limit))
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise  # _explained says the file is locked
            raise SearchSyntaxError(query, str(exc)) from None
    return [note_record(row) for row in rows]


def note_counts_by_type(book: Notebook) -> dict[str | None, int]:
    """How many active notes each task type holds (None: notes of no type)."""
    rows = _read(
        book, "select type_id, count(*) as n from notes where retired = 0 group by type_id"
    )
    return {row["type_id"]: int(row["n"]) for row in rows}


# -- what happened to one note or type -------------------------------------------------


def note_history(book: Notebook, note_id: str) -> list[HistoryEntry]:
    """Every change to the note, oldest first."""
    rows = _read(
        book,
        "select at, action, run_id, detail from note_history where note_id = ? order by id",
        (note_id,),
    )
    return [HistoryEntry(**row) for row in rows]


# The history rows another notebook's note arrives with (lessons/exchange/arrive.py).
ARRIVALS = ("merged-from", "imported")


def claimed_elsewhere(book: Notebook, note_id: str) -> list[str]:
    """What other notebooks said of the note when they brought it, one sentence each,
    escaped: claims, never this notebook's verification."""
    out = []
    for entry in note_history(book, note_id):
        try:
            detail = json.loads(entry.detail) if entry.action in ARRIVALS else {}
        except ValueError:
            continue
        claimed = detail.get("claimed") if isinstance(detail, dict) else None
        if not isinstance(claimed, dict):
            continue
        said = trust_name(str(claimed.get("verification")), str(claimed.get("outcome")))
        out.append(visible_line(
            f"said in {detail.get('from')} to be {said} ({claimed.get('verification')}), "
            f"helped {claimed.get('helpful')}, hurt {claimed.get('harmful')}; not checked here"
        ))  # fmt: skip
    return out


def type_history(book: Notebook, type_id: str) -> list[HistoryEntry]:
    """Every change to the task type, oldest first."""
    rows = _read(
        book,
        "select at, action, run_id, detail from type_history where type_id = ? order by id",
        (type_id,),
    )
    return [HistoryEntry(**row) for row in rows]


def note_recalls(book: Notebook, note_id: str, *, limit: int = 20) -> list[RecallEntry]:
    """The latest runs the note was recalled in, latest first."""
    rows = _read(
        book,
        "select run_id, rank, score, outcome from recalls where note_id = ? "
        "order by id desc limit ?",
        (note_id, limit),
    )
    return [RecallEntry(**row) for row in rows]
