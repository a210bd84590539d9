"""The optional semantic index (skips when the `semantic` extra is not installed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conductor.scoring.notebook import open_notebook
from lessons.read import semantic
from lessons.read.recall import RecallOptions, recall
from lessons.write.learn import LearnOptions, learn_from_run
from record.published import example_events

pytestmark = pytest.mark.skipif(
    not semantic.available(), reason="the notebook's semantic extra is not installed"
)


def test_the_encoder_places_paraphrases_together() -> None:
    embed = semantic.encoder().embed
    a = embed("How many eggs does Janet sell at the market each day?")
    b = embed("Every day, how many of her eggs does Janet sell at the market?")
    c = embed("Sort the following words alphabetically.")
    assert a.shape == (semantic.DIMENSIONS,) and abs(float(a @ a) - 1) < 1e-4
    assert float(a @ b) > 0.8 and float(a @ c) < 0.3


def test_a_paraphrase_without_shared_numbers_is_ranked_first_with_the_index(
    tmp_path: Path,
) -> None:
    book = open_notebook(tmp_path / "nb.db")
    learned = [
        "A farmer keeps hens that lay a dozen eggs daily; she sells them all. How much "
        "money does she make in a week at two dollars each?",
        "A train leaves the station at noon and travels west at sixty miles per hour.",
    ]
    for i, question in enumerate(learned):
        events = example_events(f"r{i}", question, str(i))
        learn_from_run(book, events, options=LearnOptions(semantic=True))
    asked = "Eggs from her chickens, twelve every day, are all sold by a farmer at $2 apiece: her weekly income?"
    lexical = recall(book, asked, options=RecallOptions(semantic=False)).shown
    fused = recall(book, asked, options=RecallOptions(semantic=True)).shown
    assert fused and fused[0].note["source_run"] == "r0"
    score = {s.note["source_run"]: s.score for s in lexical}
    assert fused[0].score > score.get("r0", 0.0)  # the index added evidence


def test_a_retired_note_is_not_brought_back_by_the_index(tmp_path: Path) -> None:
    from lessons.read.kin import _semantic_kin
    from lessons.storage.notes import retire

    book = open_notebook(tmp_path / "nb.db")
    learned = (
        "A farmer keeps hens that lay a dozen eggs daily; she sells them all. How much "
        "money does she make in a week at two dollars each?"
    )
    learn_from_run(book, example_events("r0", learned, "168"), options=LearnOptions(semantic=True))
    asked = "Eggs from her chickens, twelve every day, are all sold by a farmer at $2 apiece: her weekly income?"
    near = _semantic_kin(book, asked)
    assert [row["source_run"] for row, _ in near.values()] == ["r0"]
    retire(book, next(iter(near)), reason="test")
    assert _semantic_kin(book, asked) == {}
    assert recall(book, asked, options=RecallOptions(semantic=True)).shown == []
    book.close()
