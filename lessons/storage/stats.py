"""The notebook's figures in one dict: for `conductor notebook stats` and batch reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lessons.storage.store import REPAIR_HINT, Notebook
from record.migrations import read_errors


def collect(book: Notebook) -> dict[str, Any]:
    """The figures; a locked or damaged file raises `DatabaseError` saying what to do."""

    def one(sql: str) -> int:
        row = book.read_one(sql)
        return int(row[next(iter(row))]) if row else 0

    def grouped(sql: str) -> dict[str, int]:
        return {str(r["k"]): int(r["n"]) for r in book.read(sql)}

    with read_errors(book.path, repair=REPAIR_HINT):
        return {
            "path": str(book.path),
            "size_bytes": Path(book.path).stat().st_size if Path(book.path).exists() else 0,
            "notes": one("select count(*) from notes where retired = 0"),
            "retired": one("select count(*) from notes where retired = 1"),
            "task_types": one("select count(*) from task_types where retired = 0"),
            "runs_learned": one("select count(*) from distilled_runs"),
            "recalls": one("select count(*) from recalls"),
            "by_kind": grouped(
                "select kind k, count(*) n from notes where retired = 0 group by kind"
            ),
            "by_verification": grouped(
                "select verification k, count(*) n from notes where retired = 0 group by verification"
            ),
            "recall_outcomes": grouped(
                "select outcome k, count(*) n from recalls group by outcome"
            ),
        }


def notebook_stats(path: str | Path | None = None) -> dict[str, Any]:
    """Figures of the notebook at `path` (the default notebook when None)."""
    book = Notebook(path)
    try:
        return collect(book)
    finally:
        book.close()
