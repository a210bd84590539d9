"""runs.db keeps the schema it had: one made before a later step takes that step and has
a new runs.db's shape, and reopening a current one changes nothing in its schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils

from record.migrations import Migrations
from support import schema_shape
from transcripts.index import RunIndex
from transcripts.runs_schema import m001_runs


def _schema_text(path: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute("select type, name, sql from sqlite_master"))
    finally:
        conn.close()


def test_a_runs_db_made_before_the_second_step_takes_it_and_has_a_new_ones_shape(
    tmp_path: Path,
) -> None:
    first = Migrations("runs")
    first(m001_runs)
    old = tmp_path / "old" / "runs.db"
    old.parent.mkdir()
    first.apply(sqlite_utils.Database(old).conn)
    RunIndex(old).close()
    RunIndex(tmp_path / "runs.db").close()
    conn, fresh = sqlite3.connect(old), sqlite3.connect(tmp_path / "runs.db")
    try:
        names = [r[0] for r in conn.execute("select name from _migrations order by rowid")]
        assert names == [
            "m001_runs",
            "m002_owner_and_learning",
            "m003_method",
            "m004_correctness_and_findings",
            "m005_audits",
        ]
        assert schema_shape(conn) == schema_shape(fresh)
    finally:
        conn.close()
        fresh.close()


def test_reopening_a_runs_db_changes_nothing_in_its_schema(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    RunIndex(path).close()
    before = _schema_text(path)
    RunIndex(path).close()
    assert _schema_text(path) == before


def test_runs_indexed_before_methods_were_recorded_are_meta_prompting(tmp_path: Path) -> None:
    first = Migrations("runs")
    first(m001_runs)
    path = tmp_path / "runs.db"
    db = sqlite_utils.Database(path)
    first.apply(db.conn)
    db.table("runs").insert({"run_id": "old", "started_at": 1.0, "question": "q"})
    db.close()
    index = RunIndex(path)
    try:
        row = index.get("old")
        assert row is not None and row["method"] == "meta"
        assert [r["run_id"] for r in index.list(method="meta")] == ["old"]
        assert index.list(method="standard") == []
    finally:
        index.close()
