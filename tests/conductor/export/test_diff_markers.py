"""Piped `runs diff`: colour is gone, so removed and added words are bracketed
(`[-old-]{+new+}`), and the marked text still reads as both sides (issue 24)."""

from __future__ import annotations

import re

from hypothesis import assume, given
from hypothesis import strategies as st

from conductor.export.diff import field_text
from transcripts.run_diff import FieldDiff

WORDS = st.lists(
    st.sampled_from(["apple", "pear", "fig", "kiwi", "24", "(x)", "-", "+"]), max_size=12
)

REMOVED = re.compile(r"\[-(.*?)-\]", re.S)
ADDED = re.compile(r"\{\+(.*?)\+\}", re.S)


@given(WORDS, WORDS)
def test_marked_changes_give_back_either_side(left: list[str], right: list[str]) -> None:
    assume(left != right)  # a field that did not change is never shown
    diff = FieldDiff("f", " ".join(left), " ".join(right))
    text = field_text(diff, context=10_000, markers=True).plain
    as_left = ADDED.sub("", REMOVED.sub(r"\1", text))
    as_right = REMOVED.sub("", ADDED.sub(r"\1", text))
    assert as_left.split() == left
    assert as_right.split() == right
    assert "[-" in text or "{+" in text


def test_without_markers_the_text_is_the_words_alone() -> None:
    text = field_text(FieldDiff("f", "a b c", "a x c")).plain
    assert "[-" not in text and "{+" not in text and "b" in text and "x" in text
