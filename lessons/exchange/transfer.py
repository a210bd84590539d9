"""Export a notebook as JSON lines, and import such a file into another notebook.

The first line names the format and its version. Task types travel with their term
counts, so imported types are matched as they were at home; notes travel with their
history. An import reads and checks the whole file before the notebook is opened: a line
that is not JSON, a record of the wrong shape, a value of the wrong type or too long
refuses the file with its name and line number, and nothing is written. Then everything
arrives as a merge's rows do (lessons/exchange/arrive.py): notes unverified and beside
ours, the file's claims in their history, what is already here skipped.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conductor_kernel.bounded import TooDeep, json_lines, loads_json
from lessons.exchange.arrive import Arrival
from lessons.exchange.incoming import IncomingNote, IncomingType, incoming_note, incoming_type
from lessons.exchange.shape import ForeignFileError, checked_row
from lessons.storage.store import Notebook

FORMAT = "conductor-notebook"
FORMAT_VERSION = 1
TYPE_COLUMNS = (
    "id", "name", "description", "suggestions", "procedure", "inherited_from",
    "experience_version", "runs", "correct", "wrong", "failed", "retired", "created_at",
)  # fmt: skip
NOTE_COLUMNS = (
    "id", "type_id", "kind", "key", "text", "code", "answer", "source_run", "source_question",
    "source_task", "verification", "outcome", "confidence", "helpful", "harmful", "uses",
    "support", "content_hash", "near_hash", "retired", "retired_reason", "author", "created_at",
)  # fmt: skip


def export_lines(book: Notebook) -> Iterator[str]:
    yield json.dumps(
        {"format": FORMAT, "format_version": FORMAT_VERSION, "exported_at": time.time()}
    )
    for row in book.read(f"select {', '.join(TYPE_COLUMNS)} from task_types order by created_at"):
        terms = {
            r["term"]: r["count"]
            for r in book.read("select term, count from type_terms where type_id = ?", (row["id"],))
        }
        members = book.read_one("select members from task_types where id = ?", (row["id"],))
        # None only if the type was deleted between the two reads: export it as empty.
        count = members["members"] if members else 0
        record = {"record": "task_type", **row, "members": count, "terms": terms}
        yield json.dumps(record, ensure_ascii=False)
    # Where a note came from, when it has the column (a notebook on a read-only home
    # may predate it): informative only, since an import trusts no claim.
    have = {r["name"] for r in book.read("select name from pragma_table_info('notes')")}
    columns = NOTE_COLUMNS + (("origin",) if "origin" in have else ())
    for row in book.read(f"select {', '.join(columns)} from notes order by seq"):
        history = [
            dict(h)
            for h in book.read(
                "select at, action, run_id, detail from note_history where note_id = ? order by id",
                (row["id"],),
            )
        ]
        yield json.dumps({"record": "note", **row, "history": history}, ensure_ascii=False)


@dataclass
class Export:
    """A checked export file: its types and notes, in the file's order."""

    path: Path
    types: list[IncomingType] = field(default_factory=list)
    notes: list[IncomingNote] = field(default_factory=list)


def _refuse(where: str, why: str) -> ForeignFileError:
    return ForeignFileError(f"{where}: {why}; nothing was imported.")


def read_export(path: Path) -> Export:
    """Every record of the export at `path`, checked; the first bad line refuses it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _refuse(str(path), f"cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data.count(b"\n", 0, exc.start) + 1
        raise _refuse(f"{path}:{number}", "not UTF-8 text") from None
    lines = json_lines(text)  # U+2028 may be in a note
    header = _record(path, 1, lines[0]) if lines else {}
    if header.get("format") != FORMAT:
        raise _refuse(
            f"{path}:1",
            f"does not name the {FORMAT} format; write the file with `conductor notebook export`",
        )
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise _refuse(f"{path}:1", "the format version is not a number")
    if version > FORMAT_VERSION:
        raise _refuse(f"{path}:1", "written by a newer conductor; upgrade to import it")
    book = Export(path)
    for number, line in enumerate(lines[1:], start=2):
        if line.strip():
            _add(book, _record(path, number, line), f"{path}:{number}")
    return book


def _record(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        record = loads_json(line)
    except TooDeep as exc:
        raise _refuse(f"{path}:{number}", str(exc)) from None
    except json.JSONDecodeError as exc:
        raise _refuse(f"{path}:{number}", f"not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise _refuse(f"{path}:{number}", "not a JSON object")
    return record


def _add(book: Export, record: dict[str, Any], where: str) -> None:
    kind = record.get("record")
    if kind == "task_type":
        row = checked_row("task_types", record, where)
        book.types.append(incoming_type(row, record.get("terms") or {}, where))
    elif kind == "note":
        history = record.get("history") or []
        if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
            raise _refuse(where, "a note's history is not a list of objects")
        rows = [checked_row("note_history", h, f"{where}, history {n}") for n, h in
                enumerate(history, 1)]  # fmt: skip
        book.notes.append(incoming_note(checked_row("notes", record, where), rows, where))
    else:
        raise _refuse(where, "not a task_type or note record")


def import_export(book: Notebook, export: Export) -> dict[str, int]:
    """Everything of a checked export into `book`, in one transaction."""

    def write(conn: sqlite3.Connection) -> dict[str, int]:
        arrival = Arrival(conn, "imported", export.path.resolve())
        for kind in export.types:
            arrival.task_type(kind)
        for note in export.notes:
            arrival.note(note)
        counts = arrival.counts
        skipped = counts["types_matched"] + counts["notes_skipped"]
        return {"types": counts["types_added"], "notes": counts["notes_added"], "skipped": skipped}

    try:
        return book.write(write)
    except sqlite3.IntegrityError as exc:  # a row no check foresaw: nothing was kept
        raise _refuse(str(export.path), f"the import was undone ({exc})") from None


def import_file(book: Notebook, path: Path) -> dict[str, int]:
    return import_export(book, read_export(path))
