"""Benchmark: the notebook's recall precision on the published data, its latency, its writes.

Precision. For every task of ../shared/data/meta-prompting the first half of its records
is learned (the with-python transcripts; for tasks with none, each question of the task
file with its target, as a solved example), offline (no model), through the real write
path and without the task's name. Then every question of the second halves is recalled:
- precision@3: of the top three notes recall ranks (threshold off), the share that come
  from the same task (the ten MGSM files are one task); target >= 0.95 for every task;
- hit rate: the share of questions for which some note clears the recall threshold;
- novelty: leaving each task out of the notebook entirely, the share of its questions
  for which nothing clears the threshold; target >= 0.9.

Latency. A synthetic notebook grows to each size (default 10k, 100k, 1M notes: task types
with a template of words and shapes, questions with random particulars drawn from a
Zipf vocabulary), filled by bulk insert. At each size, recall for fresh questions of
known types: p50 and p99 of the whole recall (terms, type evidence, full-text search,
rendering); the baseline is one plain FTS5 bm25 query over all notes with the same
question's terms, timed in the same run. Write throughput: runs learned per second
through the real write path at the largest size.

Prints tables, then one JSON object with the figures as its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from notebook.learn import LearnOptions, learn_from_run  # noqa: E402
from notebook.published import example_events, read_records, record_events  # noqa: E402
from notebook.recall import RecallOptions, recall  # noqa: E402
from notebook.store import Notebook  # noqa: E402
from notebook.synthetic import Synth, concurrent_writes  # noqa: E402
from notebook.terms import fts_query, question_terms  # noqa: E402

PRECISION_TARGET = 0.95
NOVELTY_TARGET = 0.9
LATENCY_TARGET_MS = 5.0  # p50 at 100k notes
BASELINE_QUERIES = 25
console = Console(stderr=False, highlight=False)


def shared_dir() -> Path:
    env = os.environ.get("CONDUCTOR_SHARED_DIR")
    root = Path(env) if env else REPO.parent / "shared"
    return root / "data" / "meta-prompting"


def group_of(name: str) -> str:
    return "MGSM" if name.startswith("MGSM_") else name


def load_tasks(data: Path) -> dict[str, list[dict[str, Any]]]:
    """Task name -> records: the with-python transcripts, else the task file's lines."""
    tasks = {}
    for path in sorted((data / "tasks").glob("*.jsonl")):
        transcript = data / "transcripts" / "with-python" / path.name
        source = transcript if transcript.exists() else path
        records = list(read_records(source))
        for record in records:
            record["_transcript"] = source is transcript
        tasks[path.stem] = records
    return tasks


