"""Problem-level identity: the same problem across scripts and languages, and agreement
between runs that were not shown each other's answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from nb_support import SCORING, run_events

from conductor.scoring.notebook import open_notebook
from lessons.forms.problems import core_input, problem_numbers, same_question
from lessons.read.recall import RecallOptions, recall
from lessons.read.render import count_tokens
from lessons.values import NO_SCORING
from lessons.write.learn import LearnOptions, learn_from_run
from record.published import example_events


def test_numbers_are_read_in_any_script_and_grouping() -> None:
    assert problem_numbers("Janet hat 16 Eier und 1.000 Hühner") == ["16", "1000"]
    assert problem_numbers("জেনেটের হাঁসগুলি প্রতিদিন ১৬টি করে ডিম পাড়ে") == ["16"]
    assert problem_numbers("珍妮特的鸭子每天下十六个蛋, 三百五十元") == ["16", "350"]
    assert problem_numbers("It costs $2.50, or 1 000 in all") == ["2.5", "1000"]
    assert problem_numbers("8万ドルで家を購入") == ["80000"]
    # A lone numeral is a word more often than a quantity: 一共 (in all), 一半 (half).
    assert problem_numbers("制作一件袍子需要 2 匹布料和一半的白色布料。一共多少？") == ["2"]
    assert problem_numbers("第三天跑了二十五公里") == ["25"]


def test_the_same_question_with_or_without_a_task_description() -> None:
    question = "Sort the following words alphabetically: List: pear apple"
    assert same_question(question, "Put them in order.\n\n" + question)
    assert not same_question(question, question.replace("pear", "plum"))
    game = ("You get four whole numbers. Combine all four, each exactly once, with "
            "addition, subtraction, multiplication, division and parentheses, so that "
            "the result is exactly 24. Give as your final answer only the arithmetic "
            "expression, written with + - * / and parentheses, with nothing after it."
            "\n\n4 5 6 10")  # fmt: skip
    assert core_input(game, SCORING) == "4 5 6 10"
    # The descriptions are the scorers': a notebook given none takes nothing off.
    assert core_input(game, NO_SCORING) == game


def test_a_translated_problem_finds_its_kin(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    learned = [
        "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. She sells the rest "
        "for $2 each. How much does she make?",
        "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts?",
        "Josh buys a house for $80,000 and puts in $50,000 in repairs. The value rises by "
        "150%. How much profit did he make?",
    ]
    for i, question in enumerate(learned):
        learn_from_run(book, example_events(f"en-{i}", question, str(i)))
    asked = (
        "Los patos de Janet ponen 16 huevos por día. Ella come 3 y hornea con 4. Vende el "
        "resto a $2 cada uno. ¿Cuánto gana?"
    )
    shown = recall(book, asked).shown
    assert shown and shown[0].note["source_run"] == "en-0"
    # Nothing in common: nothing shown.
    assert recall(book, "Écrivez un poème sur la mer.").shown == []


def test_two_runs_not_shown_each_other_verify_each_other(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    question = "Janet has 16 eggs and eats 3. How many are left?"
    options = LearnOptions(use_target=False)
    first = learn_from_run(
        book, run_events("a", question, "13 eggs", task="MGSM_ES"), options=options
    )
    assert first is not None and first.outcome == "unverified"
    second = learn_from_run(book, run_events("b", question, "There are 13 left.", task="MGSM_ES"),
                            options=options)  # fmt: skip
    assert second is not None and (second.verification, second.outcome) == (
        "independent",
        "verified",
    )
    row = book.read_one("select verification, outcome from distilled_runs where run_id = 'a'")
    assert (row["verification"], row["outcome"]) == ("independent", "verified")
    assert {
        n["verification"]
        for n in book.read("select verification from notes where source_run = 'a'")
    } == {"independent"}
    # Multiple choice agreement means little: two runs saying (B) stay unverified.
    choice = "Which shape? (A) kite (B) line"
    learn_from_run(book, run_events("c", choice, "(B)", task="geometric_shapes"), options=options)
    third = learn_from_run(
        book, run_events("d", choice, "(B)", task="geometric_shapes"), options=options
    )
    assert third is not None and third.outcome == "unverified"


def test_the_budget_counts_real_tokens() -> None:
    telugu = "జానెట్ బాతులు రోజుకు 16 గుడ్లు పెడతాయి. " * 10
    # cl100k spends far more than a token per four characters on Telugu.
    assert count_tokens(telugu) > 2 * len(telugu) // 4
    assert count_tokens("hello world") >= 2


def test_kin_is_found_behind_many_newer_notes_of_other_kinds(tmp_path: Path) -> None:
    """Every note carries its question's terms; the example must not be crowded out."""
    from lessons.storage.notes import Provenance, add_note
    from lessons.values import NoteDraft

    book = open_notebook(tmp_path / "nb.db")
    question = "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. How many left?"
    learn_from_run(book, example_events("en-0", question, "9"))
    source = Provenance("later", question, "", None, "none", "unverified")
    # Newer notes of other kinds made from the same problem, more than any one read.
    book.write(lambda conn: [
        add_note(conn, None, NoteDraft("insight", f"Observation number {i} about eggs."), source)
        for i in range(150)
    ])  # fmt: skip
    asked = "Los patos de Janet ponen 16 huevos por día. Come 3 y hornea con 4. ¿Cuántos quedan?"
    shown = recall(book, asked, options=RecallOptions(types=0)).shown
    assert [s.note["source_run"] for s in shown if s.note["kind"] == "example"] == ["en-0"]


@pytest.mark.slow
def test_the_terms_searched_do_not_depend_on_the_process(tmp_path: Path) -> None:
    """Terms equally rare come in one order, whatever the process's string hashing."""
    import os
    import subprocess
    import sys

    program = (
        "import sys\nfrom lessons.read.candidates import particulars\nfrom lessons.storage.store import "
        "Notebook\nbook = Notebook(sys.argv[1])\n"
        "print(particulars(book, {'plum', 'pear', 'kiwi', 'lime', 'date', 'fig'}, set()))\n"
    )
    open_notebook(tmp_path / "nb.db").close()
    seen = {
        subprocess.run(
            [sys.executable, "-c", program, str(tmp_path / "nb.db")],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True, text=True, check=True,
        ).stdout
        for seed in range(6)
    }  # fmt: skip
    assert len(seen) == 1, seen
