"""Opening notebooks: new, ours, corrupt, foreign. Nothing that is not ours is changed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conductor.cli import main
from lessons.storage.store import Notebook
from record.migrations import DatabaseError
from transcripts.index import RunIndex


def _snapshot(path: Path) -> tuple[bytes, list[str]]:
    return path.read_bytes(), sorted(p.name for p in path.parent.iterdir())


def test_new_notebook_is_migrated_in_wal_mode(tmp_path: Path) -> None:
    book = Notebook(tmp_path / "nb" / "notebook.db")
    assert book.read_one("pragma journal_mode")["journal_mode"] == "wal"
    applied = book.read("select name, database from _migrations")
    assert [(r["name"], r["database"]) for r in applied] == [
        ("m001_notebook", "notebook"),
        ("m002_tools_and_problems", "notebook"),
        ("m003_note_vectors", "notebook"),
        ("m004_provenance", "notebook"),
    ]
    book.close()
    again = Notebook(tmp_path / "nb" / "notebook.db")  # reopening applies nothing twice
    assert len(again.read("select * from _migrations")) == 4


def test_corrupt_file_is_refused_by_name_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notebook.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x13" * 4000)
    before = _snapshot(path)
    with pytest.raises(DatabaseError) as caught:
        Notebook(path)
    assert str(path) in str(caught.value)
    assert _snapshot(path) == before


def test_text_file_is_refused_by_name_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notebook.db"
    path.write_text("these are my notes, not a database\n" * 50)
    before = _snapshot(path)
    with pytest.raises(DatabaseError, match=r"notebook\.db"):
        Notebook(path)
    assert _snapshot(path) == before


def test_foreign_sqlite_database_is_refused_and_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "notebook.db"
    conn = sqlite3.connect(path)
    conn.execute("create table invoices (id integer primary key, total real)")
    conn.execute("insert into invoices (total) values (12.5)")
    conn.commit()
    conn.close()
    before = _snapshot(path)
    with pytest.raises(DatabaseError, match="something else"):
        Notebook(path)
    assert _snapshot(path) == before


def test_runs_database_passed_as_notebook_is_refused_and_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    RunIndex(path).conn.close()
    before = _snapshot(path)
    with pytest.raises(DatabaseError, match="not a notebook"):
        Notebook(path)
    assert _snapshot(path) == before
    tables = {r[0] for r in sqlite3.connect(path).execute("select name from sqlite_master")}
    assert "notes" not in tables


def test_cli_reports_a_corrupt_notebook_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "broken.db"
    path.write_bytes(b"\x00garbage" * 512)
    before = path.read_bytes()
    assert main(["notebook", "stats", "--notebook", str(path)]) == 2
    err = capsys.readouterr().err
    assert "broken.db" in err and "Traceback" not in err
    assert path.read_bytes() == before


def test_fts_index_follows_note_changes(tmp_path: Path) -> None:
    book = Notebook(tmp_path / "notebook.db")

    def add(conn: sqlite3.Connection) -> None:
        conn.execute(
            "insert into notes (id, kind, text, content_hash, near_hash, terms, created_at, "
            "updated_at) values ('n1', 'insight', 't', 'h', 'h', 'alpha beta', 0, 0)"
        )

    book.write(add)
    found = (
        "select n.id from notes_fts join notes n on n.seq = notes_fts.rowid where notes_fts match ?"
    )
    assert [r["id"] for r in book.read(found, ("alpha",))] == ["n1"]
    book.write(lambda c: c.execute("update notes set terms = 'gamma' where id = 'n1'"))
    assert book.read(found, ("alpha",)) == []
    assert [r["id"] for r in book.read(found, ("gamma",))] == ["n1"]
    # Counters change often; they must not touch the index (no trigger on them).
    book.write(lambda c: c.execute("update notes set uses = uses + 1 where id = 'n1'"))
    assert book.read_one("pragma integrity_check")["integrity_check"] == "ok"


def test_a_big_file_gets_the_cheap_check_and_is_still_refused_when_corrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import record.migrations

    # Every file counts as big: only its header and schema are read on open.
    monkeypatch.setattr(record.migrations, "FULL_CHECK_MAX_BYTES", 0)
    good = tmp_path / "good.db"
    Notebook(good).close()
    Notebook(good).close()  # a sound file opens without the page-by-page check
    path = tmp_path / "notebook.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\x13" * 4000)
    before = _snapshot(path)
    with pytest.raises(DatabaseError) as caught:
        Notebook(path)
    assert str(path) in str(caught.value)
    assert _snapshot(path) == before
