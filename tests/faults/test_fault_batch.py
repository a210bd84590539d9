"""The fault matrix's batch row: a stop during a batch item, then the batch resumed.

The item in flight ends recorded (its transcript ends with `run_final` interrupted, its
results line is not final, so the same command runs it again); kill -9 leaves the item
`running` in runs.db until the next batch start repairs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from faults_support import (
    EXIT,
    FAULTS,
    RUN_ARGS,
    apply_fault,
    ending,
    index_row,
    learned_runs_in,
    start,
    transcripts,
)

pytestmark = pytest.mark.slow

ITEMS = [{"input": f"What is 6*7? ({n})", "target": "42"} for n in range(3)]


def batch_args(task_file: Path) -> list[str]:
    return [
        "batch", str(task_file), "--scorer", "exact", "--description", "Answer.",
        "--concurrency", "1", *RUN_ARGS,
    ]  # fmt: skip


def results(home: Path) -> list[dict]:
    found = list(home.rglob("results.jsonl"))
    if not found:
        return []
    (path,) = found
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("fault", FAULTS)
def test_a_stop_during_a_batch_item_is_recorded_and_resumed(tmp_path: Path, fault: str) -> None:
    home = tmp_path / "home"
    task_file = tmp_path / "items.jsonl"
    task_file.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    driven = start(home, tmp_path / "work", batch_args(task_file), stage="expert")
    driven.wait_for_stage()
    apply_fault(driven, fault)
    code = driven.finish()

    found = sorted(transcripts(home), key=lambda t: t.started.ts)
    # The first item, stopped in its expert call (with SIGPIPE the batch went on).
    assert len(found) == (len(ITEMS) if fault == "SIGPIPE" else 1)
    item_run = found[0]
    assert item_run.problem is None
    run_id = item_run.started.run_id
    if fault == "KILL":
        assert item_run.finished is None
        assert index_row(home, run_id)["status"] == "running"
        assert not [r for r in results(home) if r.get("final")]
    else:
        assert "Traceback" not in driven.stderr, driven.stderr
        assert code == EXIT[fault], (code, driven.stderr)
        finished, _ = ending(item_run)
        if fault == "SIGPIPE":  # nothing stopped the batch: only its report went unread
            assert finished.status == "answered"
        else:
            assert finished.status == "interrupted"
            assert index_row(home, run_id)["status"] == "interrupted"
            (record,) = [r for r in results(home) if r["run_id"] == run_id]
            assert record["status"] == "interrupted" and not record["final"]
            assert record["usage"]["calls"] == finished.usage.calls == 1

    # The same command again: the batch resumes and every item ends, answered.
    again = start(home, tmp_path / "again", batch_args(task_file))
    assert again.finish() == 0, again.stderr
    assert "Traceback" not in again.stderr
    final = {r["item_id"]: r for r in results(home) if r.get("final")}
    assert len(final) == len(ITEMS)
    assert {r["status"] for r in final.values()} == {"answered"}
    # A killed item was repaired to interrupted by the next start; nothing was lost.
    row = index_row(home, run_id)
    assert row["status"] in ("interrupted", "answered")
    repaired = next(t for t in transcripts(home) if t.started.run_id == run_id)
    assert repaired.finished is not None
    assert repaired.events[: len(item_run.events)] == item_run.events


@pytest.mark.parametrize("fault", ["SIGINT", "SIGTERM"])
def test_a_stop_while_a_batch_item_learns_keeps_its_answer_and_learns_nothing(
    tmp_path: Path, fault: str
) -> None:
    home = tmp_path / "home"
    task_file = tmp_path / "items.jsonl"
    task_file.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    driven = start(home, tmp_path / "work", batch_args(task_file), stage="learning")
    driven.wait_for_stage()
    apply_fault(driven, fault)
    driven.release.touch()  # the learning call in flight returns; learning then sees the stop
    code = driven.finish()

    assert "Traceback" not in driven.stderr, driven.stderr
    assert code == EXIT[fault], (code, driven.stderr)
    (item_run,) = transcripts(home)
    finished, after = ending(item_run)
    assert finished.status == "answered"
    assert "notes_written" not in after
    learned = set()
    for book in home.rglob("*.db"):
        if book.name != "runs.db":
            learned |= learned_runs_in(book)
    assert finished.run_id not in learned
