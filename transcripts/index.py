"""`runs.db`: an index of every run's transcript, with full-text search.

The transcripts are the record; the index can always be rebuilt from them
(`RunIndex.rebuild`, `conductor runs reindex`). It is updated live as a sink of the
event stream. Several processes write it at once (a batch, the TUI, a `conductor
solve`): opening is serialised by a directory lock, every write is one short
`BEGIN IMMEDIATE` transaction (so the busy timeout applies, and a busy database is
retried with backoff), and one connection is shared by a process's threads under a lock.

A run whose process died (kill -9, power loss) stays `running` here; the next process
that starts runs finds it (its pid is gone) and repairs it to `interrupted`, appending
the missing `run_finished` to its transcript (`repair_abandoned`).

This module owns every query on runs.db: the CLI and the TUI read through `RunIndex`
(`get`, `list_runs`, `search`, `distinct_values`) and write no SQL of their own. A read
that fails because the file is locked or damaged raises `DatabaseError`, whose message
says what to do; an invalid full-text query raises `SearchSyntaxError`.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime as dt
import json
import logging
import os
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from conductor_kernel.errors import UserFacingError
from record.fts import SearchSyntaxError
from record.home import home_dir
from record.id_prefix import encodable, prefix_condition
from record.migrations import (
    DatabaseError,
    creation_lock,
    is_busy,
    open_database,
    read_errors,
    write_transaction,
)
from record.processes import process_alive, process_started
from record.writer import DiskFull
from transcripts.runs_schema import (
    FILTER_COLUMNS,
    SORTS,
    TABLES,
    RunFilter,
    RunRecord,
    as_record,
    migrations,
    storable,
)

if TYPE_CHECKING:  # the write path's; a reader of runs.db starts without them
    from conductor_kernel.events import Event, RunFinished, RunStarted
    from conductor_kernel.interfaces import Usage
    from record.audit import AuditReport
    from record.correctness import Correctness
    from record.fold import RunOutline

log = logging.getLogger("conductor.index")
T = TypeVar("T")


def default_path() -> Path:
    return home_dir() / "runs.db"


# What to do with a runs.db that cannot be read: it is only an index of the transcripts.
REBUILD_HINT = (
    "`conductor runs reindex` rebuilds it from the transcripts (a damaged file is kept aside)."
)


# What to do when runs.db stayed locked and a run's entry could not be written.
BUSY_HINT = (
    "the run's transcript has it all, and `conductor runs reindex` (or the next run, for "
    "a run left marked running) brings runs.db up to date once the other program is done"
)

LOCKED_OUT_HINT = "it stayed locked through a whole wait a moment ago; " + BUSY_HINT


class RunsLocked(DatabaseError):
    """runs.db stayed locked by another program for the whole wait of a write."""


def _never() -> bool:
    return False


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file is at `path` (device and inode), None if none is."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


Row = dict[str, Any]


def _where(clause: str | None) -> str:
    return f" where {clause}" if clause else ""


def _page(limit: int | None, offset: int | None) -> str:
    """LIMIT and OFFSET for a page (SQLite's -1: no limit, needed to have an offset)."""
    if limit is None and not offset:
        return ""
    text = f" limit {int(limit) if limit is not None else -1}"
    return text + (f" offset {int(offset)}" if offset else "")


def _search_sql(where: str | None) -> str:
    """The runs `where` lets through whose question or answer match `:query` in the
    full-text index (its rank and the row's rowid are there to order by)."""
    return (
        f"with original as (select rowid, * from runs{_where(where)}) "
        "select original.* from original join runs_fts on original.rowid = runs_fts.rowid "
        "where runs_fts match :query"
    )


class RunIndex:
    """The runs table; also an `EventSink` that records runs as they happen."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else default_path()
        self._lock = threading.RLock()
        self._writing = threading.local()  # at_once: this thread is inside all_at_once
        self._open()
        self._paths: dict[str, str] = {}
        self._host = socket.gethostname()
        self._pid = os.getpid()
        self._pid_started = process_started(self._pid)
        # Whether a write should stop waiting for a lock another program holds (the
        # session sets it: once its run is stopped, runs.db catches up later).
        self.give_up: Callable[[], bool] = _never
        # Whether the last write waited in vain for another program's lock (see write).
        self._locked_out = False

    def _open(self) -> None:
        with creation_lock(self.path):
            self.conn = open_database(self.path, migrations, expect_tables=TABLES)
        self.conn.isolation_level = None  # transactions are explicit: see write()
        self._file = _identity(self.path)

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    # -- writing ------------------------------------------------------------------------
    def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` in one immediate transaction, retrying while others write
        (inside `all_at_once`, in its transaction).

        Once a write has waited the whole WRITE_WAIT_S for another program's lock in
        vain, the next ones try once each until one gets through: a run writes several
        events, a batch's runs share one index, and waiting the whole time again for
        every event held a batch for hours behind a lock that was still there.
        """
        if getattr(self._writing, "at_once", False):
            return fn(self.conn)
        self._follow_the_file()
        locked_out = self._locked_out
        try:
            result = write_transaction(
                self.conn,
                self._lock,
                fn,
                path=Path(self.path),
                busy_error=RunsLocked,
                give_up=self.give_up,
                hint=LOCKED_OUT_HINT if locked_out else BUSY_HINT,
                wait_s=0.0 if locked_out else None,
            )
        except RunsLocked:
            if not self.give_up():  # waited in vain, not stopped
                self._locked_out = True
            raise
        self._locked_out = False
        return result

    def all_at_once(self, work: Callable[[], T]) -> T:
        """Run `work`, whose writes (`handle`, `record_*`) go into one transaction:
        thousands of runs take a second, not a minute; a failure keeps none of them."""

        def together(_conn: sqlite3.Connection) -> T:
            self._writing.at_once = True
            try:
                return work()
            finally:
                self._writing.at_once = False

        return self.write(together)

    def _follow_the_file(self) -> None:
        """Open runs.db again if it was deleted or replaced while open: writes to the
        old file (still open, no longer at its path) were lost to every other reader."""
        if _identity(self.path) == self._file:
            return
        with self._lock:
            if _identity(self.path) == self._file:
                return
            log.warning(
                "%s was deleted or replaced while this process had it open; "
                "its runs go into the new one",
                self.path,
            )
            self.conn.close()
            self._open()

    def _update(self, run_id: str, values: dict[str, Any]) -> None:
        values = {k: storable(v) for k, v in values.items()}
        columns = ", ".join(f"[{k}] = ?" for k in values)

        def update(c: sqlite3.Connection) -> int:
            sql = f"update runs set {columns} where run_id = ?"
            return c.execute(sql, [*values.values(), run_id]).rowcount

        if not self.write(update) and self._restore(run_id):
            self.write(update)  # the row is back, from the transcript: update it now

    def _restore(self, run_id: str) -> bool:
        """Index a live run whose row is gone (runs.db was deleted or replaced while it
        ran) from its transcript, which has every event so far; False if not live."""
        path = self._paths.get(run_id)
        return path is not None and self.add_transcript(path, live=True) is not None

    def attach(self, run_id: str, transcript_path: Path | str) -> None:
        self._paths[run_id] = str(transcript_path)

    def handle(self, event: Event) -> None:
        from conductor_kernel.events import (
            FinalAnswer,
            NotesWritten,
            RunFinished,
            RunScored,
            RunStarted,
        )
        from record.correctness import Correctness

        if isinstance(event, RunStarted):
            self.record_start(event, self._paths.get(event.run_id, ""), live=True)
        elif isinstance(event, FinalAnswer):
            self._update(event.run_id, {"final_answer": event.answer})
        elif isinstance(event, RunFinished):
            self.record_finish(event)  # its findings come with its fold (record_findings)
        elif isinstance(event, RunScored):
            self.record_correctness(event.run_id, Correctness.of_event(event))
        elif isinstance(event, NotesWritten):
            self.record_learning(event.run_id, event.usage)

    def record_start(
        self, event: RunStarted, path: str, source: str = "live", *, live: bool = False
    ) -> None:
        row = {
            "run_id": event.run_id,
            "path": path,
            "started_at": event.ts,
            "question": event.question,
            "task": event.task,
            "target": event.target,
            "model": event.model,
            "method": event.method_name,
            "status": "running",
            "source": source,
            "tags": json.dumps(event.tags),
            "host": self._host if live else None,
            "pid": self._pid if live else None,
            "pid_started": self._pid_started if live else None,
        }
        row = {k: storable(v) for k, v in row.items()}
        columns = ", ".join(f"[{k}]" for k in row)
        marks = ", ".join("?" for _ in row)
        updates = ", ".join(f"[{k}] = excluded.[{k}]" for k in row if k != "run_id")

        def start(c: sqlite3.Connection) -> None:
            c.execute(
                f"insert into runs ({columns}) values ({marks}) "
                f"on conflict(run_id) do update set {updates}",
                list(row.values()),
            )
            # A run indexed again (an import replaced) is audited again when it ends.
            c.execute("delete from audits where run_id = ?", (row["run_id"],))

        self.write(start)

    def record_finish(self, event: RunFinished) -> None:
        self._update(
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

    def record_correctness(self, run_id: str, verdict: Correctness) -> None:
        """Whether the run's answer is right (None: not scored), by which scorer, why."""
        correct = None if verdict.correct is None else int(verdict.correct)
        self._update(
            run_id,
            {"correct": correct, "scorer": verdict.scorer, "score_detail": verdict.detail},
        )

    def record_findings(self, run: RunOutline) -> None:
        """The audit's finding badges of a run, for listings to filter and sort on, and
        its whole audit for `runs audit` (not kept when the transcript was cut short:
        that audit is made from the file, with its warning)."""
        from record.audit import audit_outline

        report = audit_outline(run)
        badges = report.badges
        self._update(run.run_id, {"findings": f" {' '.join(badges)} " if badges else ""})
        verdict = run.correctness
        stored = {
            "report": report.to_dict(),
            "verdict": {
                "correct": verdict.correct,
                "scorer": verdict.scorer,
                "detail": verdict.detail,
            },
        }

        def keep(c: sqlite3.Connection) -> None:
            c.execute("delete from audits where run_id = ?", (run.run_id,))
            if run.problem is None:
                # ASCII JSON: a lone surrogate in a message comes back as it was.
                c.execute("insert into audits values (?, ?)", (run.run_id, json.dumps(stored)))

        self.write(keep)

    def record_learning(self, run_id: str, usage: Usage) -> None:
        """Learning's model calls, made after the run finished, beside the run's own."""
        changed = self.write(
            lambda c: (
                c.execute(
                    "update runs set learning_input_tokens = coalesce(learning_input_tokens, 0) + ?,"
                    " learning_output_tokens = coalesce(learning_output_tokens, 0) + ?,"
                    " learning_cost_usd = coalesce(learning_cost_usd, 0) + ? where run_id = ?",
                    (usage.input_tokens, usage.output_tokens, usage.cost_usd, run_id),
                ).rowcount
            )
        )
        if not changed:
            self._restore(run_id)  # the transcript's notes_written carry this usage too

    # -- rebuilding and repairing -------------------------------------------------------
    def add_transcript(
        self, path: Path | str, source: str | None = None, *, live: bool = False
    ) -> str | None:
        """Index one transcript file; returns its run id (None if it has no start).

        The source (live, published...) is the run's own `tags["source"]` unless given.
        A `live` run is this process's, still going: `running` until it finishes.
        """
        from conductor_kernel.events import FinalAnswer, NotesWritten
        from conductor_kernel.interfaces import Usage
        from record.fold import outline
        from record.reader import read_transcript

        transcript = read_transcript(path)
        started = transcript.started
        if started is None:
            return None
        source = source or str(started.tags.get("source", "live"))
        self.record_start(started, str(path), source=source, live=live)
        answers = [e for e in transcript.events if isinstance(e, FinalAnswer)]
        if live and answers:
            self._update(started.run_id, {"final_answer": answers[-1].answer})
        if transcript.finished is not None:
            self.record_finish(transcript.finished)
            problem = str(transcript.problem) if transcript.problem is not None else None
            run = outline(transcript.events, problem=problem)
            if run.score is not None:
                self.record_correctness(started.run_id, run.correctness)
            self.record_findings(run)
            learning = Usage()
            for event in transcript.events:
                if isinstance(event, NotesWritten):
                    learning += event.usage
            if learning.calls:
                self.record_learning(started.run_id, learning)
        elif not live:
            self._update(started.run_id, {"status": "incomplete"})
        return started.run_id

    def rebuild(self, runs_dir: Path) -> int:
        """Index every transcript of one folder; one that cannot be indexed is skipped."""
        return self.index_files(sorted(runs_dir.glob("*.jsonl"))).count

    def index_files(self, paths: Iterable[Path]) -> Reindexed:
        """Index each transcript; one that cannot be read or stored is reported (path and
        reason) and skipped, so one hostile file never blocks the rebuild of the rest."""
        done = Reindexed()
        for path in paths:
            try:
                if self.add_transcript(path) is not None:
                    done.count += 1
                    continue
                reason = _no_run_in(path)
                done.skipped.append((path, reason))
                log.warning("%s: not indexed (%s); the file is kept as it is", path, reason)
            except (
                UserFacingError,
                OSError,
                TypeError,
                ValueError,  # UnicodeError and JSON errors are ValueErrors
                OverflowError,  # a number no SQLite integer holds
                RecursionError,  # structure nested deeper than any reader follows
                MemoryError,
                sqlite3.Error,
            ) as exc:
                reason = (str(exc) or type(exc).__name__).removeprefix(f"{path}: ")
                if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
                    exc, sqlite3.IntegrityError | sqlite3.DataError
                ):
                    done.damaged = True  # the database failed, not this file
                if isinstance(exc, RecursionError):
                    reason = "nested too deeply to read"
                done.skipped.append((path, reason))
                log.warning("%s: not indexed (%s); the file is kept as it is", path, reason)
        return done

    def abandoned(self) -> list[dict[str, Any]]:
        """Runs marked running here whose process on this host is gone."""
        with self._lock:
            cursor = self.conn.execute(
                "select run_id, path, pid, pid_started from runs "
                "where status = 'running' and host = ?",
                (self._host,),
            )
            rows = [dict(zip([d[0] for d in cursor.description], r, strict=True)) for r in cursor]
        return [
            r
            for r in rows
            if r["pid"] is not None and not process_alive(r["pid"], r["pid_started"])
        ]

    def repair_abandoned(self) -> list[str]:
        """Finish the runs of dead processes as `interrupted`, transcript and index both."""
        from record.repair import finish_transcript

        repaired = []
        for row in self.abandoned():
            try:
                finished = (
                    finish_transcript(Path(row["path"]), row["run_id"]) if row["path"] else None
                )
            except OSError as exc:
                log.warning("run %s: could not repair its transcript: %s", row["run_id"], exc)
                finished = None
            if finished is not None:
                self.record_finish(finished)
            else:
                self._update(row["run_id"], {"status": "interrupted"})
            repaired.append(row["run_id"])
            log.info(
                "run %s was left unfinished by a process that died: now interrupted", row["run_id"]
            )
        return repaired

    def repair_on_start(self) -> None:
        """What every start does first: end the runs of dead processes, and the runs a
        full disk kept out of runs.db (a week back); a failure is logged, never raised."""
        import time

        from record.home import home_dir, transcript_files

        try:
            self.repair_abandoned()
            week = time.time() - 7 * 86400
            self.repair_unrecorded(transcript_files(home_dir()), since=week)
        except (UserFacingError, OSError, sqlite3.Error) as exc:
            log.warning("could not repair the runs left unfinished by dead processes: %s", exc)

    def repair_unrecorded(self, paths: Iterable[Path], *, since: float) -> list[str]:
        """End and index the transcripts written since `since` that runs.db never
        recorded (its writes failed too: a full disk) and that no live process writes."""
        from record.repair import end_unrecorded

        with self._lock:
            known = {
                str(run_id)
                for (run_id,) in self.conn.execute(
                    "select run_id from runs where started_at >= ?", (since - 86400,)
                )
            }
        repaired = []
        for path in paths:
            try:
                if path.stem in known or path.stat().st_mtime < since or not path.is_file():
                    continue
                if end_unrecorded(path) is not None and self.add_transcript(path):
                    repaired.append(path.stem)
            except DiskFull:
                log.warning(
                    "the disk is still full: runs it cut short are marked ended once "
                    "there is room again"
                )
                break
            except (UserFacingError, OSError, ValueError, TypeError, sqlite3.Error) as exc:
                log.warning("%s: could not end and index it (%s)", path, exc)
        return repaired

    # -- reading ------------------------------------------------------------------------
    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """The connection for this thread alone; a locked or damaged file raises
        `DatabaseError` with what to do."""
        with self._lock, read_errors(self.path, repair=REBUILD_HINT):
            yield

    def _rows(self, sql: str, params: Sequence[object] | dict[str, object]) -> builtins.list[Row]:
        """The rows `sql` selects, each as a dict by column name (call it `_reading`)."""
        cursor = self.conn.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor]

    def get(self, run_id: str) -> RunRecord | None:
        """The run with this id, else the one run whose id starts with it (`%` and `_`
        are characters like any other); None when none or several do."""
        if not run_id or not encodable(run_id):
            # Nothing typed names no run (as a prefix it would be every run's), and no
            # stored id holds a lone surrogate.
            return None
        with self._reading():
            rows = self._rows("select * from runs where run_id = ?", [run_id])
            if not rows:
                where, params = prefix_condition("run_id", run_id)
                rows = self._rows(f"select * from runs where {where} limit 2", params)
        return as_record(rows[0]) if len(rows) == 1 else None

    def list(
        self,
        *,
        limit: int = 50,
        task: str | None = None,
        status: str | None = None,
        method: str | None = None,
    ) -> list[RunRecord]:
        """The latest runs, of one task, status or method if given."""
        return self.list_runs(RunFilter(task=task, status=status, method=method), limit=limit)

    # Below, `list` would name the method above, hence builtins.list.
    def list_runs(
        self,
        filters: RunFilter | None = None,
        *,
        limit: int | None = 50,
        offset: int | None = None,
        oldest_first: bool = False,
        sort: str = "started",
    ) -> builtins.list[RunRecord]:
        """The runs `filters` lets through, newest first or in the order `sort` names
        (a key of `SORTS`); `limit=None` for all of them, from the `offset`-th on (a page
        of a list too long to read at once: the order is total, so pages never overlap)."""
        if sort not in SORTS:
            raise ValueError(f"runs are sorted by {', '.join(SORTS)}, not {sort!r}")
        where, params = (filters or RunFilter()).sql()
        order = ("started_at" if oldest_first else SORTS[sort]) + ", run_id"
        sql = f"select * from runs{_where(where)} order by {order}{_page(limit, offset)}"
        with self._reading():
            return [as_record(row) for row in self._rows(sql, params)]

    def stored_audits(self) -> builtins.list[tuple[RunRecord, Audited | None]]:
        """Every run, oldest first, with its audit as stored when it was indexed (None:
        audit its transcript). The verdict is the row's once a score was recorded (a
        run is scored after its audit is kept), else the one stored with the audit."""
        with self._reading():
            rows = self._rows(
                "select runs.*, audits.report as audit_report from runs "
                "left join audits on audits.run_id = runs.run_id order by started_at, run_id",
                (),
            )
        return [(as_record(row), _stored_audit(row)) for row in rows]

    def count_runs(self, filters: RunFilter | None = None) -> int:
        """How many runs `filters` lets through (what `list_runs` pages over)."""
        where, params = (filters or RunFilter()).sql()
        with self._reading():
            return int(
                self.conn.execute(f"select count(*) from runs{_where(where)}", params).fetchone()[0]
            )

    def counterparts(self, run_id: str) -> builtins.list[RunRecord]:
        """Other runs of the same task on the same question (another method or import
        condition: with and without Python), newest first."""
        with self._reading():
            rows = self._rows(
                "select * from runs where question = (select question from runs where "
                "run_id = :id) and task = (select task from runs where run_id = :id) and "
                "run_id != :id order by started_at desc",
                {"id": run_id},
            )
            return [as_record(row) for row in rows]

    def search(
        self,
        query: str,
        *,
        filters: RunFilter | None = None,
        limit: int | None = 50,
        offset: int | None = None,
    ) -> builtins.list[RunRecord]:
        """Runs whose question or answer match the FTS5 `query`, best first (ties in
        index order, so pages from `offset` never overlap).

        `record.fts.quote_words` turns a user's text into such a query; a query
        that is not valid FTS5 raises `SearchSyntaxError`.
        """
        where, params = (filters or RunFilter()).sql()
        sql = _search_sql(where) + " order by runs_fts.rank, original.rowid" + _page(limit, offset)
        with self._reading(), _search_errors(query):
            return [as_record(row) for row in self._rows(sql, {**params, "query": query})]

    def count_search(self, query: str, *, filters: RunFilter | None = None) -> int:
        """How many runs `search` finds for `query` (what it pages over)."""
        where, params = (filters or RunFilter()).sql()
        sql = f"select count(*) from ({_search_sql(where)})"
        with self._reading(), _search_errors(query):
            return int(self.conn.execute(sql, {**params, "query": query}).fetchone()[0])

    def distinct_values(self, column: str) -> builtins.list[str]:
        """The values a filter column takes in the index (none empty), sorted."""
        if column not in FILTER_COLUMNS:
            raise ValueError(f"runs are filtered by {', '.join(FILTER_COLUMNS)}, not {column!r}")
        with self._reading():
            cursor = self.conn.execute(
                f"select distinct [{column}] from runs where [{column}] != '' order by 1"
            )
            return [str(value) for (value,) in cursor if value]

    @classmethod
    def reindex(cls, path: Path | str | None, files: Path | Iterable[Path]) -> Reindexed:
        """Rebuild the index from transcripts (a folder's, or the files given); a damaged
        runs.db (unreadable, not a file, failing its full integrity check) is moved aside
        first, never deleted."""
        path = Path(path) if path else default_path()
        files = sorted(files.glob("*.jsonl")) if isinstance(files, Path) else list(files)
        moved = None
        index = _checked(cls, path)
        if index is None:
            moved = _move_aside(path)
            index = cls(path)
        done = index.index_files(files)
        if done.damaged and moved is None:
            # Damage no check found (a flipped bit in the schema) failed the writes:
            # start from a new file, the old one kept aside.
            index.close()
            moved = _move_aside(path)
            index = cls(path)
            done = index.index_files(files)
        done.index, done.moved = index, moved
        return done


