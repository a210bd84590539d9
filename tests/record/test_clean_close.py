"""Opening runs.db or notebook.db reads every page (`PRAGMA quick_check`) only after an
unclean shutdown: a writer killed with the file open leaves its WAL behind, and the next
open checks; a file closed cleanly, or held open by a live process, opens on its header."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from hypothesis import given
from hypothesis import strategies as st

from lessons.storage.store import Notebook
from record.clean_close import closed_cleanly, locked_files
from record.migrations import DatabaseError, Migrations, open_database
from transcripts.index import RunIndex

OPENERS: dict[str, Callable[[Path], object]] = {
    "runs.db": RunIndex,
    "notebook.db": Notebook,
}

# A plain SQLite writer in WAL mode, as ours are, that dies without closing.
KILLED_WRITER = """
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("pragma journal_mode=wal")
conn.execute("create table if not exists crash_mark (n integer)")
conn.execute("insert into crash_mark values (1)")
conn.commit()
os.kill(os.getpid(), signal.SIGKILL)
"""

# The same writer, alive: it holds the file open until its stdin closes.
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("pragma journal_mode=wal")
conn.execute("create table if not exists held (n integer)")
conn.execute("insert into held values (1)")
conn.commit()
print("ready", flush=True)
sys.stdin.read()
conn.close()
"""


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every page-by-page check any new connection runs, as SQLite traces it."""
    seen: list[str] = []
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real(*args, **kwargs)
        conn.set_trace_callback(lambda sql: seen.append(sql) if "check" in sql.lower() else None)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    return seen


def _open_and_close(opener: Callable[[Path], object], path: Path) -> None:
    opened = opener(path)
    opened.close()  # type: ignore[attr-defined]


def _kill_a_writer_of(path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path)], timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert Path(f"{path}-wal").stat().st_size > 0  # what a crash leaves


@pytest.mark.parametrize("name", OPENERS)
def test_a_file_closed_cleanly_opens_without_reading_every_page(
    name: str, tmp_path: Path, checks: list[str]
) -> None:
    path = tmp_path / name
    _open_and_close(OPENERS[name], path)
    assert not Path(f"{path}-wal").exists()
    checks.clear()
    _open_and_close(OPENERS[name], path)
    assert not [sql for sql in checks if "quick_check" in sql.lower()], checks


@pytest.mark.parametrize("name", OPENERS)
def test_the_open_after_a_writer_was_killed_reads_every_page(
    name: str, tmp_path: Path, checks: list[str]
) -> None:
    path = tmp_path / name
    _open_and_close(OPENERS[name], path)
    _kill_a_writer_of(path)
    assert not closed_cleanly(path)
    checks.clear()
    _open_and_close(OPENERS[name], path)
    assert [sql for sql in checks if "quick_check" in sql.lower()], checks
    assert closed_cleanly(path)  # this close was clean: the next open is cheap again


@pytest.mark.parametrize("name", OPENERS)
def test_a_file_a_live_process_holds_open_is_not_taken_for_a_crash(
    name: str, tmp_path: Path, checks: list[str]
) -> None:
    path = tmp_path / name
    _open_and_close(OPENERS[name], path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        assert Path(f"{path}-wal").stat().st_size > 0  # as after a crash, but its owner lives
        checks.clear()
        _open_and_close(OPENERS[name], path)
        assert not [sql for sql in checks if "quick_check" in sql.lower()], checks
    finally:
        holder.communicate("", timeout=60)


def _two_tables() -> Migrations:
    steps = Migrations("test")

    @steps
    def m001_tables(db: sqlite_utils.Database) -> None:
        db.table("kept").insert_all(({"id": n, "text": "x" * 200} for n in range(100)), pk="id")
        db.table("touched").create({"id": int}, pk="id")

    return steps


def _damage_the_root_of(path: Path, table: str) -> None:
    conn = sqlite3.connect(path)
    (root,) = conn.execute("select rootpage from sqlite_master where name = ?", (table,)).fetchone()
    (size,) = conn.execute("pragma page_size").fetchone()
    conn.close()
    with path.open("r+b") as fh:
        fh.seek((root - 1) * size)
        fh.write(b"\xff" * size)


def test_damage_is_found_on_the_open_after_a_crash_and_named_with_the_fix(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    open_database(path, _two_tables(), expect_tables={"kept"}).close()
    _damage_the_root_of(path, "kept")  # a page the crashing writer never touches
    _kill_a_writer_of(path)
    before = path.read_bytes()
    with pytest.raises(DatabaseError) as caught:
        open_database(path, _two_tables(), expect_tables={"kept"})
    assert str(path) in str(caught.value) and "is damaged" in str(caught.value)
    assert ".recover" in str(caught.value)
    assert path.read_bytes() == before  # refused, not changed


def test_a_hot_rollback_journal_counts_as_an_unclean_shutdown(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    path.write_bytes(b"")
    assert closed_cleanly(path)
    Path(f"{path}-journal").write_bytes(b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7")
    assert not closed_cleanly(path)


# Lines that name no file: a listing's blanks and whatever another kernel might add.
NOISE = [
    "",
    "   ",
    "garbage",
    "1: POSIX ADVISORY READ 12",
    "2: FLOCK ADVISORY WRITE 9 zz:00:x 0 EOF",
]
_LOCK = st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(1, 2**40), st.booleans())


@given(st.lists(_LOCK, max_size=12), st.lists(st.sampled_from(NOISE), max_size=4))
def test_every_locked_file_is_read_from_a_proc_locks_listing(
    locks: list[tuple[int, int, int, bool]], noise: list[str]
) -> None:
    lines = [
        f"{n}: {'-> ' if waiter else ''}POSIX  ADVISORY  READ {1000 + n} "
        f"{major:02x}:{minor:02x}:{inode} 128 128"
        for n, (major, minor, inode, waiter) in enumerate(locks, start=1)
    ]
    table = "\n".join(lines + noise)
    assert locked_files(table) == {(major, minor, inode) for major, minor, inode, _ in locks}
