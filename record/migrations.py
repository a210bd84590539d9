"""Numbered, recorded, append-only SQLite migrations (one registry per database).

Each migration is a function named `mNNN_description(db)`; applied names are stored in
`_migrations` so each runs once, in order, in one transaction with its record. Never
change what an applied migration makes: add one.

Both databases (transcripts/runs_schema.py, lessons/storage/schema.py) are declared
one way, sqlite-utils' as simonw/llm uses it: `db.table(name).create(columns, pk=...,
not_null=..., defaults=...)`, `create_index(..., index_name=...)`, `add_column(...)`,
and full-text search with `enable_fts(columns, create_triggers=True)`. SQL is written
only for what sqlite-utils has no word for (a WITHOUT ROWID table, an index on an
expression, a trigger narrowed to one column), with the reason beside it. Each module
also names the tables a usable file must hold (`TABLES`).

A database opens as a plain `sqlite3.Connection`: importing sqlite-utils costs 120 ms or
more (it imports click, pluggy, dateutil, and numpy where installed), which a command that
only reads would pay on every start. It is imported when a migration is pending, to run
the steps; the queries of each database are SQL on the connection.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import logging
import os
import random
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from conductor_kernel.errors import UserFacingError
from record.clean_close import closed_cleanly

if TYPE_CHECKING:
    import sqlite_utils

MigrationFn = Callable[["sqlite_utils.Database"], None]
T = TypeVar("T")
log = logging.getLogger("conductor")

# How long a write waits in all while other processes hold the write lock...
WRITE_WAIT_S = 360.0
# ...in slices this long inside SQLite. Python runs a signal's handler only between C
# calls: with SQLite's whole busy timeout (30 s) in one call, a Ctrl-C during a wait on
# a locked database was not even seen until the call gave up.
BUSY_SLICE_MS = 250


# How long opening a database waits for another program's write lock to migrate it.
OPEN_WAIT_S = 30.0


class DatabaseError(UserFacingError):
    """A database file that is corrupt, foreign or locked; the message names it."""


def _applied(conn: sqlite3.Connection) -> set[str]:
    """The migrations recorded as applied (none in a new database)."""
    try:
        return {row[0] for row in conn.execute("select name from _migrations")}
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return set()
        raise


def begin_immediate(conn: sqlite3.Connection, *, wait_s: float) -> None:
    """BEGIN IMMEDIATE, waiting up to `wait_s` for other writers in BUSY_SLICE_MS slices
    (a signal is handled between them); then SQLite's busy error is raised."""
    deadline = time.monotonic() + wait_s
    with _busy_timeout(conn, BUSY_SLICE_MS):
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.01)