def learn_halves(book: Notebook, tasks: dict[str, list[dict]], skip: str | None) -> dict[str, str]:
    """Learn the first half of every task (but `skip`); run id -> task group."""
    owner = {}
    for name, records in tasks.items():
        if group_of(name) == skip:
            continue
        for i, record in enumerate(records[: len(records) // 2]):
            run_id = f"{name}-{i}"
            owner[run_id] = group_of(name)
            if record["_transcript"]:
                events = record_events(record, run_id)
            else:
                events = example_events(run_id, str(record["input"]), str(record["target"]))
            learn_from_run(book, events, options=LearnOptions())
    return owner


def second_halves(tasks: dict[str, list[dict]], only: str | None = None):
    for name, records in tasks.items():
        if only is None or group_of(name) == only:
            for record in records[len(records) // 2 :]:
                yield name, str(record["input"])


def precision(tasks: dict[str, list[dict]], workdir: Path) -> dict[str, Any]:
    book = Notebook(workdir / "precision.db")
    t0 = time.perf_counter()
    owner = learn_halves(book, tasks, skip=None)
    learn_s = time.perf_counter() - t0
    per_task: dict[str, dict[str, float]] = {}
    for name in tasks:
        ranked, hits, shown_same, shown_all, questions = 0.0, 0, 0, 0, 0
        for _, question in second_halves({name: tasks[name]}):
            questions += 1
            top = recall(book, question, options=RecallOptions(k=3, threshold=0.0)).candidates[:3]
            ranked += sum(owner.get(s.note["source_run"]) == group_of(name) for s in top) / 3
            shown = recall(book, question, options=RecallOptions(k=3)).shown
            hits += bool(shown)
            shown_all += len(shown)
            shown_same += sum(owner.get(s.note["source_run"]) == group_of(name) for s in shown)
        per_task[name] = {
            "questions": questions,
            "precision_at_3": ranked / questions,
            "hit_rate": hits / questions,
            "shown_precision": shown_same / shown_all if shown_all else 1.0,
        }
    stats = (
        book.read_one("select count(*) n from notes")["n"],
        book.read_one("select count(*) n from task_types")["n"],
    )
    book.close()
    return {
        "per_task": per_task,
        "runs_learned": len(owner),
        "notes": stats[0],
        "task_types": stats[1],
        "learn_runs_per_s": len(owner) / learn_s,
    }


def novelty_one(tasks: dict[str, list[dict]], group: str, workdir: Path) -> float:
    book = Notebook(workdir / f"without-{group}.db")
    learn_halves(book, tasks, skip=group)
    silent = total = 0
    for _, question in second_halves(tasks, only=group):
        total += 1
        silent += not recall(book, question, options=RecallOptions(k=3)).shown
    book.close()
    return silent / total


def novelty(tasks: dict[str, list[dict]], workdir: Path, jobs: int) -> dict[str, float]:
    groups = sorted({group_of(n) for n in tasks})
    if jobs <= 1:
        return {g: novelty_one(tasks, g, workdir) for g in groups}
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {g: pool.submit(novelty_one, tasks, g, workdir) for g in groups}
        return {g: f.result() for g, f in futures.items()}


# -- latency ------------------------------------------------------------------------------


def timed(fn: Callable[[str], object], items: list[str]) -> list[float]:
    """Milliseconds of `fn(item)` for each item."""
    out = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def fts_baseline(book: Notebook, question: str) -> None:
    """One plain bm25 search over all notes with the question's words."""
    terms = sorted(t for t in question_terms(question) if not t.startswith("~"))
    book.read(
        "select n.id from notes_fts join notes n on n.seq = notes_fts.rowid "
        "where notes_fts match ? order by notes_fts.rank limit 5",
        (fts_query(terms),),
    )


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency(sizes: list[int], queries: int, writes: int, workdir: Path) -> dict[str, Any]:
    book = Notebook(workdir / "latency.db")
    synth, out = Synth(book), {}
    for size in sizes:
        insert_rate = synth.grow(size)
        questions = [synth.fresh_question() for _ in range(queries)]
        for q in questions[:20]:
            recall(book, q)  # warm the page cache
        ours = timed(lambda q: recall(book, q), questions)
        # The baseline walks whole posting lists: a sample is enough to time it.
        base = timed(lambda q: fts_baseline(book, q), questions[:BASELINE_QUERIES])
        out[size] = {
            "recall_p50_ms": statistics.median(ours),
            "recall_p99_ms": pct(ours, 0.99),
            "fts_baseline_p50_ms": statistics.median(base),
            "ratio_p50_vs_fts": statistics.median(ours) / statistics.median(base),
            "bulk_insert_notes_per_s": insert_rate,
        }
    t0 = time.perf_counter()
    for i in range(writes):
        run = f"bench-write-{i}"
        question = synth.fresh_question()
        learn_from_run(book, example_events(run, question, str(i)), options=LearnOptions())
    out["write_runs_per_s"] = writes / (time.perf_counter() - t0)
    out["write_at_notes"] = sizes[-1]
    book.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="notes, comma-separated")
    parser.add_argument("--queries", type=int, default=300, help="recalls timed per size")
    parser.add_argument("--writes", type=int, default=200, help="runs learned for throughput")
    parser.add_argument("--jobs", type=int, default=2, help="processes for leave-one-out")
    parser.add_argument("--writers", type=int, default=8, help="concurrent writer processes")
    parser.add_argument("--runs", type=int, default=400, help="runs the concurrent writers learn")
    parser.add_argument("--skip-precision", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--keep", help="keep the notebooks in this directory")
    args = parser.parse_args()
    workdir = Path(args.keep or tempfile.mkdtemp(prefix="bench-notebook-"))
    workdir.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {}
    if not args.skip_precision:
        data = shared_dir()
        if not (data / "tasks").is_dir():
            console.print(f"[red]no published data at {data}[/]; set CONDUCTOR_SHARED_DIR")
            return 2
        tasks = load_tasks(data)
        t0 = time.perf_counter()
        result = precision(tasks, workdir)
        result["novelty"] = novelty(tasks, workdir, args.jobs)
        result["seconds"] = time.perf_counter() - t0
        figures["precision"] = result
        print_precision(result)
    if not args.skip_latency:
        sizes = [int(s) for s in args.sizes.split(",") if s]
        t0 = time.perf_counter()
        figures["latency"] = latency(sizes, args.queries, args.writes, workdir)
        figures["latency"]["concurrent"] = concurrent_writes(workdir, args.writers, args.runs)
        figures["latency"]["seconds"] = time.perf_counter() - t0
        print_latency(figures["latency"], sizes)
    figures["targets_met"] = targets_met(figures)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(figures, default=float))
    return 0


def print_precision(result: dict[str, Any]) -> None:
    table = Table(title="Recall on the published data (learn first halves, recall second halves)")
    table.add_column("task", no_wrap=True, min_width=24)
    for col in ("questions", "p@3", "hit rate", "shown p", "novelty"):
        table.add_column(col, justify="right", no_wrap=True)
    rows = list(result["per_task"].items())
    mgsm = [row for name, row in rows if group_of(name) == "MGSM"]
    if mgsm:  # the ten MGSM files are one task: their pooled row after the files
        total = sum(r["questions"] for r in mgsm)
        pooled = {
            key: sum(r[key] * r["questions"] for r in mgsm) / total
            for key in ("precision_at_3", "hit_rate", "shown_precision")
        }
        last = max(i for i, (name, _) in enumerate(rows) if group_of(name) == "MGSM")
        rows.insert(last + 1, ("MGSM (all ten)", {"questions": total, **pooled}))
    for name, row in rows:
        nov = result["novelty"].get("MGSM" if name.startswith("MGSM") else name)
        table.add_row(
            name, str(row["questions"]), f"{row['precision_at_3']:.3f}", f"{row['hit_rate']:.3f}",
            f"{row['shown_precision']:.3f}", f"{nov:.3f}" if nov is not None else "-",
        )  # fmt: skip
    console.print(table)
    console.print(
        "p@3: precision@3 (threshold off); hit rate: some note above the threshold; "
        "shown p: precision of the notes actually shown"
    )
    console.print(
        f"{result['runs_learned']} runs learned into {result['notes']} notes and "
        f"{result['task_types']} task types ({result['learn_runs_per_s']:.0f} runs/s); "
        f"novelty = share of a left-out task's questions with nothing above the threshold; "
        f"{result['seconds']:.0f} s"
    )


def print_latency(result: dict[str, Any], sizes: list[int]) -> None:
    table = Table(title="Recall latency on a synthetic notebook (ms)")
    for col in ("notes", "p50", "p99", "FTS baseline p50", "ratio", "bulk insert notes/s"):
        table.add_column(col, justify="right")
    for size in sizes:
        row = result[size]
        table.add_row(
            f"{size:,}", f"{row['recall_p50_ms']:.2f}", f"{row['recall_p99_ms']:.2f}",
            f"{row['fts_baseline_p50_ms']:.2f}", f"{row['ratio_p50_vs_fts']:.2f}",
            f"{row['bulk_insert_notes_per_s']:,.0f}",
        )  # fmt: skip
    console.print(table)
    together = result["concurrent"]
    console.print(
        f"write path: {result['write_runs_per_s']:.1f} runs/s at {result['write_at_notes']:,} "
        f"notes; {together['writers']} writer processes: {together['runs_per_s']:.1f} runs/s "
        f"together, all {together['runs']} runs learned: {together['all_learned']}, "
        f"integrity ok: {together['integrity_ok']}"
    )


def targets_met(figures: dict[str, Any]) -> dict[str, bool]:
    met = {}
    if "precision" in figures:
        p = figures["precision"]
        met["precision_at_3"] = all(
            r["precision_at_3"] >= PRECISION_TARGET for r in p["per_task"].values()
        )
        met["novelty"] = all(v >= NOVELTY_TARGET for v in p["novelty"].values())
    if "latency" in figures and 100_000 in figures["latency"]:
        met["p50_at_100k"] = figures["latency"][100_000]["recall_p50_ms"] <= LATENCY_TARGET_MS
    if "latency" in figures:
        together = figures["latency"]["concurrent"]
        met["concurrent_writers"] = together["all_learned"] and together["integrity_ok"]
    return met


if __name__ == "__main__":
    sys.exit(main())
