"""`runs.db`: an index of every run's transcript, with full-text search.

The transcripts are the record; the index can always be rebuilt from them
(`RunIndex.rebuild`). It is updated live as a sink of the event stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from conductor.config import home_dir
from conductor.events import Event, FinalAnswer, RunFinished, RunStarted
from conductor.migrations import Migrations, open_database
from transcripts.reader import read_transcript

migrations = Migrations("runs")


@migrations
def m001_runs(db: sqlite_utils.Database) -> None:
    db["runs"].create(
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
    db["runs"].create_index(["started_at"])
    db["runs"].create_index(["task"])
    db["runs"].enable_fts(["question", "final_answer"], create_triggers=True, tokenize="porter")


def default_path() -> Path:
    return home_dir() / "runs.db"


@dataclass
class RunRow:
    run_id: str
    path: str
    question: str
    status: str | None
    final_answer: str | None
    data: dict[str, Any]


class RunIndex:
    """The runs table; also an `EventSink` that records runs as they happen."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else default_path()
        self.db = open_database(self.path, migrations, expect_tables={"runs"})
        self._paths: dict[str, str] = {}

    def attach(self, run_id: str, transcript_path: Path | str) -> None:
        self._paths[run_id] = str(transcript_path)

    def handle(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.record_start(event, self._paths.get(event.run_id, ""))
        elif isinstance(event, FinalAnswer):
            self.db["runs"].update(event.run_id, {"final_answer": event.answer})
        elif isinstance(event, RunFinished):
            self.record_finish(event)

    def record_start(self, event: RunStarted, path: str, source: str = "live") -> None:
        self.db["runs"].upsert(
            {
                "run_id": event.run_id,
                "path": path,
                "started_at": event.ts,
                "question": event.question,
                "task": event.task,
                "target": event.target,
                "model": event.model,
                "status": "running",
                "source": source,
                "tags": json.dumps(event.tags),
            },
            pk="run_id",
        )

    def record_finish(self, event: RunFinished) -> None:
        self.db["runs"].update(
            event.run_id,
            {
                "status": event.status,
                "final_answer": event.final_answer,
                "rounds": event.rounds,
                "input_tokens": event.usage.input_tokens,
                "output_tokens": event.usage.output_tokens,
                "cost_usd": event.usage.cost_usd,
                "duration_s": event.duration_s,
                "expert_calls": event.expert_calls,
                "sandbox_runs": event.sandbox_runs,
            },
        )

    def add_transcript(self, path: Path | str, source: str | None = None) -> str | None:
        """Index one transcript file; returns its run id (None if it has no start).

        The source (live, published...) is the run's own `tags["source"]` unless given.
        """
        transcript = read_transcript(path)
        started = transcript.started
        if started is None:
            return None
        source = source or str(started.tags.get("source", "live"))
        self.record_start(started, str(path), source=source)
        if transcript.finished is not None:
            self.record_finish(transcript.finished)
        else:
            self.db["runs"].update(started.run_id, {"status": "incomplete"})
        return started.run_id

    def rebuild(self, runs_dir: Path) -> int:
        return sum(1 for p in sorted(runs_dir.glob("*.jsonl")) if self.add_transcript(p))

    def get(self, run_id: str) -> dict[str, Any] | None:
        rows = list(
            self.db["runs"].rows_where(
                "run_id = ? or run_id like ?", [run_id, run_id + "%"], limit=2
            )
        )
        return rows[0] if len(rows) == 1 else None

    def list(
        self, *, limit: int = 50, task: str | None = None, status: str | None = None
    ) -> list[dict[str, Any]]:
        where, params = [], []
        if task:
            where.append("task = ?")
            params.append(task)
        if status:
            where.append("status = ?")
            params.append(status)
        return list(
            self.db["runs"].rows_where(
                " and ".join(where) or None, params, order_by="started_at desc", limit=limit
            )
        )

    def search(self, query: str, *, limit: int = 50) -> list[dict[str, Any]]:
        return list(self.db["runs"].search(query, limit=limit))
