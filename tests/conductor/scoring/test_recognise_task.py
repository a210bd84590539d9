"""A question asked without a task (solve, the TUI) is judged by a built-in task's scorer
only when it surely is that task (conductor/scoring/recognise.py).

- the forms people type, and the batch form, are recognised, with the right input and
  known answer: over every shipped word_sorting, arithmetic and Game of 24 item, the
  answer the question fixes is the task file's target;
- near misses are not: the benchmark's ten variant tasks built from every shipped item,
  and hand-made ones that add a constraint the scorer would not check;
- hostile text never raises; the arithmetic is exact (checked against Python on
  generated expressions);
- a run asked without a task is labelled by the recognised task's scorer, right and wrong.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.scoring.recognise import Recognised, recognise
from conductor.scoring.task_scoring import BuiltinTaskScoring
from conductor.tasks.specs import BUILTIN
from conductor_kernel.events import FinalAnswer, RunFinished, RunStarted
from lessons.write.verify import verify_run
from record.fold import outline

REPO = Path(__file__).resolve().parents[3]
SCORING = BuiltinTaskScoring()


def _verify(events):
    return verify_run(outline(events), scoring=SCORING)


@pytest.mark.parametrize(
    ("question", "task", "task_input", "target"),
    [
        ("Use 4 5 6 10 to make 24", "GameOf24", "4 5 6 10", None),
        ("Use 4, 5, 6 and 10 with + - * / to get 24", "GameOf24", "4 5 6 10", None),
        ("Game of 24: 1 1 4 6", "GameOf24", "1 1 4 6", None),
        ("Sort the following words alphabetically: List: pear apple fig", "word_sorting",
         "pear apple fig", "apple fig pear"),
        ("Sort these words: pear, apple, fig", "word_sorting", "pear apple fig", "apple fig pear"),
        ("((-1 + 2 + 9 * 5) - (-2 + -4 + -4 * -7)) =", "multistep_arithmetic_two",
         "((-1 + 2 + 9 * 5) - (-2 + -4 + -4 * -7)) =", "24"),
        ("What is 2 * (3 - 10)?", "multistep_arithmetic_two", "2 * (3 - 10)?", "-14"),
        ("-5 + 3", "multistep_arithmetic_two", "-5 + 3", "-2"),
    ],
)  # fmt: skip
def test_the_forms_people_type_are_recognised(
    question: str, task: str, task_input: str, target: str | None
) -> None:
    assert recognise(question) == Recognised(task, task_input, target)


@pytest.mark.parametrize(
    "question",
    [
        "4 5 6 10",  # four numbers alone: the goal is not said
        "Use 4 5 6 10 to make 10",
        "Use 4 5 6 10 to make 24 using only addition",
        "Use 4 5 6 10 to make 24 without division",
        "Use 4 5 6 10 and 24 to make 24",
        "Use 4.5 6 10 2 to make 24",
        "Sort the following words in reverse alphabetical order: List: pear apple fig",
        "Sort by length: pear apple fig",
        "Sort alphabetically by the last letter: pear apple fig",
        "Sort these names alphabetically: Pear apple Fig",  # case: which order is meant?
        "What is 3 + 4 mod 7",
        "Count the negative numbers in ((-1 + 2) * 3) =",
        "What is 7 / 2?",
        "What is 2 ** 100?",
        "17",
        "Janet has 16 ducks and sells 3. How many are left?",
        "",
    ],
)
def test_near_misses_are_not_recognised(question: str) -> None:
    assert recognise(question) is None


def _variants() -> Any:
    spec = importlib.util.spec_from_file_location(
        "nb_variants", REPO / "bench" / "support" / "nb_variants.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _items(shared_dir: Path, task: str) -> list[dict[str, Any]]:
    lines = (shared_dir / "tasks" / f"{task}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize("task", ["word_sorting", "multistep_arithmetic_two", "GameOf24"])
def test_every_shipped_item_in_the_batch_form_is_recognised_with_its_answer(
    shared_dir: Path, task: str
) -> None:
    items = _items(shared_dir, task)
    assert len(items) >= 100
    for item in items:
        found = recognise(BUILTIN[task].prompt(str(item["input"])))
        assert found is not None and found.task == task, item["input"]
        if task == "GameOf24":
            assert found.target is None and found.task_input == item["input"]
        else:
            assert found.target == item["target"], item["input"]
        if task != "GameOf24":  # the input alone, as typed at the prompt, too
            assert recognise(str(item["input"])) == found


def test_no_variant_of_a_shipped_task_is_recognised(shared_dir: Path) -> None:
    variants = _variants()
    asked = 0
    for name, (task, _rewrite) in variants.VARIANTS.items():
        inputs = [str(item["input"]) for item in _items(shared_dir, task)]
        for question in variants.variant_questions(name, inputs, 1000):
            asked += 1
            assert recognise(question) is None, (name, question[:120])
    assert asked > 1500


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_hostile_text_never_raises(text: str) -> None:
    found = recognise(text)
    assert found is None or found.task in BUILTIN


def _expressions() -> st.SearchStrategy[str]:
    number = st.integers(-99, 99).map(str)
    return st.recursive(
        number,
        lambda inner: st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        max_leaves=12,
    )


@settings(max_examples=300, deadline=None)
@given(_expressions())
def test_the_known_answer_of_an_expression_is_its_exact_value(expression: str) -> None:
    question = f"{expression} ="
    found = recognise(question)
    if not any(op in expression for op in "+*") and expression.count("-") <= 1:
        return  # a lone (signed) number is not an expression
    assert found is not None, question
    assert found.target == str(eval(expression))  # generated text: digits, signs, parentheses


def _run(question: str, answer: str, *, task: str = "", target: str | None = None) -> list[Any]:
    return [
        RunStarted(run_id="r", question=question, task=task, target=target),
        FinalAnswer(run_id="r", answer=answer),
        RunFinished(run_id="r", status="answered", final_answer=answer),
    ]


@pytest.mark.parametrize(
    ("question", "answer", "outcome"),
    [
        ("Use 4 5 6 10 to make 24", "(10 - 6) * (5 + 4 - 3)", "wrong"),  # uses a 3
        ("Use 4 5 6 10 to make 24", "4 * (10 - 6 / (5 - 4)) - 0", "wrong"),
        ("Use 1 1 4 6 to make 24", "6 / (1 - 1 / 4)", "wrong"),  # 8, not 24
        ("Use 1 1 4 6 to make 24", "(1 + 1) * 6 * 4 / 2", "wrong"),
        ("Use 1 2 3 4 to make 24", "1 * 2 * 3 * 4", "correct"),
        ("Sort these words: pear, apple, fig", "apple fig pear", "correct"),
        ("Sort these words: pear, apple, fig", "apple pear fig", "wrong"),
        ("What is 2 * (3 - 10)?", "-14", "correct"),
        ("What is 2 * (3 - 10)?", "14", "wrong"),
    ],
)
def test_a_run_without_a_task_is_judged_by_the_recognised_scorer(
    question: str, answer: str, outcome: str
) -> None:
    checked = _verify(_run(question, answer))
    assert (checked.level, checked.outcome) == ("checker", outcome)
    assert "recognised as" in checked.detail


def test_a_run_with_a_task_or_a_target_is_not_second_guessed() -> None:
    # Its own task decides (here: the exact scorer against the file's target).
    checked = _verify(_run("What is 2 * (3 - 10)?", "5", task="word_sorting", target="5"))
    assert (checked.level, checked.outcome) == ("target", "correct")
    # A target given without a task: the target's form decides, as before.
    checked = _verify(_run("Use 1 2 3 4 to make 24", "1 * 2 * 3 * 4", target="nope"))
    assert checked.outcome == "wrong" and "recognised" not in checked.detail
    # Not a recognisable question: nothing judges it.
    checked = _verify(_run("Name a prime above 10.", "11"))
    assert checked.outcome == "unverified"


def test_a_tool_tested_on_a_recognised_question_is_judged_by_its_scorer() -> None:
    """Not by string equality with the one answer stored: Game of 24 has many."""
    from lessons.forms.toolbox import judge_answer

    row = {"task": "", "target": None, "question": "Use 1 2 3 4 to make 24",
           "answer": "1 * 2 * 3 * 4", "outcome": "correct"}  # fmt: skip
    assert judge_answer(row, "", "(1 + 2 + 3) * 4", None, scoring=SCORING)
    assert not judge_answer(row, "", "1 * 2 * 3 * 5", None, scoring=SCORING)
    sorting = {"task": "", "target": None, "question": "Sort these words: pear, apple, fig",
               "answer": "", "outcome": "unverified"}  # fmt: skip
    assert judge_answer(sorting, "", "apple fig pear", None, scoring=SCORING)
    assert not judge_answer(sorting, "", "pear fig apple", None, scoring=SCORING)
