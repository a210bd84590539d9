"""Recall latency on a synthetic notebook (bench/notebook.py --only latency).

The synthetic notebook is grown 1,000 notes to a transaction, as learning writes (one
transaction of 100k notes would leave them all in the write-ahead log for every timed
read to look up). At each size: lexical recall p50/p99 over `queries` fresh questions
beside one plain FTS5 bm25 query; with the semantic extra installed, recall with the
semantic index (the question's embedding included, never cached between questions) and
the embedding alone. Wall-clock milliseconds, and the process's CPU milliseconds for
the same calls (all its threads): on a machine shared with other work the wall clock
waits for a core, the CPU time much less.

The notebook's vectors are random unit vectors (embedding 100k synthetic questions
would take most of an hour), except that each timed question has NEAR notes planted
around its own vector, at cosines from 0.5 to 0.95: the exact re-ranking, the notes'
rows and the fused kin scoring are timed too, not only a scan that finds nothing.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conductor.scoring.notebook import open_notebook
from equipment.synthetic_notes import Synth
from lessons.forms.problems import core_input
from lessons.forms.terms import fts_query, is_shape, question_terms
from lessons.read import semantic
from lessons.read.recall import RecallOptions, recall
from lessons.storage.store import Notebook
from lessons.write.learn import LearnOptions, learn_from_run
from record.published import example_events

BASELINE_QUERIES = 25
SEMANTIC_QUERIES = 100
NEAR = 8


def timed(fn: Callable[[str], object], items: list[str]) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU milliseconds of `fn(item)` for each item."""
    wall, cpu = [], []
    for item in items:
        t0, c0 = time.perf_counter(), time.process_time()
        fn(item)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return wall, cpu


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
    book = open_notebook(workdir / "latency.db")
    synth, out = Synth(book), {"load_before": os.getloadavg()}
    for size in sizes:
        insert_rate = synth.grow(size)
        questions = [synth.fresh_question() for _ in range(queries)]
        for q in questions[:20]:
            recall(book, q)  # warm the page cache
        ours, ours_cpu = timed(lambda q: recall(book, q), questions)
        # The baseline walks whole posting lists: a sample is enough to time it.
        base, _ = timed(lambda q: fts_baseline(book, q), questions[:BASELINE_QUERIES])
        out[size] = {
            "recall_p50_ms": statistics.median(ours),
            "recall_p99_ms": pct(ours, 0.99),
            "recall_cpu_p50_ms": statistics.median(ours_cpu),
            "fts_baseline_p50_ms": statistics.median(base),
            "ratio_p50_vs_fts": statistics.median(ours) / statistics.median(base),
            "bulk_insert_notes_per_s": insert_rate,
        }
        if semantic.available():
            out[size] |= semantic_latency(book, synth, questions[:SEMANTIC_QUERIES])
    t0 = time.perf_counter()
    for i in range(writes):
        run = f"bench-write-{i}"
        question = synth.fresh_question()
        learn_from_run(book, example_events(run, question, str(i)), options=LearnOptions())
    out["load_after"] = os.getloadavg()
    out["write_runs_per_s"] = writes / (time.perf_counter() - t0)
    out["write_at_notes"] = sizes[-1]
    book.close()
    return out


def semantic_latency(book: Notebook, synth: Synth, questions: list[str]) -> dict[str, Any]:
    fill_vectors(book, [semantic.embed(core_input(q, book.scoring)) for q in questions])
    fused = RecallOptions(semantic=True)
    for _ in range(5):
        recall(book, synth.fresh_question(), options=fused)  # load the vectors, warm up
    semantic.forget()  # every timed question is embedded afresh
    with_index, with_index_cpu = timed(lambda q: recall(book, q, options=fused), questions)
    embed, embed_cpu = timed(semantic.encoder().embed, questions)
    return {
        "semantic_recall_p50_ms": statistics.median(with_index),
        "semantic_recall_p99_ms": pct(with_index, 0.99),
        "semantic_recall_cpu_p50_ms": statistics.median(with_index_cpu),
        "semantic_embed_p50_ms": statistics.median(embed),
        "semantic_embed_cpu_p50_ms": statistics.median(embed_cpu),
        "semantic_encoder": semantic.encoder().name,
    }


def fill_vectors(book: Notebook, near: list[Any]) -> None:
    """A vector for every example note that has none: NEAR notes around each of `near`
    (cosines 0.5 to 0.95), random unit vectors for the rest."""
    import numpy as np

    rng = np.random.default_rng(5)
    missing = book.read(
        "select id from notes where kind = 'example' and id not in (select note_id from note_vectors)"
    )
    planted = []
    for q in near:
        for cosine in np.linspace(0.5, 0.95, NEAR):
            noise = rng.standard_normal(semantic.DIMENSIONS)
            noise -= (noise @ q) * q
            planted.append(cosine * q + np.sqrt(1 - cosine**2) * noise / np.linalg.norm(noise))
    for start in range(0, len(missing), 5000):
        chunk = missing[start : start + 5000]
        vectors = rng.standard_normal((len(chunk), semantic.DIMENSIONS))
        if start == 0:
            vectors[: len(planted)] = planted
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        book.write(lambda conn, c=chunk, v=vectors: conn.executemany(
            "insert into note_vectors (note_id, vec) values (?, ?)",
            [(row["id"], v[i].tobytes()) for i, row in enumerate(c)],
        ))  # fmt: skip


