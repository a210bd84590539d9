"""The fault matrix's locked-database row: runs.db held locked by another program.

A user's `sqlite3 runs.db` left in a transaction, a database browser, a backup tool:
while it holds the lock, a stop (Ctrl-C) must still end `conductor solve` at once with
the run recorded in its transcript; runs.db catches up at the next start, once the lock
is gone. Before, a write to runs.db waited inside SQLite (30 s a try, twelve tries),
where Python cannot even run a signal's handler: the Ctrl-C was ignored for minutes.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults_support import (
    EXIT,
    apply_fault,
    ending,
    index_row,
    learned_runs,
    only_transcript,
    solve,
)

pytestmark = pytest.mark.slow

HANG_S = 60  # only a hang takes this long


@pytest.fixture
def locker() -> Iterator[list[sqlite3.Connection]]:
    held: list[sqlite3.Connection] = []
    yield held
    for conn in held:
        conn.close()


def lock(path: Path, held: list[sqlite3.Connection]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    held.append(conn)
    return conn


def wait_for_event(home: Path, kind: str) -> None:
    deadline = time.monotonic() + HANG_S
    while not any(f'"kind": "{kind}"' in p.read_text() for p in home.glob("runs/*.jsonl")):
        assert time.monotonic() < deadline, f"no {kind} was recorded"
        time.sleep(0.02)


@pytest.mark.parametrize("when", ["while the run waits for the model", "while runs.db is written"])
def test_a_stop_while_another_program_holds_runs_db_ends_the_run_at_once(
    tmp_path: Path, locker: list[sqlite3.Connection], when: str
) -> None:
    home = tmp_path / "home"
    driven = solve(home, tmp_path / "work", "mid_stream")
    driven.wait_for_stage()
    held = lock(home / "runs.db", locker)
    if when == "while runs.db is written":
        driven.release.touch()  # the run answers; recording the answer in runs.db waits
        wait_for_event(home, "final_answer")
    apply_fault(driven, "SIGINT")
    code = driven.finish(timeout=HANG_S)

    assert code == EXIT["SIGINT"] and "Traceback" not in driven.stderr, driven.stderr
    assert "runs.db is locked" in driven.stderr and "reindex" in driven.stderr, driven.stderr
    finished, after = ending(only_transcript(home))
    assert set(after) <= {"run_scored"}  # the verdict (not judged) and nothing else
    expected = "answered" if when == "while runs.db is written" else "interrupted"
    assert finished.status == expected
    assert finished.run_id not in learned_runs(home)

    # The other program lets go; the next start brings runs.db up to date.
    held.rollback()
    again = solve(home, tmp_path / "again")
    assert again.finish(timeout=HANG_S) == 0, again.stderr
    assert index_row(home, finished.run_id)["status"] == expected


def test_a_stopped_batch_does_not_wait_for_a_locked_runs_db(
    tmp_path: Path, locker: list[sqlite3.Connection]
) -> None:
    import json

    from faults_support import RUN_ARGS, start, transcripts

    home = tmp_path / "home"
    task_file = tmp_path / "items.jsonl"
    items = [{"input": f"What is 6*7? ({n})", "target": "42"} for n in range(2)]
    task_file.write_text("".join(json.dumps(item) + "\n" for item in items))
    args = ["batch", str(task_file), "--scorer", "exact", "--description", "Answer.",
            "--concurrency", "1", *RUN_ARGS]  # fmt: skip
    driven = start(home, tmp_path / "work", args, stage="mid_stream")
    driven.wait_for_stage()
    held = lock(home / "runs.db", locker)
    apply_fault(driven, "SIGTERM")
    code = driven.finish(timeout=HANG_S)

    assert code == EXIT["SIGTERM"] and "Traceback" not in driven.stderr, driven.stderr
    (stopped,) = transcripts(home)
    finished, _ = ending(stopped)
    assert finished.status == "interrupted"

    held.rollback()
    again = start(home, tmp_path / "again", args)
    assert again.finish(timeout=HANG_S) == 0, again.stderr
    assert index_row(home, finished.run_id)["status"] == "interrupted"
