"""Helpers for the protocol parser's tests (tests/kernel/test_protocol_*.py): the triple quote,
and hypothesis strategies for expert names and instructions with `render`, which writes
a well-formed call from them.
"""

from __future__ import annotations

from hypothesis import strategies as st

Q = '"""'

WORD = st.from_regex(r"[A-Z][a-z]{1,9}", fullmatch=True).filter(lambda w: w.lower() != "expert")
NAME = st.lists(WORD, min_size=1, max_size=5).map(" ".join)
# Instructions: any printable text without triple quotes, not blank.
INSTRUCTION = (
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"'),
        min_size=1,
        max_size=200,
    )
    .map(str.strip)
    .filter(bool)
)


def render(name: str, instruction: str, before: str = "", after: str = "", gap: str = "\n") -> str:
    return f"Expert {name}{before}:{after}{gap}{Q}\n{instruction}\n{Q}"
