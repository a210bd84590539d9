"""Merging other notebooks into one, every run they learned from kept.

`conductor notebook merge A.db B.db`: B is another file, so it is read defensively
(lessons/exchange/foreign.py: a private copy, read-only, only our columns of our tables,
nothing of its schema run) and checked whole before A is even opened; then its types,
notes and runs arrive in A in one transaction (lessons/exchange/arrive.py): types matched
by id, name or terms, notes added beside ours unverified with B's claims in their
history, B's runs recorded as learned. A file that is not a notebook, or is of a newer
version, or holds a value no notebook holds, is refused with one line, and A is as it was.

(A Ray batch does not merge notebooks: its workers prepare each run with
`lessons.write.prepare.prepare_run` and the driver writes it with
`lessons.write.learn.write_prepared`, as learning on one machine does. `snapshot_bytes` is
what the workers read.)

A note's source runs are `source_runs(conn, note_id)`: its own run and every run its
history says created, merged into or repeated it.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from lessons.exchange.arrive import Arrival
from lessons.exchange.foreign import Audit, ForeignNotebook, read_notebook_file, snapshot
from lessons.exchange.incoming import (
    IncomingNote,
    IncomingRun,
    IncomingType,
    incoming_note,
    incoming_run,
    incoming_type,
)
from lessons.exchange.shape import ForeignFileError
from lessons.storage.store import Notebook

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
        snapshot(Path(path), copy)
        return copy.read_bytes()


def merge_files(
    target: Path, sources: list[Path], *, audit: Audit | None = None
) -> list[tuple[Path, dict[str, int]]]:
    """`conductor notebook merge`: every source read and checked first (none is ever
    changed), then all folded into `target` in one transaction. `audit` is called on
    every connection opened (the tests record each statement with it)."""
    for source in sources:
        if source.resolve() == target.resolve():
            raise ForeignFileError(f"{source} is the target itself; name another notebook")
    incoming = [_incoming(read_notebook_file(source, audit=audit)) for source in sources]
    book = Notebook(target)
    try:
        if audit is not None:
            audit(book.conn, target)

        def write(conn: sqlite3.Connection) -> list[tuple[Path, dict[str, int]]]:
            return [(source, _arrive(conn, source, *parts)) for source, parts in incoming]

        try:
            return book.write(write)
        except sqlite3.IntegrityError as exc:  # a row no check foresaw: nothing was kept
            raise ForeignFileError(
                f"{target}: the merge was undone ({exc}); nothing of it was kept."
            ) from None
    finally:
        book.close()


_Parts = tuple[list[IncomingType], list[IncomingNote], list[IncomingRun]]


def _incoming(book: ForeignNotebook) -> tuple[Path, _Parts]:
    """A foreign notebook's rows as checked values (lessons/exchange/incoming.py)."""
    terms: dict[str, dict[str, int]] = {}
    for row in book.type_terms:
        if isinstance(row["type_id"], str) and isinstance(row["term"], str):
            terms.setdefault(row["type_id"], {})[row["term"]] = row["count"]
    history: dict[str, list[dict]] = {}
    for row in sorted(book.history, key=lambda r: r["id"] or 0):
        history.setdefault(str(row["note_id"]), []).append(row)
    where = f"{book.path}, "
    types = [
        incoming_type(row, terms.get(str(row["id"]), {}), f"{where}task_types row {n}")
        for n, row in enumerate(sorted(book.types, key=lambda r: r["created_at"] or 0), 1)
    ]
    notes = [
        incoming_note(row, history.get(str(row["id"]), []), f"{where}notes row {n}")
        for n, row in enumerate(sorted(book.notes, key=lambda r: r["seq"] or 0), 1)
    ]
    runs = [
        incoming_run(row, f"{where}distilled_runs row {n}")
        for n, row in enumerate(sorted(book.runs, key=lambda r: r["at"] or 0), 1)
    ]
    return book.path, (types, notes, runs)


def _arrive(
    conn: sqlite3.Connection,
    source: Path,
    types: list[IncomingType],
    notes: list[IncomingNote],
    runs: list[IncomingRun],
) -> dict[str, int]:
    arrival = Arrival(conn, "merged", source.resolve())
    for kind in types:
        arrival.task_type(kind)
    for note in notes:
        arrival.note(note)
    for run in runs:
        arrival.run(run)
    return arrival.counts
