"""The tokenizer loads one vocabulary: the wheel's compiled cl100k alone, never the
package's Python side (which builds three on import, a second or two and ~50 MB), and it
counts exactly as the package's `encode_ordinary` does."""

from __future__ import annotations

import functools
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.text import tokens

SPECIAL_NAMES = ["<|endoftext|>", "<|fim_prefix|>", "<|im_start|>", "<|endofprompt|>"]
any_text = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(codec=None), max_size=200),
        st.sampled_from(SPECIAL_NAMES),
        st.sampled_from(["\ud800", "\udfff", "\x00", "\n\n", "    ", "1234567"]),
    ),
    max_size=12,
).map("".join)


def test_counting_loads_the_compiled_tokenizer_alone() -> None:
    code = (
        "import sys\n"
        "from conductor_kernel.text import tokens\n"
        "assert tokens.estimate_tokens('Sort these words: pear apple fig') > 1\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'bpe_openai'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "['bpe_openai._bindings']"


@functools.cache
def _package_encoding() -> Any:
    import warnings

    import bpe_openai

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return bpe_openai.get_encoding(tokens.ENCODING)


@pytest.mark.slow  # imports the package's Python side, as the comparison needs
@settings(max_examples=300, deadline=None)
@given(any_text)
def test_the_count_is_the_packages_count(text: str) -> None:
    assert tokens.estimate_tokens(text) == len(_package_encoding().encode_ordinary(text))


def test_a_wheel_without_the_compiled_module_falls_back_to_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing() -> None:
        raise ImportError("no compiled tokenizer here")

    monkeypatch.setattr(tokens, "_rust_backend", missing)
    monkeypatch.setattr(tokens, "_encoding", None)
    tokens._load()
    assert tokens._encoding is not None and not isinstance(tokens._encoding, tokens._RustCounter)
    assert tokens.estimate_tokens("hello world") == 2