class Migrations:
    """An ordered registry of migrations, applied atomically one by one.

    Like sqlite-utils' transactional migrations: each step and the record of it run in
    one transaction, so a step that fails leaves the database exactly as it was (DDL
    included; SQLite's DDL is transactional). The transaction is `BEGIN IMMEDIATE` and
    the list of applied steps is read inside it, so two processes migrating the same
    file take turns (the busy timeout applies) and never apply a step twice.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._steps: list[MigrationFn] = []

    def __call__(self, fn: MigrationFn) -> MigrationFn:
        self._steps.append(fn)
        return fn

    def apply(self, conn: sqlite3.Connection) -> list[str]:
        """Apply the pending steps in order; the names of those applied here."""
        previous = conn.isolation_level
        # Transactions are ours alone: the driver must not open or commit any itself.
        conn.isolation_level = None
        applied: list[str] = []
        try:
            # Read first: a database that is up to date needs no write lock, so it opens
            # while another program holds that lock (`conductor runs list` waited 30 s
            # and failed); a pending step is checked again under the lock.
            done = _applied(conn)
            steps = [fn for fn in self._steps if fn.__name__ not in done]
            if steps:
                import sqlite_utils  # only here: see the module's docstring

                db = sqlite_utils.Database(conn)
                applied = [fn.__name__ for fn in steps if self._apply_one(db, fn)]
        finally:
            conn.isolation_level = previous
        return applied

    def _apply_one(self, db: sqlite_utils.Database, fn: MigrationFn) -> bool:
        conn = db.conn
        begin_immediate(conn, wait_s=OPEN_WAIT_S)
        try:
            conn.execute(
                "create table if not exists _migrations "
                "(name text primary key, applied_at text, database text)"
            )
            done = conn.execute("select 1 from _migrations where name = ?", (fn.__name__,))
            if done.fetchone():
                conn.execute("ROLLBACK")
                return False
            fn(db)
            conn.execute(
                "insert into _migrations (name, applied_at, database) values (?, ?, ?)",
                (fn.__name__, dt.datetime.now(dt.UTC).isoformat(), self.name),
            )
            conn.execute("COMMIT")
            return True
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


@contextlib.contextmanager
def creation_lock(path: Path) -> Iterator[None]:
    """Serialise opens of databases in one directory across processes.

    Opening checks the file, switches it to WAL and migrates it; two processes doing
    that to the same new file at once is what made `runs.db` fail. The lock is on the
    directory, so it leaves no file behind.
    """
    _ensure_folder(path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _ensure_folder(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseError(
            f"cannot create the folder {path.parent} ({exc.strerror or exc}). Point "
            "CONDUCTOR_HOME (or --home) at a writable folder."
        ) from exc


def _disk_full(path: Path) -> bool:
    """Too little space left beside the database for its WAL and index files."""
    try:
        return shutil.disk_usage(path.parent).free < 256 * 1024
    except OSError:
        return False


def _writable(path: Path) -> bool:
    """The database and its folder (WAL and lock files go beside it) can be written."""
    folder_ok = os.access(path.parent, os.W_OK | os.X_OK)
    return folder_ok and (not path.exists() or os.access(path, os.W_OK))


# Databases up to this size are checked page by page on an open after an unclean shutdown.
FULL_CHECK_MAX_BYTES = 64 * 1024 * 1024
# What every other open reads: the header and the schema's first page.
CHEAP_CHECK = "select 'ok' from sqlite_master limit 1"


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the database's tables."""
    return {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}


def open_database(
    path: Path | str, migrations: Migrations, *, expect_tables: set[str]
) -> sqlite3.Connection:
    """Open (creating) a WAL SQLite database and migrate it.

    A file that is not SQLite, is corrupt, or belongs to something else (tables of ours
    missing while others exist) raises `DatabaseError` naming it; nothing is overwritten.
    """
    path = Path(path)
    _ensure_folder(path)
    existed = path.exists() and path.stat().st_size > 0
    clean = closed_cleanly(path)  # before connecting: a connection of ours would count
    try:
        conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        if existed:
            # quick_check reads every page (57 ms for runs.db of 10k runs, ~2 s for a
            # 1M-note notebook): it runs only after an unclean shutdown, and then only on
            # files small enough. Otherwise the header and schema are read; damage deeper
            # surfaces as an error where the pages are used, which names the fix.
            thorough = not clean and path.stat().st_size <= FULL_CHECK_MAX_BYTES
            check = "PRAGMA quick_check" if thorough else CHEAP_CHECK
            try:
                ok = (conn.execute(check).fetchone() or ["ok"])[0]
            except sqlite3.DatabaseError as exc:
                if not thorough or isinstance(exc, sqlite3.OperationalError):
                    raise
                ok = str(exc)  # a page so damaged that the check itself stopped on it
            if ok != "ok":
                raise DatabaseError(
                    f"{path} is damaged (integrity check: {ok}). Move it aside and start a "
                    "new one, or repair it with `sqlite3 FILE .recover`."
                )
            tables = table_names(conn)
            if tables and "_migrations" not in tables:
                raise DatabaseError(
                    f"{path} is an SQLite database of something else (tables: "
                    f"{', '.join(sorted(tables)[:5])}). Point to another file; this one was not changed."
                )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        from record.writable import why_unwritable

        # The folder's true trouble first: a pseudo file system reports no free space
        # but is not full, and a read-only one stops root too.
        why = why_unwritable(path.parent)
        if why is not None and not why.startswith("the disk holding"):
            raise DatabaseError(
                f"{path}: cannot write there ({why}: {exc}). Point CONDUCTOR_HOME (or "
                "--home) at a writable folder; nothing was changed."
            ) from exc
        if _disk_full(path):
            raise DatabaseError(
                f"{path}: the disk holding it is full ({exc}). Free some space and run "
                "again; the database was not changed."
            ) from exc
        if not _writable(path):
            raise DatabaseError(
                f"{path}: cannot write there (a read-only file system or no permission: "
                f"{exc}). Point CONDUCTOR_HOME (or --home) at a writable folder; nothing "
                "was changed."
            ) from exc
        raise DatabaseError(
            f"{path} is not a usable SQLite database ({exc}). Move it aside or point to "
            "another file; it was not changed."
        ) from exc
    try:
        migrations.apply(conn)
    except sqlite3.OperationalError as exc:
        if _disk_full(path):
            raise DatabaseError(
                f"{path}: the disk holding it is full ({exc}). Free some space and run "
                "again; the database was left as it was."
            ) from exc
        raise DatabaseError(
            f"{path}: could not migrate ({exc}); the database was left as it was. "
            "If another program holds it locked, close it and run again."
        ) from exc
    missing = expect_tables - table_names(conn)
    if missing:
        raise DatabaseError(f"{path}: tables {sorted(missing)} are missing after migration.")
    return conn


