"""Benchmark: what a sandbox costs a batch item, beside the same batch with no sandbox.

The offline demo model runs `--items` Game of 24 puzzles (the task file's 100, then the
same puzzles with their numbers reordered) at `--concurrency`,
learning on (its checks start sandboxes too), each batch in a fresh home, in this order:
`--no-python` (the baseline: no code, no sandbox), then bubblewrap and Docker where they
work here. Each row gives the batch's wall time, the wall per item (wall / items), its
ratio to the baseline's, the median cell (the sandboxed program's own run, from the
transcripts), the items right, and how long items waited before their run began (a
cell, a sandbox start). `--tree PATH` runs another checkout's code the same way (an
earlier commit, for a before/after beside the same baseline).

    .venv/bin/python bench/sandboxed_batch.py [--items 200] [--concurrency 8] [--tree PATH]

Prints a table, then one JSON object with the figures as its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "support"))

from puzzles import GAME_OF_24, game_of_24_file  # noqa: E402

MODES = {
    "no-python": ["--no-python"],
    "bwrap": ["--sandbox", "bwrap"],
    "docker": ["--sandbox", "docker"],
}


def run_batch(tree: Path, home: Path, task: Path, items: int, concurrency: int, mode: str) -> float:
    """Seconds the whole `conductor batch` took (it must succeed)."""
    config = home / "config.toml"
    home.mkdir(parents=True)
    config.touch()
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "CONDUCTOR_HOME": str(home),
        "CONDUCTOR_CONFIG": str(config),
        "PYTHONPATH": str(tree),
    }
    argv = [sys.executable, "-m", "conductor.cli", "batch", str(task), "--model", "demo"]
    argv += ["--limit", str(items), "--concurrency", str(concurrency), "--json", *MODES[mode]]
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{mode}: conductor batch failed ({done.returncode}):\n{done.stderr[-2000:]}"
        )
    return elapsed


def read_batch(home: Path) -> dict[str, Any]:
    """Cells, waits and verdicts, from the batch's own records."""
    (folder,) = (home / "batches").iterdir()
    records = [json.loads(line) for line in (folder / "results.jsonl").open()]
    cells: list[float] = []
    waits: list[float] = []
    for record in records:
        events = [json.loads(line) for line in (folder / record["transcript"]).open()]
        started = next(e["ts"] for e in events if e["kind"] == "run_started")
        waits.append(started - (record["finished_at"] - record["duration_s"]))
        cells += [e["result"]["duration_s"] for e in events if e["kind"] == "sandbox_exec"]
    right = sum(bool((r.get("score") or {}).get("correct")) for r in records)
    return {
        "items": len(records),
        "right": right,
        "cells": len(cells),
        "cell_p50_ms": round(statistics.median(cells) * 1000, 1) if cells else None,
        "wait_p50_s": round(statistics.median(waits), 3),
    }


def available(mode: str) -> str | None:
    if mode == "no-python":
        return None
    from sandbox.registry import probe

    return probe(mode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout whose code runs")
    parser.add_argument("--task", type=Path, default=GAME_OF_24)
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    if not args.task.exists():
        raise SystemExit(f"{args.task} is missing: the shared data sits beside the checkout")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-sandboxed-") as tmp:
        task = game_of_24_file(args.items, Path(tmp), args.task)
        for mode in args.modes.split(","):
            problem = available(mode)
            if problem is not None:
                rows.append({"mode": mode, "skipped": problem})
                continue
            home = Path(tmp) / mode
            wall = run_batch(args.tree.resolve(), home, task, args.items, args.concurrency, mode)
            rows.append({"mode": mode, "wall_s": round(wall, 2), **read_batch(home)})
    base = next(r for r in rows if r["mode"] == "no-python")
    for row in rows:
        if "wall_s" in row:
            row["per_item_s"] = round(row["wall_s"] / row["items"], 3)
            row["vs_no_python"] = round(row["wall_s"] / base["wall_s"], 2)
    header = ("mode", "items", "right", "wall_s", "per_item_s", "vs_no_python", "cell_p50_ms",
              "wait_p50_s")  # fmt: skip
    print(
        f"{args.items} GameOf24 items, demo model, concurrency {args.concurrency}, tree {args.tree}"
    )
    print(" | ".join(header))
    for row in rows:
        if "skipped" in row:
            print(f"{row['mode']} | skipped: {row['skipped']}")
        else:
            print(" | ".join(str(row.get(key, "-")) for key in header))
    print(json.dumps({"items": args.items, "concurrency": args.concurrency,
                      "tree": str(args.tree), "rows": rows, "goal_vs_no_python": 1.5}))  # fmt: skip


if __name__ == "__main__":
    main()
