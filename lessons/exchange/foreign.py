"""Reading another notebook's SQLite file without letting anything of it act.

The file is copied first (SQLite's page-level backup: no SQL of the file's runs), and the
copy, private to this process, is opened read-only and immutable, with the schema
untrusted (`trusted_schema=OFF`: no function its schema names runs unless SQLite deems
it harmless), no writes (`query_only`), every value capped in length, and an authorizer
that lets through only our own reads: the schema table, two pragmas, and the columns
of ours in the five tables of ours. Nothing is read through a view (a table is read only
when `sqlite_master` says it is an ordinary table) and no trigger can fire on a SELECT;
a generated column (whose expression a read would compute) refuses the file.

Then it must be a notebook of a version this one knows: `_migrations` names only steps
of ours (else: written by a newer conductor, upgrade), `PRAGMA quick_check` passes on the
tables read, and every value passes lessons/exchange/shape.py. The rows come back as
dicts of our column names; whatever else the file holds is never read.
"""

from __future__ import annotations

import functools
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from conductor_kernel.text.display import visible_line
from lessons.exchange.shape import (
    MAX_VALUE_BYTES,
    READ_TABLES,
    ForeignFileError,
    checked_row,
    our_schema,
)

# An audit of each connection opened, with the file it reads (tests record every
# statement with it).
Audit = Callable[[sqlite3.Connection, Path], None]

_META = "sqlite_master"
_MIGRATIONS = "_migrations"
_PRAGMAS = ("quick_check", "table_xinfo")


@dataclass
class ForeignNotebook:
    """What another notebook file holds that a merge uses, every value checked."""

    path: Path
    types: list[dict[str, Any]] = field(default_factory=list)
    type_terms: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)


def read_notebook_file(path: Path, *, audit: Audit | None = None) -> ForeignNotebook:
    """The notes, types, history and runs of the notebook file at `path`, read from a
    private copy; `ForeignFileError` (one line: what to do) when it is not one."""
    if not path.is_file():
        raise ForeignFileError(f"no notebook at {path}; name an existing notebook file")
    with tempfile.TemporaryDirectory(prefix="conductor-merge-") as tmp:
        copy = Path(tmp) / "source.db"
        try:
            snapshot(path, copy)
            conn = _open_untrusted(copy)
        except sqlite3.DatabaseError as exc:
            raise _refuse(path, f"is not an SQLite notebook ({visible_line(str(exc))})") from None
        try:
            if audit is not None:
                audit(conn, path)
            return _read(conn, path)
        except sqlite3.DatabaseError as exc:  # damaged pages, a value too long, denied
            raise _refuse(
                path,
                f"cannot be read as a notebook ({visible_line(str(exc))})",
                "Repair it with `sqlite3 FILE .recover`, or name another",
            ) from None
        finally:
            conn.close()


def snapshot(path: Path, copy: Path) -> None:
    """A consistent page-for-page copy (the WAL's committed pages included)."""
    source = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    source.set_authorizer(lambda *_: sqlite3.SQLITE_DENY)  # the backup needs no SQL
    target = sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


def _open_untrusted(copy: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{quote(str(copy))}?mode=ro&immutable=1", uri=True)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.execute("PRAGMA trusted_schema=OFF")
    conn.execute("PRAGMA query_only=ON")
    # quick_check would evaluate the file's CHECK expressions: it checks pages, not those.
    conn.execute("PRAGMA ignore_check_constraints=ON")
    conn.set_authorizer(_only_our_reads)
    return conn


@functools.cache
def _readable() -> dict[str, set[str]]:
    columns = {t: {c.name for c in cols} for t, cols in our_schema().columns.items()}
    return {**columns, _META: {"type", "name", "sql"}, _MIGRATIONS: {"name", "database"}}


def _only_our_reads(
    action: int, arg1: str | None, arg2: str | None, db: str | None, inner: str | None
) -> int:
    """SQLite's authorizer: our SELECTs of our columns and two pragmas, nothing else;
    nothing at all from inside a view or a trigger (`inner` names one)."""
    if inner is not None or db not in (None, "main"):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_SELECT:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_READ:
        allowed = _readable().get(arg1 or "", set())
        return sqlite3.SQLITE_OK if (arg2 or "").lower() in allowed else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and arg1 in _PRAGMAS and arg2 in READ_TABLES:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _refuse(path: Path, why: str, fix: str = "Name a notebook file") -> ForeignFileError:
    return ForeignFileError(f"{path} {why}; nothing was merged. {fix}.")


def _plain_tables(conn: sqlite3.Connection) -> set[str]:
    """The ordinary tables the file declares (no view, no virtual table)."""
    tables = set()
    for kind, name, sql in conn.execute(f"select type, name, sql from {_META}"):
        if kind == "table" and isinstance(sql, str) and sql.lstrip()[:12].upper() == "CREATE TABLE":
            tables.add(name)
    return tables


def _read(conn: sqlite3.Connection, path: Path) -> ForeignNotebook:
    tables = _plain_tables(conn)
    if _MIGRATIONS not in tables:
        raise _refuse(path, "is not a notebook (no record of its migrations)")
    ours = our_schema()
    steps = conn.execute(f'select "name", "database" from "{_MIGRATIONS}"').fetchall()
    owners = {owner for _, owner in steps}
    if owners != {"notebook"}:
        shown = ", ".join(sorted(visible_line(str(o))[:40] for o in owners)) or "none"
        raise _refuse(path, f"is not a notebook (its migrations are {shown}'s)")
    unknown = sorted({str(name) for name, _ in steps} - set(ours.migrations))
    if unknown:
        shown = visible_line(unknown[0])[:60]
        raise _refuse(
            path,
            f"was written by a newer conductor (migration {shown!r})",
            "Upgrade conductor to merge it",
        )
    missing = [t for t in READ_TABLES if t not in tables]
    if missing:
        raise _refuse(path, f"is not a notebook (no table {missing[0]})")
    book = ForeignNotebook(path)
    for table, rows in (
        ("task_types", book.types),
        ("type_terms", book.type_terms),
        ("notes", book.notes),
        ("note_history", book.history),
        ("distilled_runs", book.runs),
    ):
        rows.extend(_rows(conn, path, table))
    return book


def _rows(conn: sqlite3.Connection, path: Path, table: str) -> list[dict[str, Any]]:
    theirs = {}
    for _, name, _, _, _, _, hidden in conn.execute(f'pragma table_xinfo("{table}")'):
        if hidden:
            raise _refuse(path, f"is not a notebook (a computed column in {table})")
        theirs[str(name).lower()] = name
    problems = [r[0] for r in conn.execute(f'pragma quick_check("{table}")')]
    if problems != ["ok"]:
        shown = visible_line(str(problems[0]))[:120]
        raise _refuse(path, f"is damaged ({shown})", "Repair it with `sqlite3 FILE .recover`")
    columns = [c for c in our_schema().columns[table] if c.name in theirs]
    if not columns:
        return []
    # Every identifier here is ours, quoted by us; the file's names only said which.
    select = ", ".join(c.quoted for c in columns)
    out = []
    for number, values in enumerate(conn.execute(f'select {select} from "{table}"'), 1):
        raw = dict(zip((c.name for c in columns), values, strict=True))
        out.append(checked_row(table, raw, f"{path}, {table} row {number}"))
    return out
