"""Several processes recording runs at once into one runs.db and one notebook.

Before: eight processes opening a fresh runs.db failed 16 times in 20 trials
("could not migrate (database is locked)"), and a deferred write that could not upgrade
to a write lock killed the run. Now opening is serialised, writes are immediate
transactions, and every sink is isolated.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faults_support import RUN_ARGS, env_for, start

pytestmark = pytest.mark.serial

WRITER = Path(__file__).with_name("concurrent_runs.py")


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("pragma integrity_check").fetchone()[0]
    finally:
        conn.close()


def count(path: Path, sql: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def run_writers(home: Path, work: Path, processes: int, runs: int) -> list[dict]:
    work.mkdir(parents=True)
    go = work / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), str(home), str(runs), str(go)],
            env=env_for(home, work),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    time.sleep(0.5)  # let every process import and wait at the line
    go.touch()  # all of them open the fresh files at once
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert "Traceback" not in err, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def check_all_recorded(home: Path, reports: list[dict], expected: int) -> None:
    problems = [p for r in reports for p in r["problems"]]
    assert problems == []
    run_ids = {run for r in reports for run in r["runs"]}
    assert len(run_ids) == expected
    assert integrity(home / "runs.db") == "ok"
    assert integrity(home / "notebook.db") == "ok"
    conn = sqlite3.connect(home / "runs.db")
    try:
        indexed = dict(conn.execute("select run_id, status from runs").fetchall())
    finally:
        conn.close()
    assert set(indexed) == run_ids
    assert set(indexed.values()) == {"answered"}
    assert count(home / "notebook.db", "select count(*) from distilled_runs") == expected


def test_four_processes_on_fresh_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    reports = run_writers(home, tmp_path / "work", processes=4, runs=25)
    check_all_recorded(home, reports, 4 * 25)


def test_eight_processes_times_200_runs_on_fresh_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    reports = run_writers(home, tmp_path / "work", processes=8, runs=200)
    check_all_recorded(home, reports, 8 * 200)


def test_a_batch_runs_while_a_reader_reads_and_solve_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    task_file = tmp_path / "items.jsonl"
    items = [{"input": f"What is 6*7? ({n})", "target": "42"} for n in range(12)]
    task_file.write_text("".join(json.dumps(item) + "\n" for item in items))
    batch = start(
        home,
        tmp_path / "batch",
        ["batch", str(task_file), "--scorer", "exact", "--description", "Answer.",
         "--concurrency", "3", *RUN_ARGS],
    )  # fmt: skip
    # A reader, as the TUI's Runs and Notebook screens read, over and over.
    reader = start(home, tmp_path / "reader", ["runs", "list", "--json", "--limit", "500"])
    solves = [start(home, tmp_path / f"solve{n}", ["solve", f"What is {n}*7?", *RUN_ARGS])
              for n in range(4)]  # fmt: skip
    readers_done = 0
    while batch.proc.poll() is None or readers_done < 3:
        assert reader.finish() == 0, reader.stderr
        assert "Traceback" not in reader.stderr
        readers_done += 1
        reader = start(home, tmp_path / f"reader{readers_done}", ["notebook", "list"])
    reader.finish()
    assert batch.finish() == 0, batch.stderr
    for solve in solves:
        assert solve.finish() == 0, solve.stderr
        assert "Traceback" not in solve.stderr
    assert integrity(home / "runs.db") == "ok"
    assert integrity(home / "notebook.db") == "ok"
    statuses = [s for (s,) in sqlite3.connect(home / "runs.db").execute("select status from runs")]
    assert statuses == ["answered"] * (len(items) + len(solves))
