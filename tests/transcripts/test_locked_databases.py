"""A database another program holds locked neither freezes a stop nor a stopped run.

SQLite waits for a lock inside one C call (the busy timeout, 30 s), and Python runs a
signal's handler only between calls: with runs.db or the notebook locked, a Ctrl-C or
SIGTERM was not even seen for 30 s at a time, and a write retried twelve times (six
minutes). A stopped run then waited again to record its end in runs.db. Now a write
waits in short slices, so a handler runs within one; and once its run is stopped, the
runs index gives up waiting (the transcript has the run; the next start or `conductor
runs reindex` brings runs.db up to date).
"""

from __future__ import annotations

import signal
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conductor.session import Session
from conductor_kernel.events import Event, MetaTurnStarted, RunFinished
from conductor_kernel.limits.run_config import RunConfig
from experts.scripted import ScriptedModel
from lessons.storage.store import Notebook
from record.migrations import DatabaseError
from record.reader import read_transcript
from transcripts.index import RunIndex, RunsLocked

# Only a hang waits this long; the lock is let go then, whatever happened.
HANG_S = 60.0


class Stop(Exception):
    """What the test's signal handler raises (the CLI's raises `Interrupted`)."""


@pytest.fixture
def hold_lock() -> Iterator[Callable[[Path], threading.Event]]:
    """Lock a database file as another program would (BEGIN EXCLUSIVE); the returned
    event is set when the lock is let go, at the test's end or after HANG_S."""
    holders: list[tuple[sqlite3.Connection, threading.Event, threading.Timer]] = []

    def hold(path: Path) -> threading.Event:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN EXCLUSIVE")
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                conn.rollback()
                released.set()

        timer = threading.Timer(HANG_S, release)
        timer.start()
        holders.append((conn, released, timer))
        return released

    yield hold
    for conn, released, timer in holders:
        timer.cancel()
        if not released.is_set():
            conn.rollback()
            released.set()
        conn.close()


# Longer than the test waits: a wait left to SQLite would outlast the lock's holder, so a
# handler that ran while the lock was held ran between slices of the wait, not after it.
LONG_BUSY = f"PRAGMA busy_timeout={int(HANG_S * 10 * 1000)}"


def _runs_db_write(path: Path) -> Callable[[], object]:
    index = RunIndex(path / "runs.db")
    index.conn.execute(LONG_BUSY)
    return lambda: index.write(lambda c: c.execute("update runs set status = status"))


def _notebook_write(path: Path) -> Callable[[], object]:
    book = Notebook(path / "notebook.db")
    book.conn.execute(LONG_BUSY)
    return lambda: book.write(lambda c: c.execute("update notes set kind = kind"))


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill")
@pytest.mark.parametrize(
    ("name", "make"), [("runs.db", _runs_db_write), ("notebook.db", _notebook_write)]
)
def test_a_signal_is_handled_while_a_write_waits_for_a_locked_database(
    tmp_path: Path, hold_lock, name: str, make: Callable[[Path], Callable[[], object]]
) -> None:
    write = make(tmp_path)
    released = hold_lock(tmp_path / name)
    handled_while_locked: list[bool] = []

    def on_signal(signum: int, frame: object) -> None:
        handled_while_locked.append(not released.is_set())
        raise Stop

    previous = signal.signal(signal.SIGUSR1, on_signal)
    shooter = threading.Timer(0.2, signal.pthread_kill, (threading.get_ident(), signal.SIGUSR1))
    try:
        shooter.start()
        with pytest.raises(Stop):
            write()
    finally:
        shooter.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert handled_while_locked == [True], "the handler waited for the lock to go"


TURN = 'Expert Checker:\n"""\nIs 6*7 42?\n"""'


def test_a_stopped_run_does_not_wait_for_a_locked_runs_db(
    tmp_path: Path, hold_lock, caplog: pytest.LogCaptureFixture
) -> None:
    index = RunIndex(tmp_path / "runs.db")
    release_model = threading.Event()

    def slow_meta(messages: object) -> str:
        release_model.wait(HANG_S)
        return TURN

    session = Session(
        meta_model=ScriptedModel(slow_meta),
        config=RunConfig(python=False),
        runs_path=tmp_path / "runs",
        index=index,
    )
    released: threading.Event | None = None
    events: list[Event] = []
    try:
        for event in session.solve("What is 6 times 7?"):
            events.append(event)
            if isinstance(event, MetaTurnStarted):
                released = hold_lock(tmp_path / "runs.db")  # another program takes it
                session.cancel()  # then the user presses Ctrl-C
    finally:
        release_model.set()
    assert released is not None and not released.is_set(), "the run waited for the lock"
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "interrupted"
    transcript = read_transcript(tmp_path / "runs" / f"{finished.run_id}.jsonl")
    assert transcript.finished == finished  # the record has it all
    assert "runs.db" in caplog.text and "reindex" in caplog.text
    released.wait(0)  # the lock is still held here: runs.db catches up later


