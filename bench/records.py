"""Benchmark: runs recorded by many processes at once into one runs.db and one notebook.

Each trial starts P processes on fresh files (tests/faults/concurrent_runs.py: a real
Session with a scripted model, the real runs index and notebook learning), releases
them at the same moment, and counts runs that ended recorded, failures of any kind
(crashed processes, failed writes, runs not indexed) and runs per second. The baseline
is one process doing the same number of runs in the same invocation. Timings depend on
the machine's load; the failure counts do not.

    .venv/bin/python bench/records.py [--processes 8] [--runs 200] [--trials 3]

Prints a table, then one JSON object with the figures as its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WRITER = REPO / "tests" / "faults" / "concurrent_runs.py"


def trial(processes: int, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        home, go = Path(tmp) / "home", Path(tmp) / "go"
        config = Path(tmp) / "config.toml"
        config.touch()
        env = {**os.environ, "CONDUCTOR_HOME": str(home), "CONDUCTOR_CONFIG": str(config)}
        procs = [
            subprocess.Popen(
                [sys.executable, str(WRITER), str(home), str(runs), str(go)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(processes)
        ]
        time.sleep(1.0)  # every process imported and waiting
        started = time.monotonic()
        go.touch()
        done, failures = set(), 0
        for proc in procs:
            out, _ = proc.communicate()
            lines = out.strip().splitlines()
            if proc.returncode != 0 or not lines:
                failures += runs  # the whole process was lost
                continue
            report = json.loads(lines[-1])
            done |= set(report["runs"])
            failures += len(report["problems"])
        wall = time.monotonic() - started
        conn = sqlite3.connect(home / "runs.db")
        indexed = {r for (r,) in conn.execute("select run_id from runs where status='answered'")}
        integrity = conn.execute("pragma integrity_check").fetchone()[0]
        conn.close()
        return {
            "runs": processes * runs,
            "recorded": len(done & indexed),
            "failures": failures + len(done - indexed),
            "integrity_ok": integrity == "ok",
            "runs_per_s": len(done) / wall,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for label, processes, runs in (
        ("baseline: 1 process", 1, args.runs * args.processes),
        (f"{args.processes} processes at once", args.processes, args.runs),
    ):
        results = [trial(processes, runs) for _ in range(args.trials)]
        rows.append(
            {
                "case": label,
                "runs": sum(r["runs"] for r in results),
                "recorded": sum(r["recorded"] for r in results),
                "failures": sum(r["failures"] for r in results),
                "integrity_ok": all(r["integrity_ok"] for r in results),
                "runs_per_s": round(sum(r["runs_per_s"] for r in results) / len(results), 1),
            }
        )
    print(
        f"{'case':<28} {'runs':>7} {'recorded':>9} {'failures':>9} {'integrity':>10} {'runs/s':>8}"
    )
    for row in rows:
        print(
            f"{row['case']:<28} {row['runs']:>7} {row['recorded']:>9} {row['failures']:>9} "
            f"{'ok' if row['integrity_ok'] else 'BAD':>10} {row['runs_per_s']:>8}"
        )
    print(json.dumps({"trials": args.trials, "cases": rows}))


if __name__ == "__main__":
    main()
