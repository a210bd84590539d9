"""Opening a notebook and writing to it safely from many runs at once.

Several runs may finish at the same moment, in threads of one process or in several
processes (the batch runner). Every write is one short `BEGIN IMMEDIATE` transaction:
SQLite lets one writer in at a time, the others wait (busy_timeout) and, should the
wait run out, retry with backoff. Model calls never happen inside a transaction.

The rows the application reads are typed here (`NoteRecord`, `TaskTypeRecord`); the
listings the CLI and the TUI show are in lessons/storage/queries.py, so neither writes SQL.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict, TypeVar, cast

from conductor_kernel.interfaces import TaskScoring
from lessons.storage.schema import TABLES, migrations
from lessons.values import NO_SCORING
from record.home import home_dir
from record.id_prefix import encodable, prefix_condition
from record.migrations import DatabaseError, open_database, table_names, write_transaction

log = logging.getLogger("conductor.notebook")
T = TypeVar("T")

# What to do with a notebook that cannot be read (the message names the file).
REPAIR_HINT = (
    "Recover what it holds with `sqlite3 FILE .recover | sqlite3 NEW_FILE` and pass "
    "--notebook NEW_FILE, or move it aside: runs then start a new notebook."
)

# A result row: its values by column name.
Row = dict[str, Any]


class NotebookBusy(DatabaseError):
    """The notebook stayed locked by other writers for too long."""


def default_path() -> Path:
    return home_dir() / "notebook.db"


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:11]


def _refuse_foreign(path: Path) -> None:
    """A database that records another program's migrations is not ours to change."""
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        # immutable: read the file as it is, creating no -wal/-shm files beside it.
        conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        try:
            names = conn.execute("select name from sqlite_master where type='table'").fetchall()
            if ("_migrations",) not in names:
                return  # open_database tells foreign from empty
            owners = {r[0] for r in conn.execute("select distinct database from _migrations")}
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return  # open_database explains what is wrong with the file
    if owners - {"notebook"}:
        raise DatabaseError(
            f"{path} is not a notebook: it is the {', '.join(sorted(owners))} database. "
            "Pass --notebook with another file; this one was not changed."
        )


