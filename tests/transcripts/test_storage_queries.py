"""The storage modules' queries (transcripts.index for runs.db, lessons.storage.queries for
notebook.db): what they return, and one error policy when the file is locked or damaged.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conductor.cli import main
from conductor_kernel.events import RunFinished, RunStarted
from lessons.storage import queries
from lessons.storage.store import Notebook, default_path
from record import migrations
from record.fts import SearchSyntaxError, quote_words
from record.migrations import DatabaseError
from transcripts.index import RunFilter, RunIndex

# -- runs.db ----------------------------------------------------------------------------


@pytest.fixture
def index(tmp_path: Path) -> RunIndex:
    index = RunIndex(tmp_path / "runs.db")
    runs = [
        ("r1", "ducks lay eggs", "GameOf24", "m-a", "answered", 100.0),
        ("r2", "ducks swim", "word_sorting", "m-b", "failed", 200.0),
        ("r3", "sort these words", "word_sorting", "m-a", "answered", 300.0),
    ]
    for run_id, question, task, model, status, ts in runs:
        index.handle(RunStarted(run_id=run_id, question=question, task=task, model=model, ts=ts))
        index.handle(RunFinished(run_id=run_id, status=status, final_answer="x", rounds=1))
    return index


def _ids(rows: list) -> list[str]:
    return [r["run_id"] for r in rows]


def test_runs_are_listed_newest_first_and_narrowed_by_every_filter(index: RunIndex) -> None:
    assert _ids(index.list_runs()) == ["r3", "r2", "r1"]
    assert _ids(index.list_runs(limit=None, oldest_first=True)) == ["r1", "r2", "r3"]
    assert _ids(index.list_runs(RunFilter(task="word_sorting"))) == ["r3", "r2"]
    assert _ids(index.list_runs(RunFilter(model="m-a", status="answered"))) == ["r3", "r1"]
    assert _ids(index.list_runs(RunFilter(since=150.0))) == ["r3", "r2"]
    assert _ids(index.list(task="GameOf24")) == ["r1"]  # the CLI's older spelling


def test_search_is_narrowed_by_the_filters_too(index: RunIndex) -> None:
    assert sorted(_ids(index.search(quote_words("ducks")))) == ["r1", "r2"]
    # A text filter beside the search: each value is a named parameter of its own.
    assert _ids(index.search(quote_words("ducks"), filters=RunFilter(status="failed"))) == ["r2"]
    assert _ids(index.search(quote_words("ducks"), filters=RunFilter(since=150.0))) == ["r2"]


def test_a_query_sqlite_refuses_is_a_search_syntax_error(index: RunIndex) -> None:
    with pytest.raises(SearchSyntaxError) as caught:
        index.search("(ducks")
    assert caught.value.query == "(ducks" and "syntax" in caught.value.reason


def test_distinct_values_are_only_for_the_filter_columns(index: RunIndex) -> None:
    assert index.distinct_values("task") == ["GameOf24", "word_sorting"]
    assert index.distinct_values("status") == ["answered", "failed"]
    with pytest.raises(ValueError, match="not 'question'"):
        index.distinct_values("question")
    with pytest.raises(ValueError):
        index.distinct_values("task from runs; drop table runs --")


class LockedConnection:
    """A connection whose every statement finds the file locked, as SQLite says it once
    its busy timeout has run out (WAL readers are rarely blocked, so it is planted)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, *args: object) -> sqlite3.Cursor:
        raise sqlite3.OperationalError("database is locked")

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_a_locked_runs_db_raises_one_error_that_says_so(index: RunIndex) -> None:
    real = index.conn
    index.conn = LockedConnection(real)
    for read in (index.list_runs, lambda: index.search('"ducks"'), lambda: index.get("r1")):
        with pytest.raises(DatabaseError, match="locked by another program"):
            read()
    with pytest.raises(DatabaseError, match="locked by another program"):
        index.distinct_values("task")
    index.conn = real
    assert _ids(index.list_runs()) == ["r3", "r2", "r1"]  # and reads again once free


def _damage_table(path: Path, table: str) -> None:
    """Overwrite the first page of `table`'s rows with noise (the schema stays readable)."""
    conn = sqlite3.connect(path)
    (root,) = conn.execute("select rootpage from sqlite_master where name = ?", (table,)).fetchone()
    (size,) = conn.execute("pragma page_size").fetchone()
    conn.execute("pragma wal_checkpoint(truncate)")
    conn.close()
    with path.open("r+b") as fh:
        fh.seek((root - 1) * size)
        fh.write(b"\xff" * size)


