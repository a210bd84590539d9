"""The batch benchmark's Ray rows: the same batch in one process and on a real two-node
Ray cluster on this machine (tests/conductor/batch/ray/local_cluster.py), measured in the same run.
Used by bench/batch.py; skipped when Ray is not installed.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from batch_runs import CALLS_PER_ITEM, LATENCY_S, REPO, ROUNDS, TARGET_RATIO, run_batch, write_tasks
from rich.console import Console
from rich.table import Table

from equipment.wire_server import WireServer

RAY_ITEMS = int(os.environ.get("BENCH_BATCH_RAY_ITEMS", 400))
RAY_CONCURRENCY = int(os.environ.get("BENCH_BATCH_RAY_CONCURRENCY", 64))


def ray_beside_one_process(
    server: WireServer, root: Path, console: Console
) -> dict[str, dict[str, Any]] | None:
    """RAY_ITEMS at RAY_CONCURRENCY in one process, then on a two-node Ray cluster."""
    try:
        import ray  # noqa: F401
    except ImportError:
        from conductor.extras import install_command

        console.print(f"Ray is not installed: no Ray row ({install_command('ray')})")
        return None
    sys.path.insert(0, str(REPO / "tests" / "conductor" / "batch" / "ray"))
    from local_cluster import LocalCluster

    tasks = root / "ray-tasks.jsonl"
    write_tasks(tasks, RAY_ITEMS)
    ideal = RAY_ITEMS * CALLS_PER_ITEM * LATENCY_S / RAY_CONCURRENCY
    rows: dict[str, dict[str, Any]] = {}
    console.print(f"one process: {RAY_ITEMS} items at concurrency {RAY_CONCURRENCY} ...")
    rows["one_process"] = _row(run_batch(server, tasks, root / "home-one", RAY_CONCURRENCY), ideal)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDUCTOR_", "OPENAI_"))}
    env["CONDUCTOR_HOME"] = str(root / "ray-worker-home")
    console.print("starting a two-node Ray cluster on this machine ...")
    with LocalCluster(env=env) as cluster:
        cluster.start(workers=1)
        os.environ.update(cluster.client_env)  # the driver's token for this cluster
        console.print(f"Ray, two nodes: {RAY_ITEMS} items at concurrency {RAY_CONCURRENCY} ...")
        before = cluster.usage()
        seen: dict[int, tuple[float, float]] = {}
        done = threading.Event()

        def sample() -> None:  # workers end with the batch: keep what each last showed
            while not done.wait(0.5):
                seen.update(cluster.usage())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            report = run_batch(
                server, tasks, root / "home-ray", RAY_CONCURRENCY, ("--ray", cluster.address)
            )
        finally:
            done.set()
            sampler.join()
    row = _row(report, ideal)
    row["cluster_cpu_s"] = round(
        sum(cpu for cpu, _ in seen.values()) - sum(cpu for cpu, _ in before.values()), 1
    )
    workers = [mb for pid, (_, mb) in seen.items() if pid not in before]
    row["workers_peak_mb_sum"] = round(sum(workers), 1)
    row["items_per_node"] = sorted(w["items"] for w in report["ray"]["workers"])
    row["moved"] = len(report["ray"]["moved"])
    rows["ray_two_nodes"] = row
    return rows


def _row(report: dict[str, Any], ideal: float) -> dict[str, Any]:
    wall = report["session"]["wall_s"]
    return {
        "items": report["items"]["finished"],
        "accuracy": report["accuracy"]["percent"],
        "ideal_s": round(ideal, 2),
        "wall_s": round(wall, 2),
        "ratio_vs_ideal": round(wall / ideal, 3),
        "within_target": wall / ideal <= TARGET_RATIO and report["items"]["remaining"] == 0,
        "process_wall_s": round(report["process_wall_s"], 2),
        "driver_peak_rss_mb": report["session"]["peak_rss_mb"],
        "driver_cpu_s": round(report["process_cpu_s"], 2),
    }


def ray_table(rows: dict[str, dict[str, Any]]) -> Table:
    """Figures down, the two ways across (one process, Ray), as measured in one run."""
    table = Table(
        title=f"{RAY_ITEMS} items x {ROUNDS} rounds, {LATENCY_S:g} s a call, concurrency "
        f"{RAY_CONCURRENCY}, same run"
    )
    table.add_column("figure")
    for name in rows:
        table.add_column(name.replace("_", " "), justify="right")
    figures = [
        ("runner wall time (s)", "wall_s"),
        ("ideal (s)", "ideal_s"),
        (f"ratio vs ideal (target <= {TARGET_RATIO})", "ratio_vs_ideal"),
        ("process wall time, start-up included (s)", "process_wall_s"),
        ("driver peak memory (MB)", "driver_peak_rss_mb"),
        ("driver CPU (s)", "driver_cpu_s"),
        ("cluster CPU, workers included (s)", "cluster_cpu_s"),
        ("workers' peak memory, summed (MB)", "workers_peak_mb_sum"),
        ("items per node", "items_per_node"),
    ]
    for label, key in figures:
        cells = []
        for row in rows.values():
            value = row.get(key, "-")
            cells.append(" / ".join(map(str, value)) if isinstance(value, list) else str(value))
        table.add_row(label, *cells)
    return table
