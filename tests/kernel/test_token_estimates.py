"""Token estimates never fail a run: any text gets a figure.

A server that reports no usage has its calls estimated with a BPE tokenizer, and the
limits count a streaming call's estimate. The tokenizer refuses some inputs ("Input too
long to encode safely": a long run without spaces, or a few megabytes of text); that
ValueError ended the run as an error with a traceback. Such text is counted at four
characters a token instead.
"""

from __future__ import annotations

import pytest

from conductor_kernel import tokens


@pytest.mark.parametrize(
    "text",
    ["x" * 1_000_000, "hello world " * 400_000, "é" * 600_000],
    ids=["a long run without spaces", "megabytes of words", "many two-byte characters"],
)
def test_text_the_tokenizer_refuses_is_estimated_from_its_length(text: str) -> None:
    count = tokens.estimate_tokens(text)
    assert len(text) // 8 <= count <= len(text)
    usage = tokens.estimated_usage("the prompt", text)
    assert usage.estimated_tokens >= count and usage.estimated_calls == 1
