"""The semantic index's speed-ups give what the plain float32 computation gives.

- the int8 scan with exact re-ranking returns the same notes, in the same order, with
  the same cosines as a float32 scan of every vector;
- the in-memory index is topped up when vectors are written;
- vectors of another encoder, of the wrong size, or missing are made again;
- a question is embedded once for recall and learning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conductor.scoring.notebook import open_notebook
from lessons.storage.store import Notebook

np = pytest.importorskip("numpy")

from lessons.read import semantic  # noqa: E402

DIM = semantic.DIMENSIONS


def unit(rows: Any) -> Any:
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def store(book: Notebook, vectors: Any, start: int = 0) -> list[str]:
    ids = [f"n{start + i:06d}" for i in range(len(vectors))]
    book.write(lambda conn: conn.executemany(
        "insert into note_vectors (note_id, vec) values (?, ?)",
        [(note_id, v.astype(np.float32).tobytes()) for note_id, v in zip(ids, vectors, strict=True)],
    ))  # fmt: skip
    return ids


def brute_force(
    ids: list[str], matrix: Any, q: Any, k: int, floor: float
) -> list[tuple[str, float]]:
    """What the index must return: a float32 scan of every vector, nearest first."""
    scores = matrix @ q
    order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), i))
    return [(ids[i], float(scores[i])) for i in order if scores[i] > floor][:k]


def neighbours(rng: Any, size: int, questions: Any) -> Any:
    """Random unit vectors, and around every question a spread of neighbours whose
    cosines fall on both sides of the floor, a few exact duplicates among them."""
    rows = [rng.standard_normal((size, DIM))]
    for q in questions:
        for mix in np.linspace(0.45, 0.98, 24):
            noise = unit(rng.standard_normal(DIM))
            rows.append([mix * q + np.sqrt(1 - mix * mix) * noise])
        rows.append([q, q])  # duplicates: equal cosines, told apart by the order written
    return unit(np.concatenate(rows))


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_the_int8_scan_returns_what_a_float32_scan_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    monkeypatch.setattr(semantic, "PARALLEL_FROM", 1000 if threads == 2 else 10**9)
    rng = np.random.default_rng(3)
    questions = unit(rng.standard_normal((12, DIM)))
    matrix = neighbours(rng, 4000, questions[:8])  # four questions have no neighbours
    book = open_notebook(tmp_path / "nb.db")
    ids = store(book, matrix)
    index = semantic.VectorIndex()
    for q in questions:
        for k, floor in ((10, 0.6), (5, 0.6), (3, 0.9), (10, -1.0), (1, 0.0)):
            got = index.nearest(book, q, k, floor=floor)
            want = brute_force(ids, matrix, q, k, floor)
            assert [i for i, _ in got] == [i for i, _ in want]
            assert np.allclose([c for _, c in got], [c for _, c in want], atol=1e-6)
    assert index.size == len(ids)
    book.close()


def test_a_code_is_never_further_from_its_vector_than_it_says() -> None:
    rng = np.random.default_rng(5)
    vectors = unit(rng.standard_normal((2000, DIM)) * rng.uniform(0.1, 3, (2000, 1)))
    vectors[:10, :5] = 0.9  # a few spiky vectors: a coarse scale
    vectors = unit(vectors)
    codes, scales, slack = semantic.quantize(vectors)
    for q in unit(rng.standard_normal((50, DIM))):
        exact = vectors @ q
        guess = (codes.astype(np.float32) @ q) * scales
        assert (np.abs(exact - guess) <= slack).all()
    assert float(slack.max()) < 0.02  # tight enough to leave few notes to re-rank


def test_the_index_is_topped_up_when_vectors_are_written(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    book = open_notebook(tmp_path / "nb.db")
    first = unit(rng.standard_normal((300, DIM)))
    store(book, first)
    index = semantic.VectorIndex()
    q = unit(rng.standard_normal(DIM))
    assert index.nearest(book, q, 3, floor=0.9) == []
    assert index.size == 300
    (new_id,) = store(book, unit([q + 0.01 * rng.standard_normal(DIM)]), start=300)
    book.write(lambda conn: conn.execute(
        "insert into note_vectors (note_id, vec) values ('broken', ?)", (b"\0" * 16,)
    ))  # fmt: skip
    near = index.nearest(book, q, 3, floor=0.9)
    assert [i for i, _ in near] == [new_id]
    assert index.size == 301  # read the new rows only; the blob of the wrong size skipped
    assert index.nearest(book, q, 3, floor=0.9) == near  # nothing new: nothing read
    book.close()


needs_model = pytest.mark.skipif(
    not semantic.available(), reason="the notebook's semantic extra is not installed"
)


@needs_model
def test_a_question_is_embedded_once_for_recall_and_for_learning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lessons.read.recall import RecallOptions, recall
    from lessons.write.learn import LearnOptions, learn_from_run
    from record.published import example_events

    real = semantic.encoder()
    embedded: list[str] = []

    class Counting:
        def embed(self, text: str) -> Any:
            embedded.append(text)
            return real.embed(text)

    monkeypatch.setattr(semantic, "encoder", Counting)
    semantic.forget()
    book = open_notebook(tmp_path / "nb.db")
    question = "A baker sells 14 loaves each morning at 3 dollars. What does she earn daily?"
    recall(book, question, options=RecallOptions(semantic=True))
    learn_from_run(book, example_events("r0", question, "42"), options=LearnOptions(semantic=True))
    assert embedded == [question]
    stored = book.read_one("select vec from note_vectors")["vec"]
    assert stored == real.embed(question).tobytes()
    semantic.forget()
    book.close()


@needs_model
def test_an_older_notebook_gets_vectors_of_this_encoder_when_the_index_opens(
    tmp_path: Path,
) -> None:
    """Notes learned with the index off, a vector of the wrong size (the encoder before
    this one made 384) and a notebook whose vectors another encoder made: each question
    is embedded again, once, and found."""
    from lessons.read.recall import RecallOptions, recall
    from lessons.write.learn import LearnOptions, learn_from_run
    from record.published import example_events

    questions = {
        "r0": "A farmer keeps hens that lay a dozen eggs daily; she sells them all. How much "
        "money does she make in a week at two dollars each?",
        "r1": "A train leaves the station at noon and travels west at sixty miles per hour.",
        "r2": "Sort the following words alphabetically: List: pear apple fig",
    }
    path = tmp_path / "nb.db"
    book = open_notebook(path)
    for run, question in questions.items():
        learn_from_run(book, example_events(run, question, "1"), options=LearnOptions())
    assert book.read_one("select count(*) c from note_vectors")["c"] == 0  # learned lexically
    note_of = {r["source_run"]: r["id"] for r in book.read("select id, source_run from notes")}
    book.write(lambda conn: conn.execute(
        "insert into note_vectors (note_id, vec) values (?, ?)", (note_of["r1"], bytes(384 * 4))
    ))  # fmt: skip
    assert semantic.index_every_example(book) == 3
    assert semantic.index_every_example(book) == 0  # once
    for run, question in questions.items():
        stored = book.read_one("select vec from note_vectors where note_id = ?", (note_of[run],))
        assert stored["vec"] == semantic.vector_blob(question)

    # Another encoder's vectors, same size: all dropped and made again by this one.
    book.write(lambda conn: conn.execute("update note_vectors set vec = ?", (bytes(DIM * 4),)))
    book.write(lambda conn: conn.execute(
        "update notebook_meta set value = 'another-encoder' where key = 'vector_encoder'"
    ))  # fmt: skip
    book.close()
    book = open_notebook(path)  # a new process: the index opens afresh
    asked = "Eggs from her chickens, twelve every day, are all sold by a farmer at $2 apiece: her weekly income?"
    shown = recall(book, asked, options=RecallOptions(semantic=True)).shown
    assert shown and shown[0].note["source_run"] == "r0"
    rows = book.read("select vec from note_vectors")
    assert len(rows) == 3 and all(r["vec"] != bytes(DIM * 4) for r in rows)
    meta = book.read_one("select value from notebook_meta where key = 'vector_encoder'")
    assert meta["value"] == semantic.encoder().name
    book.close()
