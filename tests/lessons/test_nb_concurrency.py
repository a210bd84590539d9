"""Eight writer processes distilling 1,000 runs into one notebook lose nothing."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from nb_support import run_events

from conductor.scoring.notebook import open_notebook
from lessons.write.learn import learn_from_run

WRITERS = 8
RUNS = 1000
KINDS = (
    "Sort the following words alphabetically: List: {a} {b} {c}",
    "What is the checksum of the record {a}-{b}-{c}? Answer with a number.",
    "Translate the code {a} {b} {c} into Morse code, letter by letter.",
    "Compute the value of (({n} + 7) * 3) - 2 =",
)


def run_of(k: int) -> list:
    words = {"a": f"alpha{k}", "b": f"bravo{k % 97}", "c": f"charlie{k % 13}", "n": k}
    question = KINDS[k % len(KINDS)].format(**words)
    # Each program differs in more than its data, so no two runs' code notes merge.
    code = f"def solve_{k}():\n    return {k}\n\nprint(solve_{k}())\n"
    return run_events(f"run-{k:04d}", question, str(k), code=code, target=str(k))


def writer(path: str, ks: list[int]) -> None:
    book = open_notebook(path)
    for k in ks:
        learn_from_run(book, run_of(k))
    book.close()


@pytest.mark.serial
def test_eight_writers_lose_nothing_and_corrupt_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "notebook.db")
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=writer, args=(path, list(range(w, RUNS, WRITERS))))
        for w in range(WRITERS)
    ]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * WRITERS

    book = open_notebook(path)
    assert book.read_one("pragma integrity_check")["integrity_check"] == "ok"
    learned = {r["run_id"] for r in book.read("select run_id from distilled_runs")}
    assert learned == {f"run-{k:04d}" for k in range(RUNS)}
    per_run = book.read(
        "select source_run, group_concat(kind) kinds from notes "
        "where kind in ('example', 'code') group by source_run"
    )
    assert len(per_run) == RUNS
    assert all(sorted(r["kinds"].split(",")) == ["code", "example"] for r in per_run)
    # The identical procedure note of every run was counted, none lost in a race.
    support = book.read_one("select sum(support) s from notes where kind = 'procedure'")["s"]
    assert support == RUNS
    assert book.questions_seen() == RUNS
    members = book.read_one("select sum(members) s from task_types")["s"]
    assert members == RUNS
    fts = book.read_one("select count(*) n from notes_fts")["n"]
    assert fts == book.read_one("select count(*) n from notes")["n"]
