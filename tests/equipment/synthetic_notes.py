"""Synthetic notebooks for the benchmark: many types and notes fast, and concurrent writers.

Not used by the conductor itself: bench/notebook.py imports it (and spawned writer
processes import it by name, which a script's functions cannot offer).
"""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from lessons.forms.tasktypes import materialize
from lessons.storage.store import Notebook
from lessons.write.learn import LearnOptions, learn_from_run
from record.published import example_events


class Synth:
    """Synthetic task types and notes, written straight into the notebook's tables."""

    def __init__(self, book: Notebook, seed: int = 7) -> None:
        self.book, self.rng = book, random.Random(seed)
        self.vocab = [f"w{i}" for i in range(50_000)]
        self.cumulative = list(itertools.accumulate(1 / (i + 1) for i in range(len(self.vocab))))
        self.types: list[tuple[str, list[str], list[str]]] = []
        self.notes = 0

    def question(self, template: list[str], shapes: list[str]) -> tuple[str, set[str]]:
        words = template + self.rng.choices(
            self.vocab, cum_weights=self.cumulative, k=self.rng.randint(6, 18)
        )
        numbers = [str(self.rng.randint(1, 500)) for _ in range(self.rng.randint(0, 4))]
        return " ".join(words + numbers), set(words) | set(numbers) | set(shapes)

    def grow(self, total: int) -> float:
        """Add types and notes until `total` notes; returns notes written per second.

        One transaction per type of 1,000 notes, as learning writes in small ones: a
        single transaction of 100k notes left as many pages in the write-ahead log, and
        every later read looked each page up there first (a third of recall's time).
        """
        t0, added = time.perf_counter(), total - self.notes
        conn = self.book.conn
        while self.notes < total:
            conn.execute("BEGIN")
            type_id = f"t{len(self.types):011d}"
            template = [f"k{len(self.types)}_{j}" for j in range(self.rng.randint(3, 8))]
            shapes = [
                "~scriptlatin",
                f"~len{self.rng.randint(5, 9)}",
                f"~words{self.rng.randint(1, 4)}",
            ]
            self.types.append((type_id, template, shapes))
            size = min(total - self.notes, 1000)
            conn.execute(
                "insert into task_types (id, name, description, members, created_at, updated_at) "
                "values (?, ?, '', ?, 0, 0)",
                (type_id, " ".join(template), size),
            )
            counts = {t: size for t in template + shapes}
            conn.executemany(
                "insert into type_terms (type_id, term, count) values (?, ?, ?)",
                list((type_id, t, c) for t, c in counts.items()),
            )
            conn.executemany(
                "insert into term_df (term, df) values (?, ?) "
                "on conflict(term) do update set df = df + excluded.df",
                list(counts.items()),
            )
            rows, fillers = [], Counter()
            for _ in range(size):
                text, terms = self.question(template, shapes)
                fillers.update(terms - counts.keys())
                self.notes += 1
                rows.append((
                    f"s{self.notes:011d}", type_id, "example", " ".join(template), text,
                    f"run-{self.notes}", text, "target", "correct", f"h{self.notes}", "x",
                    f"tp_{type_id} kind_example " + " ".join(sorted(terms)),
                ))  # fmt: skip
            conn.executemany(
                "insert into notes (id, type_id, kind, key, text, source_run, source_question, "
                "verification, outcome, content_hash, near_hash, terms, created_at, updated_at) "
                "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)",
                rows,
            )
            conn.execute(
                "update notebook_meta set value = value + ? where key = 'questions'", (size,)
            )
            conn.executemany(
                "insert into term_df (term, df) values (?, ?) "
                "on conflict(term) do update set df = df + excluded.df",
                list(fillers.items()),
            )
            conn.execute("COMMIT")
        conn.execute("BEGIN")
        for type_id, _, _ in self.types:
            materialize(conn, type_id)
        conn.execute("COMMIT")
        return added / (time.perf_counter() - t0)

    def fresh_question(self) -> str:
        _, template, _ = self.rng.choice(self.types)
        return self.question(template, [])[0]


def _writer(path: str, start: int, step: int, runs: int) -> None:
    from conductor.scoring.notebook import open_notebook

    book = open_notebook(path)  # a writer as the application opens one
    for k in range(start, runs, step):
        question = f"Sort the following words alphabetically: List: w{k} x{k % 7} y{k % 11}"
        code = f"def solve_{k}():\n    return {k}\n\nprint(solve_{k}())\n"
        events = example_events(f"cw-{k}", question, str(k))
        events[1:1] = _code_events(f"cw-{k}", code, str(k))
        learn_from_run(book, events, options=LearnOptions())
    book.close()


def _code_events(run_id: str, code: str, printed: str) -> list:
    from conductor_kernel.events import ExpertCallStarted, SandboxExec
    from conductor_kernel.interfaces import ExecResult

    call = ExpertCallStarted(run_id=run_id, name="Expert Python", is_python=True, round=1)
    result = ExecResult(stdout=printed + "\n", exit_code=0)
    return [call, SandboxExec(run_id=run_id, parent_id=call.id, code=code, result=result)]


def concurrent_writes(workdir: Path, writers: int, runs: int) -> dict[str, Any]:
    """`writers` processes learning `runs` runs into one notebook: rate and integrity."""
    import multiprocessing

    path = str(workdir / "concurrent.db")
    Notebook(path).close()
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_writer, args=(path, w, writers, runs)) for w in range(writers)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    seconds = time.perf_counter() - t0
    book = Notebook(path)
    learned = book.read_one("select count(*) n from distilled_runs")["n"]
    code_notes = book.read_one("select count(*) n from notes where kind = 'code'")["n"]
    ok = book.read_one("pragma integrity_check")["integrity_check"] == "ok"
    book.close()
    return {
        "writers": writers,
        "runs": runs,
        "runs_per_s": runs / seconds,
        "all_learned": learned == runs and code_notes == runs,
        "integrity_ok": ok,
    }
