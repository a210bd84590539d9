"""Merging one notebook into another, keeping every source run.

`conductor notebook merge A.db B.db`: `merge_notebooks` folds B into A. Task types are
matched by id, name or their terms; notes by id, content or near-duplicate shape; the
history rows of B's notes (each naming its run) are carried over. A note is kept once:
a duplicate from the other notebook strengthens it and adds its runs to its provenance.

(A Ray batch does not merge notebooks: its workers prepare each run with
`lessons.write.prepare.prepare_run` and the driver writes it with
`lessons.write.learn.write_prepared`, as learning on one machine does. `snapshot_bytes` is
what the workers read.)

A note's source runs are `source_runs(conn, note_id)`: its own run and every run its
history says created, merged into or repeated it.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from conductor_kernel.errors import UserFacingError
from lessons.exchange.transfer import TYPE_COLUMNS
from lessons.forms.tasktypes import (
    PARAMS,
    add_question,
    materialize,
    score_types,
)
from lessons.forms.terms import question_terms
from lessons.storage.notes import VERIFICATION_RANK, note_terms
from lessons.storage.store import Notebook, record_note_history, record_type_history
from lessons.values import NoteDraft

# History actions that mean "this run arrived at this note".
SOURCE_ACTIONS = ("created", "merged", "duplicate-skipped")


# -- two notebooks into one -----------------------------------------------------------------


def source_runs(conn: sqlite3.Connection, note_id: str) -> list[str]:
    """Every run a note came from: its own, and each run its history credits."""
    rows = conn.execute(
        "select source_run from notes where id = ? union "
        f"select run_id from note_history where note_id = ? and action in "
        f"({', '.join('?' * len(SOURCE_ACTIONS))})",
        (note_id, note_id, *SOURCE_ACTIONS),
    ).fetchall()
    return sorted({r[0] for r in rows if r[0]})


def snapshot_bytes(path: Path) -> bytes:
    """A consistent copy of a notebook file (SQLite's online backup), as bytes; a
    notebook that does not exist yet is created first."""
    if not Path(path).exists():
        Notebook(path).close()
    with tempfile.TemporaryDirectory(prefix="conductor-snapshot-") as tmp:
        copy = Path(tmp) / "notebook.db"
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        target = sqlite3.connect(copy)
        try:
            source.backup(target)
        finally:
            target.close()
            source.close()
        return copy.read_bytes()


def merge_files(target: Path, sources: list[Path]) -> list[tuple[Path, dict[str, int]]]:
    """`conductor notebook merge`: each source, read from a copy (so never changed, not
    even migrated), folded into `target` in turn."""
    done = []
    for source in sources:
        if not source.is_file():
            raise UserFacingError(f"no notebook at {source}; name an existing notebook file")
        if source.resolve() == target.resolve():
            raise UserFacingError(f"{source} is the target itself; name another notebook")
    book = Notebook(target)
    try:
        for source in sources:
            with tempfile.TemporaryDirectory(prefix="conductor-merge-") as tmp:
                copy = Path(tmp) / "source.db"
                copy.write_bytes(snapshot_bytes(source))
                other = Notebook(copy)
                try:
                    done.append((source, merge_notebooks(book, other)))
                finally:
                    other.close()
    finally:
        book.close()
    return done


def merge_notebooks(target: Notebook, source: Notebook) -> dict[str, int]:
    """Fold `source` into `target` in one transaction; returns what happened."""
    with source.reading() as conn:
        conn.row_factory = sqlite3.Row
        try:
            types = [dict(r) for r in conn.execute("select * from task_types order by created_at")]
            notes = [dict(r) for r in conn.execute("select * from notes order by seq")]
            history = [dict(r) for r in conn.execute("select * from note_history order by id")]
            runs = [dict(r) for r in conn.execute("select * from distilled_runs order by at")]
            type_terms = [tuple(r) for r in conn.execute("select * from type_terms")]
        finally:
            conn.row_factory = None
    by_note: dict[str, list[dict[str, Any]]] = {}
    for row in history:
        by_note.setdefault(row["note_id"], []).append(row)
    counts = dict.fromkeys(
        ("types_added", "types_matched", "notes_added", "notes_merged", "runs_added"), 0
    )
    origin = str(source.path)

    def write(conn: sqlite3.Connection) -> None:
        mapping = {t["id"]: _match_type(conn, t, type_terms, origin, counts) for t in types}
        copied = {t["id"] for t in types if t.get("_copied")}
        for note in notes:
            note["type_id"] = mapping.get(note["type_id"], note["type_id"])
            _merge_note(conn, note, by_note.get(note["id"], []), origin, counts)
        for run in runs:
            if conn.execute(
                "select 1 from distilled_runs where run_id = ?", (run["run_id"],)
            ).fetchone():
                continue
            run["type_id"] = mapping.get(run["type_id"], run["type_id"])
            columns = ", ".join(run)
            conn.execute(
                f"insert into distilled_runs ({columns}) values ({', '.join('?' * len(run))})",
                tuple(run.values()),
            )
            counts["runs_added"] += 1
            if run["type_id"] and run["type_id"] not in copied:  # a copy brought its counts
                add_question(conn, run["type_id"], question_terms(run["question"]))

    target.write(write)
    return counts


def _match_type(
    conn: sqlite3.Connection,
    row: dict[str, Any],
    type_terms: list[tuple],
    origin: str,
    counts: dict[str, int],
) -> str:
    """The target's type for a source type: same id, same name, or the same terms;
    else a copy of it (with its term counts, so it matches as it did at home)."""
    if conn.execute("select 1 from task_types where id = ?", (row["id"],)).fetchone():
        counts["types_matched"] += 1
        return row["id"]
    found = conn.execute(
        "select id from task_types where lower(name) = lower(?) and retired = 0 limit 1",
        (row["name"],),
    ).fetchone()
    terms = {term: count for type_id, term, count in type_terms if type_id == row["id"]}
    if found is None and terms:
        top = sorted(terms, key=lambda t: -terms[t])[:40]
        best = score_types(conn, set(top), limit=1)
        if best and best[0].evidence >= PARAMS.join_evidence:
            found = (best[0].type_id,)
    if found is not None:
        counts["types_matched"] += 1
        record_type_history(
            conn, found[0], "merged-from", detail={"type": row["id"], "from": origin}
        )
        return found[0]
    values = [row.get(c) for c in TYPE_COLUMNS]
    conn.execute(
        f"insert into task_types ({', '.join(TYPE_COLUMNS)}, members, updated_at) "
        f"values ({', '.join('?' * len(TYPE_COLUMNS))}, ?, ?)",
        (*values, int(row.get("members", 0)), time.time()),
    )
    conn.executemany(
        "insert into type_terms (type_id, term, count) values (?, ?, ?)",
        [(row["id"], t, c) for t, c in terms.items()],
    )
    conn.executemany(
        "insert into term_df (term, df) values (?, ?) "
        "on conflict(term) do update set df = df + excluded.df",
        list(terms.items()),
    )
    conn.execute(
        "update notebook_meta set value = value + ? where key = 'questions'",
        (int(row.get("members", 0)),),
    )
    materialize(conn, row["id"])
    record_type_history(conn, row["id"], "merged-from", detail={"from": origin})
    row["_copied"] = True
    counts["types_added"] += 1
    return row["id"]


def _merge_note(
    conn: sqlite3.Connection,
    note: dict[str, Any],
    history: list[dict[str, Any]],
    origin: str,
    counts: dict[str, int],
) -> None:
    same = conn.execute("select id from notes where id = ?", (note["id"],)).fetchone()
    if same is None:
        same = conn.execute(
            "select id from notes where content_hash = ? and type_id is ? limit 1",
            (note["content_hash"], note["type_id"]),
        ).fetchone()
    if same is None:
        same = conn.execute(
            "select id from notes where type_id is ? and kind = ? and near_hash = ? "
            "and retired = 0 order by seq limit 1",
            (note["type_id"], note["kind"], note["near_hash"]),
        ).fetchone()
    if same is None:
        _insert_copy(conn, note, history, origin)
        counts["notes_added"] += 1
        return
    into = same[0]
    new_rows = _new_history(conn, into, history)
    runs = {r["run_id"] for r in new_rows if r["action"] in SOURCE_ACTIONS and r["run_id"]}
    own = note["source_run"]
    if own and own not in runs and own not in source_runs(conn, into):
        # The other note's own run, when its history does not name it (older notes).
        detail = json.dumps({"from_note": note["id"], "from": origin})
        new_rows.append(
            {"at": note["created_at"], "action": "merged", "run_id": own, "detail": detail}
        )
        runs.add(own)
    added = {
        a: sum(r["action"] == f"recalled-{a}" for r in new_rows) for a in ("helpful", "harmful")
    }
    uses = sum(r["action"].startswith("recalled-") for r in new_rows)
    for row in new_rows:
        conn.execute(
            "insert into note_history (note_id, at, action, run_id, detail) values (?, ?, ?, ?, ?)",
            (into, row["at"], row["action"], row["run_id"], row.get("detail") or "{}"),
        )
    current = conn.execute("select verification from notes where id = ?", (into,)).fetchone()
    better = VERIFICATION_RANK.get(note["verification"], 0) > VERIFICATION_RANK.get(current[0], 0)
    if better:
        draft = NoteDraft(kind=note["kind"], text=note["text"], code=note["code"], key=note["key"])
        conn.execute(
            "update notes set text = ?, code = ?, verification = ?, outcome = ?, answer = ?, "
            "content_hash = ?, terms = ? where id = ?",
            (note["text"], note["code"], note["verification"], note["outcome"], note["answer"],
             note["content_hash"], note_terms(note["type_id"], draft, note["source_question"]),
             into),
        )  # fmt: skip
    conn.execute(
        "update notes set support = support + ?, helpful = helpful + ?, harmful = harmful + ?, "
        "uses = uses + ?, confidence = max(confidence, ?), updated_at = ? where id = ?",
        (
            len(runs),
            added["helpful"],
            added["harmful"],
            uses,
            note["confidence"],
            time.time(),
            into,
        ),
    )
    if new_rows:
        record_note_history(
            conn, into, "merged-from", detail={"from_note": note["id"], "from": origin}
        )
        counts["notes_merged"] += 1


def _new_history(
    conn: sqlite3.Connection, note_id: str, history: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The source's history rows for a note that the target's note does not hold yet."""
    have = {
        (round(r[0], 6), r[1], r[2])
        for r in conn.execute(
            "select at, action, run_id from note_history where note_id = ?", (note_id,)
        )
    }
    return [
        dict(r)
        for r in history
        if (round(r["at"], 6), r["action"], r["run_id"]) not in have
        and r["action"] not in ("merged-from", "imported")
    ]


def _insert_copy(
    conn: sqlite3.Connection, note: dict[str, Any], history: list[dict[str, Any]], origin: str
) -> None:
    row = {k: v for k, v in note.items() if k != "seq"}
    conn.execute(
        f"insert into notes ({', '.join(row)}) values ({', '.join('?' * len(row))})",
        tuple(row.values()),
    )
    for h in history:
        conn.execute(
            "insert into note_history (note_id, at, action, run_id, detail) values (?, ?, ?, ?, ?)",
            (note["id"], h["at"], h["action"], h["run_id"], h.get("detail") or "{}"),
        )
    record_note_history(conn, note["id"], "merged-from", detail={"from": origin})