@contextlib.contextmanager
def _creation_lock(path: Path) -> Iterator[None]:
    """Serialise opens, so two processes never migrate the same new file at once.

    The lock is on the directory: it leaves no file behind, even beside a file refused.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class NoteRecord(TypedDict):
    """One row of `notes` (lessons/storage/schema.py says what each column holds)."""

    seq: int
    id: str
    type_id: str | None
    kind: str
    key: str
    text: str
    code: str
    answer: str | None
    source_run: str | None  # None for a note imported or written by hand
    source_question: str
    source_task: str
    verification: str
    outcome: str
    confidence: float
    helpful: int
    harmful: int
    uses: int
    support: int
    content_hash: str
    near_hash: str
    retired: int
    retired_reason: str | None
    author: str
    terms: str
    created_at: float
    updated_at: float
    question_hash: str
    origin: str  # '' when learned here, else e.g. "merged from FILE" (schema m004)


class TaskTypeRecord(TypedDict):
    """One row of `task_types`; `suggestions` and `procedure` are JSON lists."""

    id: str
    name: str
    description: str
    members: int
    base: float
    template_questions: int
    suggestions: str
    procedure: str
    inherited_from: str | None
    experience_version: int
    notes_since_induction: int
    runs: int
    correct: int
    wrong: int
    failed: int
    retired: int
    created_at: float
    updated_at: float


def note_record(row: Row) -> NoteRecord:
    # A `select *` row of `notes` has the columns the schema gives it; a row read
    # through the driver can only be typed as a dict.
    return cast(NoteRecord, row)


def task_type_record(row: Row) -> TaskTypeRecord:
    return cast(TaskTypeRecord, row)  # as note_record, for `task_types`


MMAP_BYTES = 256 * 1024 * 1024
CACHE_KIB = 32 * 1024


def _open_read_only(path: Path) -> sqlite3.Connection:
    """The notebook opened for reading alone. Where its folder cannot be written (a
    read-only file system), SQLite cannot make the WAL's shared-memory file: the file is
    then read as immutable, which nothing can change while the folder stays read-only."""
    from urllib.parse import quote

    frozen = "" if os.access(path.parent, os.W_OK) else "&immutable=1"
    try:
        conn = sqlite3.connect(
            f"file:{quote(str(path))}?mode=ro{frozen}", uri=True, check_same_thread=False
        )
        missing = TABLES - table_names(conn)
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"{path}: cannot be read ({exc}).") from None
    if missing:
        raise DatabaseError(
            f"{path}: not a notebook this version can read without changing it (missing "
            f"{', '.join(sorted(missing))}); open it once where it can be written."
        )
    return conn


class Notebook:
    """One notebook file, and the task scorers it judges with (`scoring`, the
    application's; given none, it knows no task and scores no answer). Thread-safe: one connection, used
    under a lock."""

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        scoring: TaskScoring | None = None,
        read_only: bool = False,
    ) -> None:
        """`read_only`: only read it (listing a notebook on a read-only home); nothing
        is created, migrated or locked, and a write fails."""
        self.path = Path(path).expanduser() if path else default_path()
        # The task scorers it judges with (the application's), and whose task
        # descriptions it takes off a question; none: every task is unknown to it.
        self.scoring: TaskScoring = scoring if scoring is not None else NO_SCORING
        _refuse_foreign(self.path)
        if read_only:
            self.conn: sqlite3.Connection = _open_read_only(self.path)
        else:
            with _creation_lock(self.path):
                self.conn = open_database(self.path, migrations, expect_tables=TABLES)
        # Transactions are explicit (BEGIN IMMEDIATE) from here on.
        self.conn.isolation_level = None
        # Recall reads pages all over a large notebook: read them through a memory map
        # and keep more of them than SQLite's default 2 MB cache (bench/notebook.py
        # --only latency: about a third off recall at 100k notes on a 2-core machine).
        self.conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        self.conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> Notebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions -------------------------------------------------------------------

    def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` in one immediate transaction, retrying while others write."""
        return write_transaction(
            self.conn, self._lock, fn, path=Path(self.path), busy_error=NotebookBusy
        )

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, for several reads in a row by this thread alone."""
        with self._lock:
            yield self.conn

    def read(self, sql: str, params: Any = ()) -> list[Row]:
        with self._lock:
            cursor = self.conn.execute(sql, params)
            columns = [c[0] for c in cursor.description or []]
            return [_row(columns, row) for row in cursor.fetchall()]

    def read_column(self, sql: str, params: Any = ()) -> list[Any]:
        """The first column of every row (no row dicts: for long lists of ids)."""
        with self._lock:
            return [row[0] for row in self.conn.execute(sql, params).fetchall()]

    def read_one(self, sql: str, params: Any = ()) -> Row | None:
        rows = self.read(sql, params)
        return rows[0] if rows else None

    # -- lookups used by several modules ------------------------------------------------

    def find_note(self, note_id: str) -> NoteRecord | None:
        """A note by id or unique id prefix (as shown in listings; `%` and `_` are
        characters like any other)."""
        rows = self._exactly("notes", "id", note_id) or self._by_prefix("notes", note_id)
        return note_record(rows[0]) if len(rows) == 1 else None

    def find_type(self, type_id: str) -> TaskTypeRecord | None:
        """A task type by id, name, or unique id prefix, in that order."""
        rows = (
            self._exactly("task_types", "id", type_id)
            or self._exactly("task_types", "name", type_id)
            or self._by_prefix("task_types", type_id)
        )
        return task_type_record(rows[0]) if len(rows) == 1 else None

    def _exactly(self, table: str, column: str, value: str) -> list[Row]:
        """Up to two rows of `table` whose `column` is `value`."""
        if not encodable(value):
            return []  # nothing stored holds a lone surrogate
        return self.read(f"select * from {table} where {column} = ? limit 2", (value,))

    def _by_prefix(self, table: str, prefix: str) -> list[Row]:
        """Up to two rows of `table` whose id starts with `prefix`, by the key's index."""
        if not prefix or not encodable(prefix):
            return []  # an empty prefix would name the one note of a notebook of one
        where, params = prefix_condition("id", prefix)
        return self.read(f"select * from {table} where {where} limit 2", params)

    def questions_seen(self) -> int:
        row = self.read_one("select value from notebook_meta where key = 'questions'")
        return int(row["value"]) if row else 0


def _row(columns: list[str], values: tuple[Any, ...]) -> Row:
    return dict(zip(columns, values, strict=True))


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def record_note_history(
    conn: sqlite3.Connection,
    note_id: str,
    action: str,
    *,
    run_id: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    conn.execute(
        "insert into note_history (note_id, at, action, run_id, detail) values (?, ?, ?, ?, ?)",
        (note_id, time.time(), action, run_id, dumps(detail or {})),
    )


def record_type_history(
    conn: sqlite3.Connection,
    type_id: str,
    action: str,
    *,
    run_id: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    conn.execute(
        "insert into type_history (type_id, at, action, run_id, detail) values (?, ?, ?, ?, ?)",
        (type_id, time.time(), action, run_id, dumps(detail or {})),
    )
