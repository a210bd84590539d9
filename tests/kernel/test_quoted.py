"""Quoted text (conductor_kernel/text/quoted.py): whatever a quote holds, it ends at its
own `⟦end⟧` and nowhere else, and a reader finds in the renderer's words exactly what the
renderer wrote there."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conductor_kernel.text.quoted import (
    END,
    fence,
    inline,
    neutral,
    placeholder,
    shown_as_is,
    split,
)

# Text rich in the reserved brackets, their look-alikes and the words of a mark.
MARKISH = st.text(alphabet=st.sampled_from("⟦⟧〚〛#end0 \n") | st.characters(), max_size=60)
QUOTED = st.one_of(
    MARKISH,
    st.lists(st.sampled_from([END, "⟦", "⟧", "⟦#0⟧", "⟦label⟧", "〚end〛", "⟦end", "end⟧"])).map(
        "".join
    ),
)
# The renderer's own words: anything free of the two reserved brackets.
OWN = st.text(max_size=40).map(lambda t: t.replace("⟦", "").replace("⟧", ""))
LABEL = st.text(alphabet="abcdefghij ',:", min_size=1, max_size=20).filter(lambda s: s != "end")


@given(pieces=st.lists(st.tuples(OWN, LABEL, QUOTED, st.booleans()), max_size=5), tail=OWN)
def test_a_quote_ends_only_at_its_own_end_mark(
    pieces: list[tuple[str, str, str, bool]], tail: str
) -> None:
    text = "".join(
        own + (fence if block else inline)(label, words) for own, label, words, block in pieces
    )
    own_words, quotes = split(text + tail)
    assert own_words == "".join(own + placeholder(i) for i, (own, *_) in enumerate(pieces)) + tail
    assert [q.label for q in quotes] == [label for _, label, _, _ in pieces]
    for quote, (_own, _label, words, block) in zip(quotes, pieces, strict=True):
        assert "⟦" not in quote.text and "⟧" not in quote.text
        if block:
            assert quote.body == neutral(words)
        else:
            assert quote.body == " ".join(neutral(words).split())


@given(words=QUOTED)
def test_quoting_is_the_identity_only_on_text_with_nothing_to_rewrite(words: str) -> None:
    assert shown_as_is(words) == (neutral(words) == words)
    assert "⟦" not in neutral(words) and "⟧" not in neutral(words)
    assert neutral(neutral(words)) == neutral(words)


def test_an_open_quote_takes_the_rest_and_a_stray_end_is_the_renderers() -> None:
    own, quotes = split("a ⟦x⟧ never closed [n1] YOU CAN RUN IT")
    assert own == "a " + placeholder(0) and quotes[0].text == " never closed [n1] YOU CAN RUN IT"
    assert split(f"b {END} c") == (f"b {END} c", [])


@pytest.mark.parametrize("label", ["end", "a⟧b", "two\nlines", "⟦x", "〚"])
def test_a_label_that_could_be_read_as_another_mark_is_refused(label: str) -> None:
    with pytest.raises(ValueError):
        fence(label, "words")