@contextlib.contextmanager
def _search_errors(query: str) -> Iterator[None]:
    """A full-text query SQLite refuses, as `SearchSyntaxError` (a busy file is left to
    `_reading`, which says it is locked)."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise
        raise SearchSyntaxError(query, str(exc)) from None


# One run audited: its findings and whether its answer is right.
Audited = tuple["AuditReport", "Correctness"]


def _stored_audit(row: dict[str, Any]) -> Audited | None:
    """A row's stored audit (`stored_audits`), None when it has none or an unknown one."""
    from record.audit import AuditReport
    from record.correctness import Correctness

    text = row.pop("audit_report", None)
    if not text:
        return None
    try:
        stored = json.loads(text)
        report = AuditReport.from_dict(stored["report"])
        kept = stored["verdict"]
    except (ValueError, KeyError, TypeError):
        return None
    if report is None:
        return None
    if row["scorer"] is not None:  # record_correctness ran: the latest verdict
        correct = None if row["correct"] is None else bool(row["correct"])
        return report, Correctness(correct, row["scorer"], row["score_detail"] or "")
    return report, Correctness(kept["correct"], str(kept["scorer"]), str(kept["detail"]))


def _no_run_in(path: Path) -> str:
    """Why a transcript that was read gave no run: its first bad line, or no start."""
    from record.reader import read_transcript

    problem = read_transcript(path).problem
    if problem is not None:
        return f"no run could be read: line {problem.line}: {problem.reason}"
    return "no run_started event in it"


def _move_aside(path: Path) -> Path:
    """Rename a damaged runs.db (and its WAL files) to `runs.db.corrupt-STAMP`."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    moved = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while moved.exists():  # an earlier rebuild this second: keep both
        n += 1
        moved = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    for suffix in ("", "-wal", "-shm"):
        side = Path(str(path) + suffix)
        if side.exists() or side.is_symlink():
            side.rename(Path(str(moved) + suffix))
    return moved


@dataclass
class Reindexed:
    """What a rebuild did: how many runs it indexed, what it could not (and why)."""

    count: int = 0
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    index: RunIndex | None = None
    moved: Path | None = None
    # Whether writing failed for the database's sake (damage), not a file's.
    damaged: bool = False


def _checked(cls: type[RunIndex], path: Path) -> RunIndex | None:
    """The index at `path` if it opens and passes a full integrity check (opening checks
    only the header of a big file), else None."""
    try:
        index = cls(path)
    except DatabaseError:
        return None
    try:
        with index._lock:
            ok = (index.conn.execute("PRAGMA quick_check").fetchone() or ["ok"])[0]
    except sqlite3.DatabaseError:
        ok = "unreadable"
    if ok == "ok":
        return index
    index.close()
    return None
