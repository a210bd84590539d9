"""The rows of the Runs screen: its columns, a run's cells (one line each, shown
escaped), its findings badges, and the query that reads runs.db a page at a time."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text

from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.display import visible
from record.audit import audit_outline
from record.correctness import CORRECT, MARKS, UNSCORED, WRONG, label_of
from record.fold import outline_file
from record.fts import quote_words
from transcripts.index import RunFilter, RunIndex, RunRecord
from tui.widgets.paged_table import Column

QUESTION_WIDTH = 36
# One line a run: what an auditor scans first (right? flagged?) on the left.
COLUMNS = [
    Column("correct", "ok", 2),
    Column("outcome", "outcome", 9),
    Column("findings", "findings", 14),
    Column("question", "question", QUESTION_WIDTH),
    Column("task", "task", 12),
    Column("model", "model", 10),
    Column("method", "method", 10),
    Column("when", "when", 11),
    Column("rounds", "rnd", 3),
    Column("cost", "cost", 7),
]


def one_line(value: object) -> Text:
    """A cell's text on one line, shown escaped; the column cuts it (`runs show` and
    the run's screen have it whole)."""
    return Text(visible(" ".join(str(value or "").split())), no_wrap=True, overflow="ellipsis")


MARK_STYLES = {CORRECT: "green", WRONG: "bold red", UNSCORED: "dim"}


def correctness_mark(row: RunRecord) -> Text:
    """✓ correct, ✗ wrong, · not scored: the run's recorded verdict."""
    label = label_of(row.get("correct"))
    return Text(MARKS[label], style=MARK_STYLES[label])


def indexed_badges(row: RunRecord) -> str | None:
    """The findings runs.db holds for a run ("-" for none); None if it holds none yet."""
    findings = row.get("findings")
    if findings is None:
        return None
    return findings.strip() or "-"


_BADGES: dict[tuple[str, float], str] = {}  # (path, mtime) -> badges, across screens


def badges_for(path: str) -> str:
    """The findings badges of one transcript (cached while the file is unchanged)."""
    file = Path(path)
    if not path or not file.exists():
        return "no transcript"
    key = (path, file.stat().st_mtime)
    if key not in _BADGES:
        report = audit_outline(outline_file(file))
        _BADGES[key] = " ".join(report.badges) or "-"
    return _BADGES[key]


def run_cells(row: RunRecord) -> dict[str, Text | str]:
    """A run's cells, each on one line and shown escaped; the run's own screen has every
    field whole."""
    when = dt.datetime.fromtimestamp(row["started_at"] or 0).strftime("%m-%d %H:%M")
    return {
        "correct": correctness_mark(row),
        "outcome": one_line(row["status"]),
        "findings": one_line(indexed_badges(row) or ("…" if row["path"] else "no transcript")),
        "question": one_line(row["question"]),
        "task": one_line(row["task"]),
        "model": one_line(row["model"]),
        "method": one_line(row.get("method") or "meta"),
        "when": when,
        "rounds": str(row["rounds"] or 0),
        "cost": f"${row['cost_usd'] or 0:.3f}",
    }


@dataclass
class RunQuery:
    """The runs shown, read a page at a time: those matching every word of `search`
    (best first), else the latest (or in the order `sort` names); both narrowed by
    `filters`. Counting them raises `UserFacingError` if runs.db is locked or damaged;
    a page read that fails later goes to `failed`, and its rows are left out."""

    index: RunIndex
    search: str
    filters: RunFilter
    sort: str = "started"
    failed: Callable[[UserFacingError], None] = lambda exc: None
    read: Callable[[list[RunRecord]], None] = lambda rows: None  # each page, once read

    def count(self) -> int:
        query = quote_words(self.search)
        if query:
            return self.index.count_search(query, filters=self.filters)
        return self.index.count_runs(self.filters)

    def rows(self, offset: int, limit: int) -> list[RunRecord]:
        query = quote_words(self.search)
        try:
            if query:
                rows = self.index.search(query, filters=self.filters, limit=limit, offset=offset)
            else:
                rows = self.index.list_runs(
                    self.filters, limit=limit, offset=offset, sort=self.sort
                )
        except UserFacingError as exc:
            self.failed(exc)
            return []
        self.read(rows)
        return rows


def parse_since(text: str) -> float | None:
    """`YYYY-MM-DD` (local midnight) to a timestamp; empty means no bound."""
    if not text.strip():
        return None
    day = dt.date.fromisoformat(text.strip())
    return dt.datetime.combine(day, dt.time()).timestamp()
