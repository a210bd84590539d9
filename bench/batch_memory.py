"""Benchmark: a batch's peak memory as it grows, beside a small batch in the same run.

The offline demo model runs Game of 24 batches of `--sizes` items (default 1, 500 and
5,000; bench/support/puzzles.py makes the task file) at concurrency 8 with no sandbox
(what a sandbox holds lives in its own processes), each in a fresh home, learning on.
For each size: the batch process's peak resident memory (as batch.json records it),
its own memory without the file pages it maps (peak RssAnon, sampled every 50 ms: the
notebook's memory map is file pages the kernel can take back), its wall time, and the
peak over the smallest batch's; then the same sizes with
`--no-learn`, whose notebook does not grow. The goal: 5,000 items within 1.2 times the
peak of 500.

    .venv/bin/python bench/batch_memory.py [--sizes 1,500,5000]

Prints a table, then one JSON object with the figures as its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench" / "support"))

from puzzles import game_of_24_file  # noqa: E402


def _anon_kib(pid: int) -> int:
    """The process's anonymous resident memory now (RssAnon), 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    return 0


def run_batch(home: Path, items: int, *flags: str) -> dict[str, Any]:
    home.mkdir(parents=True)
    (home / "config.toml").touch()
    task = game_of_24_file(items, home)
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "CONDUCTOR_HOME": str(home),
        "CONDUCTOR_CONFIG": str(home / "config.toml"),
        "PYTHONPATH": str(REPO),
    }
    argv = [sys.executable, "-m", "conductor.cli", "batch", str(task), "--model", "demo"]
    argv += ["--concurrency", "8", "--no-python", "--json", *flags]
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.communicate(timeout=7200)))
    reader.start()
    peak_anon = 0
    while reader.is_alive():
        peak_anon = max(peak_anon, _anon_kib(process.pid))
        reader.join(0.05)
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"{items} items: conductor batch failed:\n{output[1][-2000:]}")
    (folder,) = (home / "batches").iterdir()
    sessions = json.loads((folder / "batch.json").read_text())["sessions"]
    finished = sum(1 for _ in (folder / "results.jsonl").open())
    return {
        "items": items,
        "recorded": finished,
        "peak_rss_mb": max(s["peak_rss_mb"] for s in sessions),
        # Sampled every 50 ms: the process's own memory, without the file pages it maps
        # (the notebook's memory map), which the kernel may take back at any time.
        "peak_anon_mb": round(peak_anon / 1024, 1),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,500,5000")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        rows = [run_batch(Path(tmp) / f"home-{size}", size) for size in sizes]
        # Without learning the notebook does not grow: what memory the batch's own
        # machinery keeps, apart from the notebook's page cache (up to 32 MB) and its
        # memory map, which grow with the notebook's file.
        flat = [run_batch(Path(tmp) / f"flat-{size}", size, "--no-learn") for size in sizes]
    by_size = {row["items"]: row for row in rows}
    flat_by_size = {row["items"]: row for row in flat}
    for row in rows:
        row["vs_smallest"] = round(row["peak_rss_mb"] / rows[0]["peak_rss_mb"], 2)
    ratio = flat_ratio = anon_ratio = None
    if 500 in by_size and 5000 in by_size:
        ratio = round(by_size[5000]["peak_rss_mb"] / by_size[500]["peak_rss_mb"], 2)
        flat_ratio = round(flat_by_size[5000]["peak_rss_mb"] / flat_by_size[500]["peak_rss_mb"], 2)
        anon_ratio = round(by_size[5000]["peak_anon_mb"] / by_size[500]["peak_anon_mb"], 2)
    print("demo batches, concurrency 8, no sandbox")
    print("learning | items | recorded | peak_rss_mb | peak_anon_mb | vs_smallest | wall_s")
    for label, table in (("on", rows), ("off", flat)):
        for row in table:
            print(
                f"{label} | {row['items']} | {row['recorded']} | {row['peak_rss_mb']} | "
                f"{row['peak_anon_mb']} | "
                f"{row.get('vs_smallest', '-')} | {row['wall_s']}"
            )
    print(
        f"5,000 items over 500: {ratio} learning ({anon_ratio} of its own memory, the "
        f"mapped notebook left out), {flat_ratio} not learning (goal: 1.2 or less)"
    )
    figures = {"rows": rows, "no_learn_rows": flat, "peak_5000_over_500": ratio,
               "anon_5000_over_500": anon_ratio}  # fmt: skip
    print(json.dumps({**figures, "no_learn_5000_over_500": flat_ratio, "goal": 1.2}))


if __name__ == "__main__":
    main()
