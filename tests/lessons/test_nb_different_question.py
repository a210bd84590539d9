"""A note of a different question is shown as different (lessons/read/difference.py):
after every note that fits, with the difference named, and a rejected run's note as a
failure. Drawn from generated near misses (tests/equipment/perturb.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nb_support import run_events

from conductor.scoring.notebook import open_notebook
from equipment.perturb import KINDS, base_question, perturb
from lessons.read.difference import difference
from lessons.read.recall import RecallOptions, recall
from lessons.read.render import render_note
from lessons.write.learn import learn_from_run


def test_a_changed_number_is_named() -> None:
    said = difference(
        "Janet has 16 eggs and eats 3. How many are left?",
        "Janet has 19 eggs and eats 3. How many are left?",
    )
    assert said == "this was asked with 16; yours says 19"
    assert difference("Sort: pear apple", "Sort: pear  apple") is None
    # The same problem in another language: its numbers carry it, no difference.
    assert (
        difference(
            "Janet has 16 eggs and eats 3. How many are left?",
            "Janet tiene 16 huevos y come 3. ¿Cuántos quedan?",
        )
        is None
    )
    said = difference("Sort these words by length: List: pear apple",
                      "Sort these words alphabetically: List: pear apple")  # fmt: skip
    assert said is not None and "'alphabetically'" in said and "'length'" in said
    # The same words and numbers written otherwise: a sign, a capital.
    assert difference("Use 4 5 6 10 to make 24", "Use 4/5 6 10 to make 24") is not None
    assert difference("Sort: List: pear apple", "Sort: List: Pear apple") is not None
    # Two problems with the same numbers in another order, or with only signs between them.
    assert difference("A train goes 40 km in 7 hours and 5 km more.",
                      "Tom buys 40 boxes of 5 pencils and gives away 7.")  # fmt: skip
    assert difference("((-3 + 5) * (-1 - -7)) =", "((1 + 5) * (3 - -7)) =")
    # A list has no quantities to carry it: other words are another question.
    assert difference("Sort: List: pear fig kiwi plum", "Sort: List: lime date yam nut")


def test_a_rejected_runs_note_reads_as_a_failure() -> None:
    note = {"id": "n1", "kind": "example", "verification": "target", "outcome": "wrong",
            "helpful": 0, "harmful": 0, "source_run": "r", "key": "", "text": "Answer: 7"}  # fmt: skip
    text = render_note(note, code_chars=100)
    assert "FAILED" in text and "accepted" not in text and "rejected" in text


@given(
    level=st.sampled_from(["target", "checker", "tool", "independent", "sandbox-check",
                           "agreement", "sandbox", "none"]),
    outcome=st.sampled_from(["correct", "wrong", "verified", "unverified", "unanswered"]),
)  # fmt: skip
def test_a_notes_label_names_its_trust_honestly(level: str, outcome: str) -> None:
    note = {"id": "n1", "kind": "example", "verification": level, "outcome": outcome,
            "helpful": 0, "harmful": 0, "source_run": "r", "key": "", "text": "x"}  # fmt: skip
    head = render_note(note, code_chars=0).splitlines()[0]
    checked = level in ("target", "checker", "sandbox-check") and outcome in ("correct", "verified")
    assert ("checked:" in head) == checked
    if level in ("tool", "independent", "agreement") and outcome in ("correct", "verified"):
        assert "corroborated:" in head  # agreement is corroboration at most
    if outcome == "wrong":
        assert "rejected:" in head and "accepted" not in head


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    seed=st.integers(0, 10_000),
    kind=st.sampled_from([k for k, (effect, _) in KINDS.items() if effect != "same"]),
)
def test_no_other_questions_note_is_shown_as_fitting(tmp_path: Path, seed: int, kind: str) -> None:
    rng = random.Random(seed)
    book = open_notebook(tmp_path / f"nb-{seed}-{kind}.db")
    try:
        asked = None
        for i in range(4):  # learned: four solved word problems, right against their targets
            base = base_question("word_problem", rng)
            learn_from_run(book, run_events(f"r{i}", base.question, "42", target="42",
                                            experts=("Expert Mathematician",)))  # fmt: skip
            asked = asked or perturb(base, kind, rng)
        if asked is None:
            return
        shown = recall(book, asked.question, options=RecallOptions(k=8)).shown
        seen_different = False
        for item in shown:
            source = item.note.get("source_question") or ""
            other = source.strip() and difference(source, asked.question) is not None
            if item.note["kind"] == "tool" or not other:
                assert not seen_different, "a fitting note after a different one"
                continue
            seen_different = True
            assert item.note.get("differs"), (item.note["kind"], source, asked.question)
            assert "different question" in render_note(item.note, code_chars=0)
    finally:
        book.close()


@given(
    answer=st.sampled_from(["Yes", "no", "True", "(B)", "c", "false."]),
    replies=st.integers(2, 5),
)
def test_replies_agreeing_on_a_small_answer_space_never_corroborate(
    answer: str, replies: int
) -> None:
    from nb_support import verify_events

    events = run_events("yn", "Is the river longer than the road?", answer,
                        experts=tuple(f"Expert {i}" for i in range(replies)),
                        expert_replies=(answer,) * replies)  # fmt: skip
    found = verify_events(events)
    assert found.level != "independent" and found.outcome == "unverified"
    # The same agreement on an answer from a large space does corroborate.
    events = run_events("n", "How long is the river in km?", "6650",
                        experts=("Expert A", "Expert B"), expert_replies=("6650", "6650"))  # fmt: skip
    assert verify_events(events).level == "independent"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    seed=st.integers(0, 10_000),
    form=st.sampled_from(["game24", "sorting", "arithmetic", "word_problem"]),
    kind=st.sampled_from([k for k, (effect, _) in KINDS.items() if effect != "same"]),
)
def test_the_difference_is_a_field_of_the_recall_json_as_well_as_the_text(
    tmp_path: Path, seed: int, form: str, kind: str
) -> None:
    """What `notebook search --json` and the `Recall` event report: a note made for
    another question carries the difference by name, as its rendered text does."""
    rng = random.Random(seed)
    book = open_notebook(tmp_path / f"nb-{seed}-{form}-{kind}.db")
    try:
        base = base_question(form, rng)
        learn_from_run(book, run_events("r0", base.question, "42", target="42",
                                        experts=("Expert Mathematician",)))  # fmt: skip
        asked = perturb(base, kind, rng)
        if asked is None:
            return
        result = recall(book, asked.question, options=RecallOptions(k=8, threshold=0.0))
        listed = {n["id"]: n for n in result.event_notes()}
        for item in result.shown:
            source = item.note.get("source_question") or ""
            named = difference(source, asked.question) if source.strip() else None
            if item.note["kind"] == "tool" or named is None:
                assert listed[item.note["id"]]["differs"] is None
                continue
            assert listed[item.note["id"]]["differs"] == item.note["differs"]
            assert "ANOTHER QUESTION" in result.rendered.text
    finally:
        book.close()