def is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds the lock."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


@contextlib.contextmanager
def read_errors(path: Path, *, repair: str) -> Iterator[None]:
    """A read that fails on the file itself, as one `DatabaseError` saying what to do.

    `repair` is how this database is mended when damaged (each database differs). An
    error of the program's own (a closed connection, a wrong parameter) passes as it is.
    """
    try:
        yield
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise DatabaseError(
                f"{path} is locked by another program ({exc}). Close that program, or wait "
                "for it to finish, and try again."
            ) from exc
        raise DatabaseError(f"{path} could not be read ({exc}). {repair}") from exc
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.ProgrammingError):
            raise
        raise DatabaseError(f"{path} is damaged ({exc}). {repair}") from exc


def write_transaction(
    conn: sqlite3.Connection,
    lock: threading.RLock,
    fn: Callable[[sqlite3.Connection], T],
    *,
    path: Path,
    busy_error: type[DatabaseError] = DatabaseError,
    give_up: Callable[[], bool] | None = None,
    hint: str = "close it and run again",
    wait_s: float | None = None,
) -> T:
    """Run `fn(conn)` in one BEGIN IMMEDIATE transaction, retrying while others write.

    IMMEDIATE takes the write lock up front: a deferred transaction that reads first
    cannot upgrade to a write under WAL, and then SQLite's busy timeout never applies.
    `conn` must be in autocommit mode (`isolation_level = None`). Anything `fn` raises
    rolls the transaction back; a busy error inside it is retried like a busy BEGIN.
    The wait is cut in slices (a signal is handled between them); it ends with
    `busy_error` after `wait_s` (default WRITE_WAIT_S; 0: one slice), or as soon as
    `give_up()` says so.
    """
    wait_s = WRITE_WAIT_S if wait_s is None else wait_s
    deadline = time.monotonic() + wait_s
    delay = 0.01
    while True:
        with lock, _busy_timeout(conn, BUSY_SLICE_MS):
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                log.debug("%s busy: %s", path.name, exc)
            else:
                try:
                    result = fn(conn)
                    conn.execute("COMMIT")
                    return result
                except BaseException as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    if not (isinstance(exc, sqlite3.OperationalError) and is_busy(exc)):
                        raise
                    log.debug("%s busy inside a write: %s", path.name, exc)
        stopped = give_up is not None and give_up()
        if stopped or time.monotonic() >= deadline:
            waited = (
                "not waiting: the run was stopped"
                if stopped
                else f"{wait_s:g} s"
                if wait_s > 0
                else "tried once, not waiting"
            )
            raise busy_error(
                f"{path} is locked by another program, which may hold it open in a "
                f"transaction ({waited}); {hint}."
            )
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 2, 0.25)


@contextlib.contextmanager
def _busy_timeout(conn: sqlite3.Connection, milliseconds: int) -> Iterator[None]:
    """SQLite's busy timeout set to `milliseconds` while inside (the connection's own
    value, which its reads wait by, comes back on the way out)."""
    row = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute(f"PRAGMA busy_timeout={int(milliseconds)}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA busy_timeout={int(row[0]) if row else 30000}")