def test_a_write_that_gives_up_says_what_to_do(tmp_path: Path, hold_lock) -> None:
    index = RunIndex(tmp_path / "runs.db")
    index.give_up = lambda: True  # as when its run was stopped
    released = hold_lock(tmp_path / "runs.db")
    with pytest.raises(DatabaseError, match="reindex"):
        index.write(lambda c: c.execute("update runs set status = status"))
    assert not released.is_set()


def test_a_stopped_ray_batch_does_not_wait_for_a_locked_runs_db(tmp_path: Path, hold_lock) -> None:
    """The Ray driver's index of runs.db gives up once its batch is stopped, as the
    local batch's does (no cluster needed: only the driver's side is exercised)."""
    from conductor.batch.ray.learning import ClusterLearning
    from conductor.batch.ray.runner import RayBatchRunner
    from conductor.batch.runner import BatchPlan
    from conductor.batch.setup import IndexSink

    class Pool:
        def broadcast(self, *args: object) -> None:
            pass

    plan = BatchPlan(tmp_path, "t-0123456789ab", "t", [], lambda i: i.input)
    learning = ClusterLearning("off", notebook=None, folder=tmp_path, recall=False)
    sink = IndexSink(tmp_path / "runs")
    runner = RayBatchRunner(plan, pool=Pool(), learning=learning, concurrency=1, index=sink)  # type: ignore[arg-type]
    released = hold_lock(sink.index.path)
    runner.stop("the user pressed Ctrl-C")
    with pytest.raises(DatabaseError, match="reindex"):
        sink.index.write(lambda c: c.execute("update runs set status = status"))
    assert not released.is_set(), "the write waited for the lock"


@pytest.mark.parametrize("name", ["runs.db", "notebook.db"])
def test_a_database_that_is_up_to_date_opens_while_another_program_holds_it(
    tmp_path: Path, hold_lock, name: str
) -> None:
    """Opening checked for pending migrations under the write lock, so every command
    (`conductor runs list` too) waited 30 s for it and then failed. An up-to-date file
    needs no write lock to open and read."""
    path = tmp_path / name
    first = RunIndex(path) if name == "runs.db" else Notebook(path)
    first.close()
    released = hold_lock(path)
    if name == "runs.db":
        index = RunIndex(path)
        assert index.list_runs() == []
        index.close()
    else:
        book = Notebook(path)
        with book.reading() as conn:
            assert conn.execute("select count(*) from notes").fetchone() == (0,)
        book.close()
    assert not released.is_set(), "opening waited for the lock"


def test_after_a_write_waited_in_vain_the_next_ones_try_once_until_one_gets_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A batch's runs share one index and write several events each: waiting the whole
    # time again for every event held a batch for hours behind a lock still there.
    monkeypatch.setattr("record.migrations.WRITE_WAIT_S", 0.5)
    index = RunIndex(tmp_path / "runs.db")
    begins: list[str] = []
    index.conn.set_trace_callback(lambda sql: begins.append(sql) if "BEGIN" in sql else None)
    other = sqlite3.connect(tmp_path / "runs.db", isolation_level=None)  # another program

    def attempts() -> tuple[int, str]:
        """How many times a write tried to begin, and what it said when refused."""
        begins.clear()
        try:
            index.write(lambda c: c.execute("update runs set status = status"))
        except RunsLocked as exc:
            return len(begins), str(exc)
        return len(begins), ""

    try:
        other.execute("BEGIN EXCLUSIVE")
        tries, message = attempts()
        assert tries > 1 and "(0.5 s)" in message  # retried for the whole wait
        for _ in range(3):
            tries, message = attempts()
            assert tries == 1 and "tried once, not waiting" in message  # still locked
            assert "reindex" in message
        other.execute("ROLLBACK")
        assert attempts() == (1, "")  # the lock let go: the write gets through

        other.execute("BEGIN EXCLUSIVE")
        tries, message = attempts()
        assert tries > 1 and "(0.5 s)" in message  # a new lock is waited for again
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
        index.close()
