"""One correctness mark: a verdict shows the same label and mark whether it comes as a
`Correctness`, as runs.db's 1/0/NULL, or as a batch's score."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from record.correctness import LABELS, MARKS, Correctness, label_of

verdicts = st.one_of(st.none(), st.booleans())


@given(verdicts)
def test_a_verdict_has_one_label_and_one_mark_however_it_is_stored(correct: bool | None) -> None:
    verdict = Correctness(correct)
    stored = None if correct is None else int(correct)  # as runs.db holds it
    assert label_of(stored) == label_of(correct) == verdict.label
    assert verdict.mark == MARKS[verdict.label]
    score = None if correct is None else {"correct": correct, "scored": True}
    assert Correctness.of_score(score).mark == verdict.mark


def test_each_label_has_its_own_mark() -> None:
    assert set(MARKS) == set(LABELS)
    assert len(set(MARKS.values())) == len(LABELS)
    assert all(len(mark) == 1 for mark in MARKS.values())
