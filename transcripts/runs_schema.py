"""The shape of `runs.db`: its numbered migrations and the typed rows it holds.

`transcripts.index.RunIndex` owns every query on the file; this module only says what
the file is, so the index module stays about reading and writing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from record.migrations import Migrations

if TYPE_CHECKING:
    import sqlite_utils  # imported to migrate only (record/migrations.py)

migrations = Migrations("runs")

# The tables open_database checks a migrated runs.db for, as the notebook's TABLES.
TABLES = {"runs", "audits"}


def runs_table(db: sqlite_utils.Database) -> sqlite_utils.db.Table:
    """The `runs` table (`db["runs"]` is typed `Table | View`; `db.table` is a table)."""
    return db.table("runs")


@migrations
def m001_runs(db: sqlite_utils.Database) -> None:
    runs_table(db).create(
        {
            "run_id": str,
            "path": str,
            "started_at": float,
            "question": str,
            "task": str,
            "target": str,
            "model": str,
            "status": str,
            "final_answer": str,
            "rounds": int,
            "input_tokens": int,
            "output_tokens": int,
            "cost_usd": float,
            "duration_s": float,
            "expert_calls": int,
            "sandbox_runs": int,
            "source": str,
            "tags": str,
        },
        pk="run_id",
    )
    runs_table(db).create_index(["started_at"])
    runs_table(db).create_index(["task"])
    runs_table(db).enable_fts(["question", "final_answer"], create_triggers=True, tokenize="porter")


@migrations
def m002_owner_and_learning(db: sqlite_utils.Database) -> None:
    """Who is running a run (to repair it if that process dies) and what learning cost."""
    for column, kind in (
        ("host", str),
        ("pid", int),
        ("pid_started", str),
        ("learning_input_tokens", int),
        ("learning_output_tokens", int),
        ("learning_cost_usd", float),
    ):
        runs_table(db).add_column(column, kind)
    runs_table(db).create_index(["status"])


@migrations
def m003_method(db: sqlite_utils.Database) -> None:
    """How each run asked its model (conductor/methods). Runs indexed before were
    meta-prompting (`conductor runs reindex` tells those without Python apart)."""
    runs_table(db).add_column("method", str, not_null_default="meta")
    runs_table(db).create_index(["method"])


@migrations
def m004_correctness_and_findings(db: sqlite_utils.Database) -> None:
    """Whether each run's answer is right (its `RunScored`: 1, 0, or NULL when not
    scored), by which scorer and why, and the audit's finding badges, so listings
    filter and sort on them. `conductor runs reindex` fills them for older runs."""
    for column, kind in (
        ("correct", int),
        ("scorer", str),
        ("score_detail", str),
        ("findings", str),
    ):
        runs_table(db).add_column(column, kind)
    runs_table(db).create_index(["correct"])


@migrations
def m005_audits(db: sqlite_utils.Database) -> None:
    """Each finished run's whole audit (findings with their messages, and the verdict
    known when it was made) as JSON, so `conductor runs audit` of every run reads no
    transcript. A table of its own: listings, which print whole rows, stay as they were.
    Runs indexed before, or whose transcript could not be read whole, have none here and
    are audited from their transcript."""
    db.table("audits").create({"run_id": str, "report": str}, pk="run_id", not_null={"report"})


class RunRecord(TypedDict):
    """One row of `runs`: a run as indexed (the transcript at `path` is its record)."""

    run_id: str
    path: str  # "" when the run was recorded without a transcript file
    started_at: float
    question: str
    task: str
    target: str | None
    model: str
    method: str  # meta, meta-no-python, standard, ... (conductor/methods)
    status: str  # running, answered, ... (incomplete or interrupted when cut short)
    final_answer: str | None
    source: str  # live, published, ...
    tags: str  # JSON object
    # What the run took: None until it has finished.
    rounds: int | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    duration_s: float | None
    expert_calls: int | None
    sandbox_runs: int | None
    # The process that ran it (live runs only), to repair the run if it died.
    host: str | None
    pid: int | None
    pid_started: str | None
    # What learning from it cost: None until the notebook learned from it.
    learning_input_tokens: int | None
    learning_output_tokens: int | None
    learning_cost_usd: float | None
    # Whether the answer is right: 1, 0, or None when the run was not scored (m004).
    correct: int | None
    scorer: str | None
    score_detail: str | None
    # The audit's finding badges, space-separated with a space at each end (" fake ctx ").
    findings: str | None
    rowid: NotRequired[int]  # search results carry it too (sqlite-utils selects it)


def as_record(row: dict[str, Any]) -> RunRecord:
    # The schema above (m001-m004) gives every row these columns; sqlite-utils can only
    # type a row as a dict.
    return cast(RunRecord, row)


# The columns a listing can be filtered on, and whose values `distinct_values` lists.
# Their names go into SQL as written, so no other name may.
FILTER_COLUMNS = ("task", "status", "model", "method")


# How `RunFilter.correctness` narrows, by label (record.correctness.LABELS).
CORRECTNESS_SQL = {
    "correct": "correct = 1",
    "wrong": "correct = 0",
    "unscored": "correct is null",
}
ANY_FINDING = "any"

# How a listing may be ordered: name -> ORDER BY (an allowlist; no other text goes in).
SORTS = {
    "started": "started_at desc",
    "status": "status, started_at desc",
    "correctness": "coalesce(correct, 2), started_at desc",  # wrong first, unscored last
    "finding": "coalesce(findings, '') = '', findings, started_at desc",
    "task": "task, started_at desc",
    "model": "model, started_at desc",
}


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing holds; a field left None does not narrow it."""

    task: str | None = None
    status: str | None = None
    model: str | None = None
    method: str | None = None
    since: float | None = None  # started at or after this time (seconds since the epoch)
    correctness: str | None = None  # correct | wrong | unscored
    finding: str | None = None  # a finding's badge (fake, ctx, ...); "any": flagged at all

    def sql(self) -> tuple[str | None, dict[str, object]]:
        """A WHERE clause with named parameters (None when nothing narrows), and them."""
        where, params = [], {}
        for column in FILTER_COLUMNS:
            value = getattr(self, column)
            if value:
                where.append(f"[{column}] = :{column}")
                params[column] = value
        if self.correctness:
            where.append(CORRECTNESS_SQL[self.correctness])
        if self.finding == ANY_FINDING:
            where.append("trim(coalesce(findings, '')) != ''")
        elif self.finding:
            where.append("findings like :finding")
            params["finding"] = f"% {self.finding} %"
        if self.since is not None:
            where.append("started_at >= :since")
            params["since"] = self.since
        return (" and ".join(where) or None), params


def storable(value: Any) -> Any:
    """`value` as SQLite takes it: a lone surrogate (no UTF-8 form) becomes U+FFFD. The
    transcript keeps the exact text; runs.db is only its index."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")
