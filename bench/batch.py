"""Benchmark: the batch runner's concurrency, and resuming after a kill -9.

A local wire server (tests/equipment/wire_server.py) speaks the OpenAI Chat Completions format
with 1 s of latency before every reply; `conductor batch` runs in a subprocess with the
real `openai` SDK pointed at it (sandbox off), so what is measured is the runner.

Every item takes 4 meta rounds: rounds 1-3 each consult one expert, round 4 answers.
An item's critical path is therefore 7 model calls in a row (4 meta + 3 expert), 7 s.
With 200 items and 32 workers the ideal time is

    ideal = items x critical path / concurrency = 200 x 7 s / 32 = 43.75 s

("ceil-free": it pretends the 200 items split evenly over 32 workers; whole items do
not, so even a perfect runner needs ceil(200/32) x 7 s = 49 s, 1.12x ideal). The batch
must finish within 1.25x ideal. A measured baseline, one item alone, gives the
real critical path (7 calls plus per-call overhead) for a second ratio.

Then a kill -9 at half way: a fresh batch in a subprocess is killed once 100 items are
in its results file, and the same command is run again. The wire server's request log
shows which items were asked about after the kill: none of those finished before it
may be among them, and the results file must hold exactly one final line per item.

Then the same batch on Ray, beside one process, in the same run: 400 items of the same 4
rounds at concurrency 64, first in one process, then with `--ray` on a real two-node
cluster started on this machine (tests/conductor/batch/ray/local_cluster.py: `ray start` twice, one CPU
and an 80 MB object store each, no dashboard). The ideal is 400 x 7 s / 64 = 43.75 s
for both; the target is again 1.25x. For each row: the runner's wall time, the whole
process's wall time (Python and, for Ray, the workers' start-up included), and the
driver's peak memory and CPU seconds; for Ray also the CPU seconds of the whole cluster
(its nodes' processes, workers included, sampled from /proc during the batch) and the
summed peak memory of the processes it started for the batch. Skipped when Ray is not
installed.

Prints a table, then one JSON object (the figures) as its last line. The server's replies
and the batch subprocess are in bench/support/batch_runs.py, the Ray rows in
bench/support/batch_on_ray.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # the test equipment (wire server)
sys.path.insert(0, str(REPO / "bench" / "support"))  # batch_runs, batch_on_ray

from batch_on_ray import ray_beside_one_process, ray_table  # noqa: E402
from batch_runs import (  # noqa: E402
    CALLS_PER_ITEM,
    LATENCY_S,
    ROUNDS,
    TARGET_RATIO,
    batch_command,
    environment,
    final_lines,
    items_asked,
    responder,
    results_path,
    run_batch,
    write_tasks,
)
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from equipment.wire_server import WireServer  # noqa: E402

ITEMS = int(os.environ.get("BENCH_BATCH_ITEMS", 200))
CONCURRENCY = int(os.environ.get("BENCH_BATCH_CONCURRENCY", 32))


def kill_and_resume(server: WireServer, tasks: Path, home: Path) -> dict[str, Any]:
    env = environment(server, home)
    started_at = len(server.requests)
    first = subprocess.Popen(
        batch_command(tasks, CONCURRENCY),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and first.poll() is None:
        if len(final_lines(results_path(home))) >= ITEMS // 2:
            break
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    killed_at = len(server.requests)
    finished_before = {int(r["item_id"].split("-")[1]) for r in final_lines(results_path(home))}
    in_flight = set(items_asked(server, started_at, killed_at)) - finished_before
    resumed = run_batch(server, tasks, home, CONCURRENCY)
    asked_after = items_asked(server, killed_at)
    finals = Counter(r["item_id"] for r in final_lines(results_path(home)))
    rerun_finished = sorted(finished_before & set(asked_after))
    return {
        "finished_before_kill": len(finished_before),
        "in_flight_at_kill": len(in_flight),
        "finished_items_run_twice": len(rerun_finished),
        "items_with_one_final_line": sum(1 for c in finals.values() if c == 1),
        "items_with_several_final_lines": sum(1 for c in finals.values() if c > 1),
        "finished_after": resumed["items"]["finished"],
        "accuracy_after": resumed["accuracy"]["percent"],
        "wall_s": resumed["session"]["wall_s"],
        "ran": resumed["session"]["ran"],
    }


def main() -> int:
    console = Console(stderr=True)
    with (
        tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp,
        WireServer(responder=responder, latency_s=LATENCY_S) as server,
    ):
        # A client that dies mid-connection (the kill -9 here) resets its sockets; the
        # server would print a traceback for each. They are expected: keep them quiet.
        server._httpd.handle_error = lambda request, client_address: None  # type: ignore[union-attr]
        root = Path(tmp)
        tasks = root / "tasks.jsonl"
        write_tasks(tasks, ITEMS)
        one = root / "one.jsonl"
        write_tasks(one, 1)

        console.print("baseline: one item alone ...")
        baseline = run_batch(server, one, root / "home-baseline", 1)
        item_s = baseline["item_seconds"]["median"]

        console.print(f"throughput: {ITEMS} items at concurrency {CONCURRENCY} ...")
        before = len(server.requests)
        full = run_batch(server, tasks, root / "home-full", CONCURRENCY)
        requests = len(server.requests) - before

        console.print("kill -9 at half way, then resume ...")
        resume = kill_and_resume(server, tasks, root / "home-kill")

        ray_rows = ray_beside_one_process(server, root, console)

    ideal = ITEMS * CALLS_PER_ITEM * LATENCY_S / CONCURRENCY
    wall = full["session"]["wall_s"]
    figures = {
        "items": ITEMS,
        "concurrency": CONCURRENCY,
        "latency_s": LATENCY_S,
        "calls_per_item": CALLS_PER_ITEM,
        "requests": requests,
        "ideal_s": round(ideal, 2),
        "wall_s": round(wall, 2),
        "process_wall_s": round(full["process_wall_s"], 2),
        "ratio_vs_ideal": round(wall / ideal, 3),
        "ratio_target": TARGET_RATIO,
        "within_target": wall / ideal <= TARGET_RATIO,
        "baseline_item_s": item_s,
        "ratio_vs_measured_baseline": round(wall / (ITEMS * item_s / CONCURRENCY), 3),
        "item_s_median": full["item_seconds"]["median"],
        "item_s_p90": full["item_seconds"]["p90"],
        "accuracy": full["accuracy"]["percent"],
        "peak_rss_mb": full["session"]["peak_rss_mb"],
        **{f"resume_{key}": value for key, value in resume.items()},
    }
    if ray_rows is not None:
        figures["ray"] = ray_rows
    ray_ok = ray_rows is None or all(row["within_target"] for row in ray_rows.values())
    resume_ok = (
        figures["resume_finished_items_run_twice"] == 0
        and figures["resume_items_with_one_final_line"] == ITEMS
        and figures["resume_finished_after"] == ITEMS
    )
    figures["resume_ok"] = resume_ok

    table = Table(title=f"Batch runner: {ITEMS} items x {ROUNDS} rounds, {LATENCY_S:g} s per call")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows = [
        ("ideal time (items x 7 calls x 1 s / concurrency)", f"{ideal:.2f} s"),
        ("batch wall time", f"{wall:.2f} s"),
        ("ratio vs ideal (target <= 1.25)", f"{wall / ideal:.3f}"),
        ("process wall time (with start-up)", f"{full['process_wall_s']:.2f} s"),
        ("baseline: one item alone", f"{item_s:.2f} s"),
        ("ratio vs measured baseline", f"{figures['ratio_vs_measured_baseline']:.3f}"),
        ("item time median / p90", f"{figures['item_s_median']} / {figures['item_s_p90']} s"),
        ("model requests", str(requests)),
        ("accuracy", f"{figures['accuracy']}%"),
        ("peak memory of the batch process", f"{figures['peak_rss_mb']} MB"),
        ("kill -9 after finished items", str(resume["finished_before_kill"])),
        ("items in flight at the kill (run again)", str(resume["in_flight_at_kill"])),
        ("finished items run again after resume", str(resume["finished_items_run_twice"])),
        ("items with exactly one final result", f"{resume['items_with_one_final_line']}/{ITEMS}"),
        ("resume: items run / wall time", f"{resume['ran']} / {resume['wall_s']} s"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    Console().print(table)
    if ray_rows is not None:
        Console().print(ray_table(ray_rows))
    print(json.dumps(figures))
    return 0 if figures["within_target"] and resume_ok and ray_ok else 1


if __name__ == "__main__":
    sys.exit(main())
