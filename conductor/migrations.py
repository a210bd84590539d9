"""Numbered, recorded, append-only SQLite migrations (one registry per database).

Each migration is a function named `mNNN_description(db)`; applied names are stored in
`_migrations` so each runs once, in order. Never edit an applied migration: add one.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable
from pathlib import Path

import sqlite_utils

from conductor.errors import UserFacingError

MigrationFn = Callable[[sqlite_utils.Database], None]


class DatabaseError(UserFacingError):
    """A database file that is corrupt, foreign or locked; the message names it."""


class Migrations:
    def __init__(self, name: str) -> None:
        self.name = name
        self._steps: list[MigrationFn] = []

    def __call__(self, fn: MigrationFn) -> MigrationFn:
        self._steps.append(fn)
        return fn

    def apply(self, db: sqlite_utils.Database) -> list[str]:
        db["_migrations"].create(
            {"name": str, "applied_at": str, "database": str}, pk="name", if_not_exists=True
        )
        done = {row["name"] for row in db["_migrations"].rows}
        applied = []
        for fn in self._steps:
            if fn.__name__ in done:
                continue
            with db.conn:
                fn(db)
                db["_migrations"].insert(
                    {
                        "name": fn.__name__,
                        "applied_at": dt.datetime.now(dt.UTC).isoformat(),
                        "database": self.name,
                    }
                )
            applied.append(fn.__name__)
        return applied


# Databases up to this size are checked page by page on open.
FULL_CHECK_MAX_BYTES = 64 * 1024 * 1024


def open_database(
    path: Path | str, migrations: Migrations, *, expect_tables: set[str]
) -> sqlite_utils.Database:
    """Open (creating) a WAL SQLite database and migrate it.

    A file that is not SQLite, is corrupt, or belongs to something else (tables of ours
    missing while others exist) raises `DatabaseError` naming it; nothing is overwritten.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    existed = path.exists() and path.stat().st_size > 0
    try:
        conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        if existed:
            # quick_check reads every page: ~2 s for a 1M-note notebook on each start. Big
            # files get only the header and schema read; damage deeper in them surfaces
            # as an error where the pages are used (recall and learning log and go on).
            small = path.stat().st_size <= FULL_CHECK_MAX_BYTES
            check = "PRAGMA quick_check" if small else "select 'ok' from sqlite_master limit 1"
            ok = (conn.execute(check).fetchone() or ["ok"])[0]
            if ok != "ok":
                raise DatabaseError(
                    f"{path} is damaged (integrity check: {ok}). Move it aside and start a "
                    "new one, or repair it with `sqlite3 FILE .recover`."
                )
            tables = {
                r[0] for r in conn.execute("select name from sqlite_master where type='table'")
            }
            if tables and "_migrations" not in tables:
                raise DatabaseError(
                    f"{path} is an SQLite database of something else (tables: "
                    f"{', '.join(sorted(tables)[:5])}). Point to another file; this one was not changed."
                )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(
            f"{path} is not a usable SQLite database ({exc}). Move it aside or point to "
            "another file; it was not changed."
        ) from exc
    db = sqlite_utils.Database(conn)
    try:
        migrations.apply(db)
    except sqlite3.OperationalError as exc:
        raise DatabaseError(f"{path}: could not migrate ({exc}).") from exc
    missing = expect_tables - set(db.table_names())
    if missing:
        raise DatabaseError(f"{path}: tables {sorted(missing)} are missing after migration.")
    return db
