"""The end of a run, recorded by construction: sinks isolated, the ledger, learning after
the end, atomic migrations, a corrupt runs.db rebuilt, dead runs repaired."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from conductor.session import Session
from conductor_kernel.events import Event, NotesWritten, RunFinished, RunStarted
from conductor_kernel.interfaces import Completion, Message, Usage
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from lessons.write.learn import LearnOptions
from record.migrations import DatabaseError, Migrations, open_database
from record.reader import read_transcript
from transcripts.index import RunIndex

ANSWER = '>> FINAL ANSWER:\n"""\n42\n"""'
CALL = 'Expert Checker:\n"""\nCheck 42.\n"""'


class Boom:
    """A sink that raises on every event (or only on one kind)."""

    def __init__(self, kind: str | None = None, error: BaseException | None = None) -> None:
        self.kind, self.error, self.seen = kind, error or RuntimeError("sink broke"), 0
        self.kinds: list[str] = []

    def handle(self, event: Event) -> None:
        self.seen += 1
        self.kinds.append(event.kind)
        if self.kind is None or event.kind == self.kind:
            raise self.error


class BrokenIndex(RunIndex):
    def handle(self, event: Event) -> None:
        raise sqlite3.OperationalError("database is locked")


def session(tmp_path: Path, turns: list[str] | None = None, **kw: Any) -> Session:
    model = ScriptedModel(turns or [CALL, ANSWER], lambda name, instruction: "42 is right.")
    return Session(model, config=RunConfig(python=False), runs_path=tmp_path / "runs", **kw)


def transcript_of(tmp_path: Path):
    (path,) = (tmp_path / "runs").glob("*.jsonl")
    return read_transcript(path)


# -- sinks ----------------------------------------------------------------------------------


def test_a_sink_that_raises_is_logged_and_the_run_ends_recorded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    index = BrokenIndex(tmp_path / "runs.db")
    boom = Boom()
    events = list(session(tmp_path, index=index).solve("q", sinks=(boom,)))
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert finished and finished[0].status == "answered"
    assert boom.seen == len([e for e in events])  # it was offered every event anyway
    assert transcript_of(tmp_path).finished.status == "answered"
    assert "BrokenIndex could not take" in caplog.text
    assert "Boom could not take" in caplog.text


def test_a_closed_output_stops_the_run_and_it_ends_recorded(tmp_path: Path) -> None:
    pipe = Boom(kind="meta_turn_finished", error=BrokenPipeError())
    run = session(tmp_path)
    events = list(run.solve("q", sinks=(pipe,)))
    assert events[-1].status == "interrupted" and run.stopped_by == "output closed"
    assert pipe.kinds[-1] == "meta_turn_finished"  # nothing offered once the reader left
    assert transcript_of(tmp_path).finished.status == "interrupted"


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(1), RuntimeError("bug")])
def test_a_run_cut_off_by_its_consumer_still_ends_recorded(
    tmp_path: Path, error: BaseException
) -> None:
    index = RunIndex(tmp_path / "runs.db")
    run = session(tmp_path, index=index)
    with pytest.raises(type(error)):
        for event in run.solve("q"):
            if event.kind == "expert_call_finished":
                raise error
    finished = transcript_of(tmp_path).finished
    assert finished is not None
    # Whatever the consumer raised, the run was stopped from outside: interrupted.
    assert finished.status == "interrupted"
    assert finished.usage.calls == 2  # the meta turn and the expert had returned
    assert index.get(finished.run_id)["status"] == finished.status


def test_a_consumer_that_stops_reading_leaves_a_finished_run(tmp_path: Path) -> None:
    stream = session(tmp_path).solve("q")
    for event in stream:
        if event.kind == "meta_turn_finished":
            break
    stream.close()
    assert transcript_of(tmp_path).finished.status == "interrupted"


# -- learning after the end -------------------------------------------------------------------


def test_run_finished_is_written_and_delivered_before_learning(tmp_path: Path) -> None:
    seen: list[str] = []
    writer_state: list[bool] = []

    class Watch:
        def handle(self, event: Event) -> None:
            seen.append(event.kind)

    def learn(events: list[Event], *, ledger: Any, **_: Any) -> list[Event]:
        seen.append("learning")
        writer_state.append(transcript_of(tmp_path).finished is not None)
        return [NotesWritten(run_id=events[0].run_id, note_ids=["n1"])]

    run = session(tmp_path, after_run=[learn])
    list(run.solve("q", sinks=(Watch(),)))
    assert seen[-3:] == ["run_finished", "learning", "notes_written"]
    assert writer_state == [True]  # on disk before learning began
    kinds = [e.kind for e in transcript_of(tmp_path).events]
    assert kinds[-2:] == ["run_finished", "notes_written"]


@pytest.mark.parametrize("how", ["cancel", "error"])
def test_nothing_is_learned_after_an_interrupted_or_failed_run(tmp_path: Path, how: str) -> None:
    learned: list[str] = []

    def learn(events: list[Event], *, ledger: Any, **_: Any) -> list[Event]:
        learned.append(events[0].run_id)
        return []

    def meta(messages: list[Message]) -> str:
        if how == "error":
            raise ConnectionError("the server went away")
        run.cancel()
        return CALL

    run = session(tmp_path, after_run=[learn])
    run.meta_model = run.conductor.meta_model = ScriptedModel(meta)
    with pytest.raises(ConnectionError) if how == "error" else _nothing():
        list(run.solve("q"))
    assert learned == []
    assert transcript_of(tmp_path).finished.status == ("error" if how == "error" else "interrupted")


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


# -- the ledger ---------------------------------------------------------------------------------


class Priced:
    """A model whose every call costs $0.10; it answers meta turns from a script."""

    name = "priced-online"

    def __init__(self, turns: list[str]) -> None:
        self.turns, self.calls = list(turns), 0

    def complete(self, messages: list[Message], **kw: Any) -> Completion:
        self.calls += 1
        system = kw.get("system") or ""
        text = self.turns.pop(0) if kw.get("role") == "meta" and self.turns else "1"
        if "choose which notes" in system.lower():
            text = "1, 2"
        return Completion(text, Usage(input_tokens=10, output_tokens=1, cost_usd=0.1, calls=1))


def test_the_notebooks_calls_are_on_the_runs_ledger_and_count_against_its_limits(
    tmp_path: Path,
) -> None:
    from conductor.session.notebook_hooks import NotebookHooks

    def recall(question: str, *, ledger: Any) -> Any:
        # As the notebook's narrowing does: one model call through the metered model.
        NotebookHooks(book=None, model=model)._model(ledger, "recall").complete(  # type: ignore[arg-type]
            [Message("user", "pick")], system="You choose which notes would help."
        )
        return None

    model = Priced([CALL, CALL, ANSWER])
    run = Session(
        model,
        config=RunConfig(python=False, max_cost_usd=0.25),
        runs_path=tmp_path / "runs",
        recall=recall,
    )
    events = list(run.solve("q"))
    finished = events[-1]
    # recall ($0.10) + meta ($0.10) + expert ($0.10) reach the $0.25 limit before round 2.
    assert finished.status == "limit"
    assert finished.usage.calls == 3 and finished.usage.cost_usd == pytest.approx(0.3)
    assert run.ledger is not None and set(run.ledger.by_purpose()) == {"recall", "meta", "expert"}


def test_learning_calls_are_counted_in_their_own_event_and_in_runs_db(tmp_path: Path) -> None:
    from conductor.session.notebook_hooks import NotebookHooks

    model = Priced([ANSWER])
    hooks = NotebookHooks.open(tmp_path / "notebook.db", model=model)
    hooks.learn_options = LearnOptions(model_share=None)  # learning's calls unbounded
    index = RunIndex(tmp_path / "runs.db")
    run = Session(model, config=RunConfig(python=False), runs_path=tmp_path / "runs", index=index)
    hooks.attach(run, recall=False)
    # A target: the run's answer is checked, so there is something to learn from.
    events = list(run.solve("What is 6 times 7?", target="42"))
    finished = next(e for e in events if isinstance(e, RunFinished))
    notes = next(e for e in events if isinstance(e, NotesWritten))
    assert finished.usage.calls == 1  # the meta turn alone
    learning_calls = model.calls - 1
    assert learning_calls >= 1 and notes.usage.calls == learning_calls
    row = index.get(finished.run_id)
    assert row["cost_usd"] == pytest.approx(0.1)
    assert row["learning_cost_usd"] == pytest.approx(0.1 * learning_calls)


# -- migrations -------------------------------------------------------------------------------


def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    steps = Migrations("test")

    @steps
    def m001_first(db: sqlite_utils.Database) -> None:
        db["one"].create({"id": int}, pk="id")

    path = tmp_path / "t.db"
    open_database(path, steps, expect_tables={"one"}).close()

    @steps
    def m002_fails_halfway(db: sqlite_utils.Database) -> None:
        db["two"].create({"id": int, "text": str}, pk="id")
        db["two"].enable_fts(["text"], create_triggers=True)
        db["one"].insert({"id": 1})
        raise sqlite3.OperationalError("planted failure after the first CREATE")

    with pytest.raises(DatabaseError, match="left as it was"):
        open_database(path, steps, expect_tables={"one"})
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
    assert tables == {"_migrations", "one"}
    assert conn.execute("select count(*) from one").fetchone() == (0,)
    assert [r[0] for r in conn.execute("select name from _migrations")] == ["m001_first"]
    conn.close()

    steps._steps[-1] = _fixed_second  # the fix ships: the same database opens and migrates
    db = sqlite_utils.Database(open_database(path, steps, expect_tables={"one", "two"}))
    assert [r["name"] for r in db["_migrations"].rows] == ["m001_first", "m002_fails_halfway"]


def _fixed_second(db: sqlite_utils.Database) -> None:
    db["two"].create({"id": int, "text": str}, pk="id")


_fixed_second.__name__ = "m002_fails_halfway"


# -- runs.db repair and rebuild ----------------------------------------------------------------


def test_reindex_moves_a_corrupt_runs_db_aside_and_rebuilds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    from conductor.cli import main
    from record.home import runs_dir

    index = RunIndex()
    list(session(tmp_path, index=index).solve("q"))
    index.close()
    for path in (tmp_path / "runs").glob("*.jsonl"):
        path.rename(runs_dir() / path.name)
    db = isolated_home / "runs.db"
    for side in ("-wal", "-shm"):
        Path(str(db) + side).unlink(missing_ok=True)
    db.write_bytes(b"SQLite format 3\x00" + b"\x13" * 4000)  # a damaged file
    with pytest.raises(DatabaseError):
        RunIndex()
    assert main(["runs", "reindex"]) == 0
    out = capsys.readouterr().out
    assert "moved it to" in out and "indexed 1 transcripts" in out
    (kept,) = isolated_home.glob("runs.db.corrupt-*")
    assert kept.read_bytes().startswith(b"SQLite format 3\x00\x13")  # kept as it was
    assert len(RunIndex().list()) == 1


def test_a_dead_processes_run_is_repaired_on_the_next_start(tmp_path: Path) -> None:
    import subprocess
    import sys

    index = RunIndex(tmp_path / "runs.db")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    started = RunStarted(run_id="r-dead", question="q")
    path = tmp_path / "r-dead.jsonl"
    from record.writer import TranscriptWriter

    with TranscriptWriter(path) as writer:
        writer.handle(started)
    index.attach("r-dead", path)
    index.handle(started)
    index._update("r-dead", {"pid": int(dead.stdout), "pid_started": "1"})
    alive = RunStarted(run_id="r-alive", question="q")
    index.handle(alive)  # ours: this process is alive
    assert index.repair_abandoned() == ["r-dead"]
    assert index.get("r-dead")["status"] == "interrupted"
    assert index.get("r-alive")["status"] == "running"
    repaired = read_transcript(path)
    assert [e.kind for e in repaired.events] == ["run_started", "error", "run_finished"]


def test_a_line_cut_by_a_killed_writer_is_skipped_and_what_follows_is_read(
    tmp_path: Path,
) -> None:
    from record.writer import TranscriptWriter

    path = tmp_path / "r.jsonl"
    with TranscriptWriter(path) as writer:
        writer.handle(RunStarted(run_id="r", question="q"))
    with path.open("a") as fh:
        fh.write('{"v": 1, "kind": "meta_turn_sta')  # killed mid-write (no newline)
    with TranscriptWriter(path) as writer:  # the repair appends on a fresh line
        writer.handle(RunFinished(run_id="r", status="interrupted"))
    transcript = read_transcript(path)
    assert [e.kind for e in transcript.events] == ["run_started", "run_finished"]
    assert transcript.problem is not None and transcript.problem.line == 2


def test_a_batch_items_usage_includes_its_learning(tmp_path: Path) -> None:
    from conductor.batch.runner import BatchPlan, BatchRunner
    from conductor.session.notebook_hooks import NotebookHooks
    from conductor.tasks.files import TaskItem

    hooks = NotebookHooks.open(tmp_path / "notebook.db", model=None)
    hooks.learn_options = LearnOptions(model_share=None)  # learning's calls unbounded
    models: list[Priced] = []

    def make(item: TaskItem) -> Session:
        model = Priced([ANSWER])
        models.append(model)
        hooks.model = model
        run = Session(model, config=RunConfig(python=False), runs_path=tmp_path / "runs")
        hooks.attach(run, recall=False)
        return run

    items = [TaskItem(id="a", input="What is 6 times 7?", target="42", line=1)]
    plan = BatchPlan(tmp_path / "batch", "t-0123456789ab", "t", items, lambda i: i.input)
    runner = BatchRunner(plan, make, concurrency=1)
    runner.run()
    (record,) = runner.log.read().values()
    learning_calls = models[0].calls - 1
    assert learning_calls >= 1
    assert record["learning_usage"]["calls"] == learning_calls
    assert record["usage"]["calls"] == 1 + learning_calls
    assert record["usage"]["cost_usd"] == pytest.approx(0.1 * (1 + learning_calls))


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_runs_db_deleted_or_replaced_mid_run_still_gets_the_run(tmp_path: Path, how: str) -> None:
    """Someone deletes runs.db (or a rebuild puts a new one in its place) while a run is
    going: the run's writes went to the old file, still open, and the run was missing
    from the runs.db every later command reads, until a `conductor runs reindex`."""
    import os

    db = tmp_path / "runs.db"

    def meta(messages: object) -> str:
        if len(messages) == 1:  # round 1: pull the file from under the running process
            for suffix in ("", "-wal", "-shm"):
                Path(str(db) + suffix).unlink(missing_ok=True)
            if how == "replaced":
                RunIndex(db).close()
        return 'Expert Checker:\n"""\nIs 6*7 42?\n"""' if len(messages) == 1 else ANSWER

    session = Session(
        ScriptedModel(meta, lambda name, instruction: "yes"),
        config=RunConfig(python=False),
        runs_path=tmp_path / "runs",
        index=RunIndex(db),
    )
    finished = list(session.solve("What is 6 times 7?"))[-1]
    assert isinstance(finished, RunFinished) and finished.status == "answered"
    assert os.path.exists(db)
    row = RunIndex(db).get(finished.run_id)
    assert row is not None and row["status"] == "answered" and row["final_answer"] == "42"
    assert row["path"] == str(tmp_path / "runs" / f"{finished.run_id}.jsonl")
