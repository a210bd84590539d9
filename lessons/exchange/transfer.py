"""Export a notebook as JSON lines, and import such a file into another notebook.

The first line names the format and its version. Task types travel with their term
counts, so imported types are matched as they were at home; notes travel with their
history. Importing skips what is already there (same id, or the same content in the same
type) and records an `imported` history row on everything it adds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conductor_kernel.bounded import TooDeep, json_lines, loads_json
from conductor_kernel.errors import UserFacingError
from lessons.forms.tasktypes import materialize
from lessons.storage.notes import note_terms
from lessons.storage.store import Notebook, record_note_history, record_type_history
from lessons.values import NoteDraft

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


class ImportError_(UserFacingError):
    """A file that is not a notebook export (or from a newer version)."""


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
    for row in book.read(f"select {', '.join(NOTE_COLUMNS)} from notes order by seq"):
        history = [
            dict(h)
            for h in book.read(
                "select at, action, run_id, detail from note_history where note_id = ? order by id",
                (row["id"],),
            )
        ]
        yield json.dumps({"record": "note", **row, "history": history}, ensure_ascii=False)


def import_file(book: Notebook, path: Path) -> dict[str, int]:
    try:
        lines = json_lines(path.read_text(encoding="utf-8"))  # U+2028 may be in a note
        header = loads_json(lines[0]) if lines else {}
    except (OSError, ValueError) as exc:  # UnicodeDecodeError, JSONDecodeError, TooDeep
        raise ImportError_(f"{path}: not a notebook export ({exc}).") from exc
    if header.get("format") != FORMAT:
        raise ImportError_(
            f"{path}: line 1 does not name the {FORMAT} format; "
            "write the file with `conductor notebook export`."
        )
    if int(header.get("format_version", 0)) > FORMAT_VERSION:
        raise ImportError_(f"{path}: written by a newer conductor; upgrade to import it.")
    records = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            records.append(loads_json(line))
        except TooDeep as exc:
            raise ImportError_(f"{path}:{number}: {exc}.") from None
        except json.JSONDecodeError as exc:
            raise ImportError_(f"{path}:{number}: not valid JSON ({exc.msg}).") from exc
    counts = {"types": 0, "notes": 0, "skipped": 0}
    book.write(lambda conn: _import(conn, records, counts))
    return counts


def _import(conn: Any, records: list[dict[str, Any]], counts: dict[str, int]) -> None:
    now = time.time()
    for record in records:
        kind = record.get("record")
        if kind == "task_type":
            if conn.execute("select 1 from task_types where id = ?", (record["id"],)).fetchone():
                counts["skipped"] += 1
                continue
            values = [record.get(c) for c in TYPE_COLUMNS]
            conn.execute(
                f"insert into task_types ({', '.join(TYPE_COLUMNS)}, members, updated_at) "
                f"values ({', '.join('?' * len(TYPE_COLUMNS))}, ?, ?)",
                (*values, int(record.get("members", 0)), now),
            )
            terms = record.get("terms") or {}
            conn.executemany(
                "insert into type_terms (type_id, term, count) values (?, ?, ?)",
                [(record["id"], t, int(c)) for t, c in terms.items()],
            )
            conn.executemany(
                "insert into term_df (term, df) values (?, ?) "
                "on conflict(term) do update set df = df + excluded.df",
                list(terms.items()),
            )
            conn.execute(
                "update notebook_meta set value = value + ? where key = 'questions'",
                (int(record.get("members", 0)),),
            )
            materialize(conn, record["id"])
            record_type_history(conn, record["id"], "imported")
            counts["types"] += 1
        elif kind == "note":
            duplicate = conn.execute(
                "select 1 from notes where id = ? or (content_hash = ? and type_id is ?)",
                (record["id"], record["content_hash"], record.get("type_id")),
            ).fetchone()
            if duplicate:
                counts["skipped"] += 1
                continue
            draft = NoteDraft(
                kind=record["kind"], text=record["text"], code=record["code"], key=record["key"]
            )
            values = [record.get(c) for c in NOTE_COLUMNS]
            conn.execute(
                f"insert into notes ({', '.join(NOTE_COLUMNS)}, terms, updated_at) "
                f"values ({', '.join('?' * len(NOTE_COLUMNS))}, ?, ?)",
                (*values, note_terms(record.get("type_id"), draft, record["source_question"]), now),
            )
            for h in record.get("history") or []:
                conn.execute(
                    "insert into note_history (note_id, at, action, run_id, detail) "
                    "values (?, ?, ?, ?, ?)",
                    (record["id"], h["at"], h["action"], h.get("run_id"), h.get("detail", "{}")),
                )
            record_note_history(conn, record["id"], "imported")
            counts["notes"] += 1