def test_a_damaged_runs_db_raises_one_error_that_names_the_fix(
    tmp_path: Path, index: RunIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As for a big file: opening reads only the schema; damage shows where pages are used.
    monkeypatch.setattr(migrations, "FULL_CHECK_MAX_BYTES", 0)
    path = index.path
    index.close()
    _damage_table(path, "runs")
    damaged = RunIndex(path)
    with pytest.raises(DatabaseError) as caught:
        damaged.list_runs()
    assert str(path) in str(caught.value) and "conductor runs reindex" in str(caught.value)


# -- notebook.db ------------------------------------------------------------------------


def _seed(book: Notebook) -> None:
    def write(conn: sqlite3.Connection) -> None:
        for type_id, name, members in (("tt-a", "Arithmetic", 5), ("tt-b", "Bird facts", 9)):
            conn.execute(
                "insert into task_types (id, name, members, created_at, updated_at)"
                " values (?, ?, ?, 0, 0)",
                (type_id, name, members),
            )
        notes = [
            ("n1", "tt-a", "insight", "add carefully", 0.5, 0, "add carefully"),
            ("n2", "tt-a", "pitfall", "carry the one", 0.9, 0, "carry one"),
            ("n3", None, "insight", "ducks lay eggs", 0.7, 0, "ducks lay eggs"),
            ("n4", "tt-b", "insight", "old news", 0.8, 1, "old news"),
        ]
        for seq, (note_id, type_id, kind, key, confidence, retired, terms) in enumerate(notes):
            conn.execute(
                "insert into notes (seq, id, type_id, kind, key, confidence, retired, terms,"
                " content_hash, near_hash, created_at, updated_at)"
                " values (?, ?, ?, ?, ?, ?, ?, ?, ?, '', 0, 0)",
                (seq + 1, note_id, type_id, kind, key, confidence, retired, terms, note_id),
            )
        conn.execute(
            "insert into note_history (note_id, at, action, run_id) values ('n1', 1, 'written', 'r1')"
        )
        conn.execute(
            "insert into note_history (note_id, at, action, run_id) values ('n1', 2, 'used', null)"
        )
        for rank, run_id in ((2, "r1"), (1, "r2")):
            conn.execute(
                "insert into recalls (run_id, note_id, rank, score, relevance, outcome, at)"
                " values (?, 'n1', ?, 0.5, 0.5, 'correct', 0)",
                (run_id, rank),
            )

    book.write(write)


@pytest.fixture
def book() -> Notebook:
    book = Notebook(default_path())
    _seed(book)
    return book


def test_listings_of_types_and_notes(book: Notebook) -> None:
    assert [t["id"] for t in queries.task_types(book)] == ["tt-b", "tt-a"]  # largest first
    assert [t["name"] for t in queries.task_types(book, order="name", limit=1)] == ["Arithmetic"]
    assert [n["id"] for n in queries.recent_notes(book)] == ["n3", "n2", "n1"]
    assert [n["id"] for n in queries.recent_notes(book, retired=True)] == ["n4"]
    assert [n["id"] for n in queries.recent_notes(book, type_id="tt-a", kind="pitfall")] == ["n2"]
    assert queries.note_counts_by_type(book) == {"tt-a": 2, None: 1}


def test_browsing_notes_by_type_and_words(book: Notebook) -> None:
    assert [n["id"] for n in queries.browse_notes(book)] == ["n2", "n3", "n1"]  # most trusted
    assert [n["id"] for n in queries.browse_notes(book, type_id="tt-a")] == ["n2", "n1"]
    assert [n["id"] for n in queries.browse_notes(book, untyped=True)] == ["n3"]
    assert [n["id"] for n in queries.browse_notes(book, "ducks eggs")] == ["n3"]
    assert queries.browse_notes(book, "ducks", type_id="tt-a") == []
    assert queries.browse_notes(book, "old") == []  # retired notes are not browsed
    with pytest.raises(ValueError):
        queries.browse_notes(book, type_id="tt-a", untyped=True)


def test_history_and_recalls_of_a_note(book: Notebook) -> None:
    history = queries.note_history(book, "n1")
    assert [(h.action, h.run_id) for h in history] == [("written", "r1"), ("used", None)]
    recalls = queries.note_recalls(book, "n1")
    assert [(r.run_id, r.rank, r.outcome) for r in recalls] == [
        ("r2", 1, "correct"),
        ("r1", 2, "correct"),
    ]
    assert queries.type_history(book, "tt-a") == []
    note = queries.lookup_note(book, "n2")
    assert note is not None and note["key"] == "carry the one"
    assert queries.lookup_type(book, "Bird facts") is not None


def test_a_locked_notebook_raises_one_error_that_says_so(book: Notebook) -> None:
    book.conn = LockedConnection(book.conn)
    for read in (queries.recent_notes, queries.task_types, lambda b: queries.browse_notes(b, "x")):
        with pytest.raises(DatabaseError, match="locked by another program"):
            read(book)


def test_a_damaged_notebook_is_reported_by_the_cli_with_the_fix(
    book: Notebook, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(migrations, "FULL_CHECK_MAX_BYTES", 0)
    path = book.path
    book.close()
    _damage_table(path, "notes")
    with Notebook(path) as damaged, pytest.raises(DatabaseError) as caught:
        queries.recent_notes(damaged)
    assert str(path) in str(caught.value) and ".recover" in str(caught.value)
    assert main(["notebook", "list"]) == 2
    err = capsys.readouterr().err
    assert "is damaged" in err and ".recover" in err and "Traceback" not in err
