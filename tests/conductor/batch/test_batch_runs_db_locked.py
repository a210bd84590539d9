"""A batch while another real process holds runs.db locked.

runs.db is an index derived from the transcripts, which are the record. So a lock on it
never changes a grade: held for less than the write wait (`WRITE_WAIT_S`), the batch
waits and indexes every run as it goes; held beyond it, the runs whose entries could
not be written end `error` with cause `storage` and are left out of accuracy; only the
first write waits the whole time, five such errors in a row stop the batch with what to
do, and `--retry-errors` runs exactly them (and what the stop left) again. Either way `conductor runs reindex` afterwards
restores every run from its transcript, nothing recorded is lost, and no traceback is
printed. The lock is real: a second Python process holds `BEGIN EXCLUSIVE` on the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from batch_support import batch_folder, results, write_jsonl

from conductor.cli import main
from transcripts.index import RunIndex

WORDS = [
    "pear apple fig",
    "syndrome therefrom",
    "zebra yak xenon walrus",
    "delta alpha charlie bravo",
    "moss fern lichen",
    "onyx jade amber",
]
# The demo sorts words with Python off: no sandbox and no key are needed.
ARGS = ["--task", "word_sorting", "--model", "demo", "--no-python", "--no-recall", "--no-learn"]

# Holds runs.db in an exclusive transaction, printing "locked" once it holds it. With a
# folder named, it lets go 1 s after a transcript appears under it (a run has started,
# so the batch is waiting on the lock); else when a line comes on stdin.
HOLDER = """
import glob, sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
if sys.argv[2]:
    while not glob.glob(sys.argv[2] + "/batches/*/runs/*.jsonl"):
        time.sleep(0.05)
    time.sleep(1.0)
else:
    sys.stdin.readline()
conn.execute("COMMIT")
conn.close()
print("released", flush=True)
"""


def word_tasks(path: Path) -> Path:
    rows: list[dict[str, Any] | str] = []
    for n, words in enumerate(WORDS):
        question = f"Sort the following words alphabetically: List: {words}"
        rows.append({"id": f"w{n}", "input": question, "target": " ".join(sorted(words.split()))})
    return write_jsonl(path, rows)


@contextmanager
def runs_db_held(path: Path, until_run_in: Path | None) -> Iterator[subprocess.Popen[str]]:
    """Another process holding runs.db locked: until a run has started under the home
    `until_run_in` (and 1 s more), or else until leaving."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(until_run_in or "")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        if holder.poll() is None and holder.stdin is not None:
            holder.stdin.write("release\n")
            holder.stdin.flush()
        try:
            holder.wait(timeout=60)
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()


def batch(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code = main(["batch", *args, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def indexed(db: Path) -> set[str]:
    return {str(row["run_id"]) for row in RunIndex(db).list_runs(limit=None)}


# The long hold runs a second session (--retry-errors): the full tier.
@pytest.mark.parametrize("held", ["short", pytest.param("long", marks=pytest.mark.slow)])
def test_a_locked_runs_db_never_changes_a_grade_and_reindex_restores_every_run(
    held: str,
    tmp_path: Path,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = word_tasks(tmp_path / "words.jsonl")
    db = isolated_home / "runs.db"
    RunIndex(db).close()  # runs.db exists and is migrated: the holder only locks it
    if held == "short":
        # Held until a run is waiting on it, and 1 s more: well under the write wait
        # (kept at 120 s, so that a bug fails rather than hangs).
        monkeypatch.setattr("record.migrations.WRITE_WAIT_S", 120.0)
        until: Path | None = isolated_home
    else:
        # Held until the batch has ended: far beyond the write wait.
        monkeypatch.setattr("record.migrations.WRITE_WAIT_S", 1.0)
        until = None
    with runs_db_held(db, until):
        code, report, err = batch([str(tasks), *ARGS, "--concurrency", "3"], capsys)
    assert "Traceback" not in err
    folder = batch_folder(isolated_home)
    rows = results(folder)
    transcripts = {p.stem for p in (folder / "runs").glob("*.jsonl")}
    assert transcripts == {r["run_id"] for r in rows}  # every run is recorded

    final = [r for r in rows if r.get("final")]
    answered = [r for r in final if r["status"] == "answered"]
    errors = [r for r in final if r["status"] == "error"]
    assert len(answered) + len(errors) == len(final), final
    # A lock never grades: every answer is right, and every error is storage's.
    assert all(r["score"]["correct"] for r in answered), answered
    assert all(r["error"]["cause"] == "storage" for r in errors), errors
    assert report["accuracy"]["scored"] == len(answered)
    assert report["accuracy"]["correct"] == len(answered)
    assert report["failures"]["error"] == len(errors)
    assert report["errors_by_cause"] == ({"storage": len(errors)} if errors else {})
    listed = {e["item_id"] for e in report["failure_examples"] if e["kind"] == "error"}
    assert listed == {r["item_id"] for r in errors}
    if held == "short":
        assert code == 0 and len(answered) == len(WORDS) == len(rows)
        assert indexed(db) == transcripts  # the batch waited and indexed as it went
    else:
        # Every run's entry failed: five such errors in a row stop the batch, with what
        # to do. Only the first write waited the whole time; the rest tried once each
        # (waiting again for every event held a batch for hours).
        assert not answered and len(errors) >= 5, final
        messages = [r["error"]["message"] for r in errors]
        assert all("runs.db" in m and "locked by another program" in m for m in messages)
        assert sum("(1 s)" in m for m in messages) <= 1, messages
        assert code == 2 and "--retry-errors" in err and "runs reindex" in err

    # Afterwards the index is rebuilt from the transcripts: every run is there.
    assert main(["runs", "reindex"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert transcripts <= indexed(db)

    if held == "long":
        # The lock is gone: --retry-errors runs the storage errors (and any item the
        # stop left unfinished) again, and every answer is graded.
        unfinished = {r["item_id"] for r in final} ^ {f"w{n}" for n in range(len(WORDS))}
        code, report, err = batch([str(tasks), *ARGS, "--retry-errors"], capsys)
        again = [r for r in results(folder)[len(rows) :] if r.get("final")]
        ran = {r["item_id"] for r in again}
        assert ran == {r["item_id"] for r in errors} | unfinished
        assert all(r["status"] == "answered" and r["score"]["correct"] for r in again)
        assert code == 0 and report["accuracy"]["correct"] == len(WORDS)
        assert report["failures"]["error"] == 0 and "Traceback" not in err
        assert {r["run_id"] for r in again} <= indexed(db)  # indexed as they ran
