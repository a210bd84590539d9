"""How fast published records replay through our conductor, with and without the sandbox.

Replays every with-python file twice in the same run: first without running code (the
baseline: parser, loop and replay model alone), then with the recorded code run again
in a sandbox (`--sandbox`, default auto). Prints a table per pass and file, then one
JSON object with records per second, per-record latency, and the ratio between the two.

    .venv/bin/python bench/replay.py [--sandbox auto|docker|bwrap|subprocess] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from conductor.cli.replay import sandbox_factory  # noqa: E402
from conductor.replay.runner import FileReport, SandboxPool, replay_file  # noqa: E402


def with_python_files() -> list[Path]:
    env = os.environ.get("CONDUCTOR_SHARED_DIR")
    root = (Path(env) if env else REPO.parent / "shared") / "data" / "meta-prompting"
    files = sorted((root / "transcripts" / "with-python").glob("*.jsonl"))
    if not files:
        sys.exit(f"no published transcripts under {root}; set CONDUCTOR_SHARED_DIR")
    return files


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def run_pass(files: list[Path], sandbox: str, limit: int | None, jobs: int) -> dict:
    backend, factory = sandbox_factory(sandbox)
    pool = SandboxPool(factory)
    started = time.perf_counter()
    try:
        reports: list[FileReport] = [
            replay_file(path, pool, limit=limit, jobs=jobs) for path in files
        ]
    finally:
        pool.close()
    wall = time.perf_counter() - started
    seconds = [s for r in reports for s in r.record_seconds]
    records = sum(r.records for r in reports)
    return {
        "backend": backend,
        "reports": reports,
        "records": records,
        "wall_s": wall,
        "records_per_s": records / wall,
        "ms_median": 1000 * statistics.median(seconds),
        "ms_p90": 1000 * percentile(seconds, 0.9),
        "faithful": sum(r.same_answer_and_calls for r in reports),
        "sandbox_compared": sum(r.sandbox_compared for r in reports),
        "sandbox_identical": sum(r.sandbox_outputs_identical for r in reports),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", default="auto", help="backend for the second pass")
    parser.add_argument("--limit", type=int, help="records per file (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="records replayed at a time")
    args = parser.parse_args()
    files = with_python_files()
    baseline = run_pass(files, "none", args.limit, args.jobs)
    measured = run_pass(files, args.sandbox, args.limit, args.jobs)

    table = Table(
        title=f"Replaying published runs ({args.jobs} at a time)",
        caption="sandbox start-up is counted once per pass, in the first records' time",
    )
    for column in (
        "pass",
        "file",
        "records",
        "records/s",
        "ms/record median",
        "ms/record p90",
        "same answer+calls",
        "sandbox same",
    ):
        table.add_column(column, justify="left" if column in ("pass", "file") else "right")
    for name, figures in (("no code (baseline)", baseline), (measured["backend"], measured)):
        for report in figures["reports"]:
            seconds = report.record_seconds
            table.add_row(
                name,
                Path(report.file).stem,
                str(report.records),
                f"{report.records / report.duration_s:.1f}",
                f"{1000 * statistics.median(seconds):.0f}",
                f"{1000 * percentile(seconds, 0.9):.0f}",
                f"{report.same_answer_and_calls}/{report.records}",
                f"{report.sandbox_outputs_identical}/{report.sandbox_compared}"
                if figures is measured
                else "-",
            )
        table.add_row(
            name,
            "[bold]all[/]",
            str(figures["records"]),
            f"[bold]{figures['records_per_s']:.1f}[/]",
            f"{figures['ms_median']:.0f}",
            f"{figures['ms_p90']:.0f}",
            f"{figures['faithful']}/{figures['records']}",
            f"{figures['sandbox_identical']}/{figures['sandbox_compared']}"
            if figures is measured
            else "-",
            end_section=True,
        )
    Console(width=max(Console().width, 120)).print(table)
    print(
        json.dumps(
            {
                "bench": "replay",
                "records": measured["records"],
                "jobs": args.jobs,
                "sandbox": measured["backend"],
                "records_per_s": round(measured["records_per_s"], 2),
                "ms_per_record_median": round(measured["ms_median"], 1),
                "ms_per_record_p90": round(measured["ms_p90"], 1),
                "baseline_records_per_s": round(baseline["records_per_s"], 2),
                "baseline_ms_per_record_median": round(baseline["ms_median"], 1),
                "baseline_ms_per_record_p90": round(baseline["ms_p90"], 1),
                "ratio_vs_baseline": round(
                    measured["records_per_s"] / baseline["records_per_s"], 3
                ),
                "same_answer_and_calls": measured["faithful"],
                "sandbox_outputs_identical": measured["sandbox_identical"],
                "sandbox_compared": measured["sandbox_compared"],
            }
        )
    )


if __name__ == "__main__":
    main()