def latency_rows(result: dict[str, Any], sizes: list[int]) -> list[list[str]]:
    """One table row per size (bench/notebook.py prints them)."""
    rows = []
    for size in sizes:
        row = result[size]

        def ms(key: str, row: dict[str, Any] = row) -> str:
            return f"{row[key]:.2f}" if key in row else "-"

        rows.append([
            f"{size:,}", ms("recall_p50_ms"), ms("recall_p99_ms"), ms("recall_cpu_p50_ms"),
            ms("fts_baseline_p50_ms"), ms("ratio_p50_vs_fts"),
            f"{row['bulk_insert_notes_per_s']:,.0f}", ms("semantic_recall_p50_ms"),
            ms("semantic_recall_p99_ms"), ms("semantic_recall_cpu_p50_ms"),
            ms("semantic_embed_p50_ms"), ms("semantic_embed_cpu_p50_ms"),
        ])  # fmt: skip
    return rows


LATENCY_COLUMNS = [
    "notes", "p50", "p99", "cpu p50", "FTS p50", "ratio", "insert notes/s",
    "sem. p50", "sem. p99", "sem. cpu p50", "embed p50", "embed cpu p50",
]  # fmt: skip


def latency_real(data: Path, workdir: Path, queries: int = 300) -> dict[str, Any]:
    """Recall on a notebook learned from real transcripts: every published run (all
    tasks, meta-prompting with and without Python and the five baselines, targets
    known), asked the task files' questions (long MGSM word problems among them), in a
    fixed sample. Beside it, in the same process, one bm25 query over each question's
    eight rarest known terms (the baseline a plain full-text search gives)."""
    import random

    from conductor.methods import BASELINES, PUBLISHED_FOLDERS
    from conductor.tasks.files import read_task_file
    from record.published import published_events, read_published, without_calls

    book = open_notebook(workdir / "latency-real.db")
    root = data / "transcripts"
    folders = [
        root / "with-python",
        root / "without-python",
        *sorted((root / "baselines").glob("*")),
    ]
    learned = 0
    t0 = time.perf_counter()
    for folder in folders:
        method = PUBLISHED_FOLDERS.get(folder.name, "")
        for path in sorted(folder.glob("*.jsonl")):
            for i, record in enumerate(read_published(path).records):
                if method in BASELINES:
                    record = without_calls(record)
                run_id = f"{folder.name}:{path.stem}:{i}"
                learn_from_run(book, published_events(record, run_id=run_id, method=method))
                learned += 1
    learn_s = time.perf_counter() - t0
    questions = []
    for path in sorted((data / "tasks").glob("*.jsonl")):
        questions += [item.input for item in read_task_file(path).items]
    sample = random.Random(3).sample(questions, min(queries, len(questions)))
    for q in sample[:20]:
        recall(book, q)  # warm the page cache
    ours, ours_cpu = timed(lambda q: recall(book, q), sample)
    rarest, rarest_cpu = timed(lambda q: rarest_bm25(book, q), sample)
    notes = book.read_one("select count(*) as n from notes")
    book.close()
    return {
        "runs_learned": learned,
        "notes": notes["n"] if notes else 0,
        "learn_runs_per_s": learned / learn_s,
        "question_chars_p50": statistics.median(len(q) for q in sample),
        "recall_p50_ms": statistics.median(ours),
        "recall_p99_ms": pct(ours, 0.99),
        "recall_cpu_p50_ms": statistics.median(ours_cpu),
        "rarest_bm25_p50_ms": statistics.median(rarest),
        "rarest_bm25_p99_ms": pct(rarest, 0.99),
        "rarest_bm25_cpu_p50_ms": statistics.median(rarest_cpu),
        "load": os.getloadavg(),
    }


def rarest_bm25(book: Notebook, question: str, rarest: int = 8) -> None:
    """One bm25 query over the question's `rarest` rarest known terms."""
    terms = [t for t in question_terms(question) if not is_shape(t)]
    if not terms:
        return
    marks = ",".join("?" * len(terms))
    df = {r["term"]: r["df"] for r in book.read(
        f"select term, df from term_df where term in ({marks})", terms
    )}  # fmt: skip
    known = sorted((t for t in terms if df.get(t)), key=lambda t: (df[t], t))[:rarest]
    if known:
        book.read(
            "select n.id from notes_fts join notes n on n.seq = notes_fts.rowid "
            "where notes_fts match ? order by notes_fts.rank limit 5",
            (fts_query(known),),
        )
