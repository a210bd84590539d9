"""Task types by lexical evidence; recall by relevance and trust, under a token budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nb_support import run_events, sort_run

from conductor.scoring.notebook import open_notebook
from conductor.session.notebook_hooks import NotebookHooks
from experts.scripted import ScriptedModel
from lessons.forms.tasktypes import MatchParams, score_types
from lessons.forms.terms import question_terms
from lessons.read.recall import RecallOptions, recall
from lessons.read.render import estimate_tokens
from lessons.storage.store import Notebook
from lessons.write.learn import LearnOptions, learn_from_run

SPANISH = [
    "Juan tiene 5 manzanas y compra 3 más. ¿Cuántas manzanas tiene en total?",
    "María lee 12 páginas cada día durante 4 días. ¿Cuántas páginas lee en total?",
    "Un tren recorre 60 km en una hora. ¿Cuántos km recorre en 3 horas?",
    "Pedro gana 20 dólares por día y trabaja 5 días. ¿Cuántos dólares gana en la semana?",
]


@pytest.fixture
def book(tmp_path: Path) -> Notebook:
    book = open_notebook(tmp_path / "notebook.db")
    for i, words in enumerate(
        [["pear", "apple", "fig"], ["kiwi", "plum"], ["oak", "elm", "ash", "yew"]]
    ):
        learn_from_run(book, sort_run(f"sort-{i}", words, target=" ".join(sorted(words))))
    for i, numbers in enumerate(["4 5 6 10", "1 2 4 7", "3 3 8 8"]):
        learn_from_run(book, run_events(f"game-{i}", numbers, "(4 + 5 * 6) - 10"))
    for i, question in enumerate(SPANISH):
        learn_from_run(book, run_events(f"es-{i}", question, "8"))
    return book


def types_of(book: Notebook, prefix: str) -> set[str]:
    rows = book.read("select type_id from distilled_runs where run_id like ?", (prefix + "%",))
    return {r["type_id"] for r in rows}


def test_questions_of_one_kind_share_a_type_and_kinds_do_not_mix(book: Notebook) -> None:
    sort, game, spanish = types_of(book, "sort-"), types_of(book, "game-"), types_of(book, "es-")
    assert len(sort) == 1 and len(game) == 1
    # Free-form questions share fewer words; offline they may take a few questions to meet.
    assert 1 <= len(spanish) <= 2
    assert not (sort & game) and not (sort & spanish) and not (game & spanish)


def test_recall_finds_the_kind_and_stays_silent_on_a_new_one(book: Notebook) -> None:
    result = recall(book, "Sort the following words alphabetically: List: zebra cat")
    assert result.shown and {s.note["source_run"][:5] for s in result.shown} == {"sort-"}
    assert all(s.relevance >= 0.5 for s in result.shown)
    assert result.rendered.text and result.rendered.tokens <= RecallOptions().budget_tokens
    puzzle = recall(book, "2 3 9 11")
    assert puzzle.shown and {s.note["source_run"][:5] for s in puzzle.shown} == {"game-"}
    novel = "Write a haiku about autumn leaves that mentions a river and a bridge."
    silent = recall(book, novel)
    assert silent.shown == [] and silent.rendered.text == ""


def test_the_same_particulars_rank_first(book: Notebook) -> None:
    result = recall(book, "Sort the following words alphabetically: List: kiwi plum")
    examples = [s for s in result.candidates if s.note["kind"] == "example"]
    assert examples[0].note["source_run"] == "sort-1"


def test_the_token_budget_is_kept_and_the_event_names_only_what_was_shown(
    book: Notebook,
) -> None:
    small = RecallOptions(budget_tokens=160)
    result = recall(book, "Sort the following words alphabetically: List: zebra cat", options=small)
    assert result.rendered.tokens <= 160
    assert estimate_tokens(result.rendered.text) <= 160
    assert [s.note["id"] for s in result.shown] == result.rendered.note_ids
    for note_id in result.rendered.note_ids:
        assert note_id in result.rendered.text
    roomy = recall(book, "Sort the following words alphabetically: List: zebra cat")
    assert len(roomy.shown) > len(result.shown)


def test_evidence_is_reported_per_type(book: Notebook) -> None:
    matches = score_types(
        book.conn, question_terms("Sort the following words alphabetically: List: a b")
    )
    assert matches[0].relevance() > 0.9
    assert "alphabetically" in matches[0].matched_terms


def test_a_new_type_starts_from_the_experience_of_a_similar_one(book: Notebook) -> None:
    sort_type = next(iter(types_of(book, "sort-")))
    book.write(
        lambda c: c.execute(
            "update task_types set suggestions = ?, procedure = ? where id = ?",
            (json.dumps(["Let Python sort."]), json.dumps(["Ask Expert Python."]), sort_type),
        )
    )
    # Related but (with the join bar set out of reach) not the same task: a new type,
    # seeded from the experience of sorting.
    question = "Sort the following words by length, shortest first: List: pear fig banana"
    options = LearnOptions(params=MatchParams(join_evidence=1000.0))
    learn_from_run(book, run_events("len-0", question, "fig pear banana"), options=options)
    (new_type,) = types_of(book, "len-")
    assert new_type != sort_type
    row = book.read_one("select * from task_types where id = ?", (new_type,))
    assert row["inherited_from"] == sort_type
    assert json.loads(row["suggestions"]) == ["Let Python sort."]
    history = book.read("select action from type_history where type_id = ?", (new_type,))
    assert [h["action"] for h in history] == ["created", "inherited"]


def test_the_model_narrows_the_candidates(book: Notebook) -> None:
    def experts(_name: str, prompt: str) -> str:
        return "USE: 2" if "Notes from earlier work" in prompt else "none"

    model = ScriptedModel(["unused"], experts, name="online")
    model.offline = False  # type: ignore[attr-defined]
    lexical = recall(book, "Sort the following words alphabetically: List: zebra cat")
    narrowed = recall(book, "Sort the following words alphabetically: List: zebra cat", model=model)
    assert [s.note["id"] for s in narrowed.shown] == [lexical.candidates[1].note["id"]]


def test_hooks_give_a_recall_event_for_the_conductor(book: Notebook) -> None:
    hooks = NotebookHooks(book)
    event = hooks.recall("Sort the following words alphabetically: List: zebra cat")
    assert event.task_type and event.rendered.startswith("From the notebook")
    assert [n["rank"] for n in event.notes] == list(range(1, len(event.notes) + 1))
    assert all(
        {"id", "key", "kind", "score", "relevance", "source_run"} <= set(n) for n in event.notes
    )
    assert hooks.recall("An entirely new kind of request about lighthouses.").notes == []


def test_a_very_long_question_is_still_typed_by_words_late_in_the_alphabet(
    tmp_path: Path,
) -> None:
    # Questions of a program-puzzle task run to ~1,500 distinct terms; the type's own
    # words here sort last, so a cut by the alphabet would lose every one of them.
    book = open_notebook(tmp_path / "long.db")

    def long_question(seed: int) -> str:
        filler = " ".join(f"aa{seed}x{j}" for j in range(1200))
        return f"{filler} zzpuzzle zzsolver zzreturns zzexactly"

    for seed in range(3):
        learn_from_run(book, run_events(f"long-{seed}", long_question(seed), "42"))
    terms = question_terms(long_question(99))
    assert len(terms) > 1200
    (best, *_) = score_types(book.conn, terms)
    assert best.members == 3 and "zzpuzzle" in best.matched_terms
