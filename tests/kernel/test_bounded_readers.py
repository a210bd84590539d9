"""The bounded readers agree with Python's decoders on every text within the bound, and
refuse every text past it, with the line where it went too deep, whatever the strings
inside hold (brackets, quotes, escapes, line separators)."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest
from fuzz_budget import TIERS
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.bounded import TooDeep, json_lines, loads_json, loads_toml, too_deep_at

# Strings full of what a naive bracket count would trip on.
TRICKY = st.text(alphabet=st.sampled_from("[]{}\"\\\n\u2028\x85 a#'"), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers() | TRICKY


def nested(depth: int, leaf: Any, draw_kind: list[bool]) -> Any:
    value = leaf
    for as_list in draw_kind[:depth]:
        value = [value] if as_list else {"k": value}
    return value


@st.composite
def values_of_depth(draw: st.DrawFn) -> tuple[Any, int]:
    depth = draw(st.integers(0, 130))
    kinds = draw(st.lists(st.booleans(), min_size=depth, max_size=depth))
    return nested(depth, draw(SCALARS), kinds), depth


@TIERS
def test_json_within_the_bound_reads_as_json_does_and_past_it_is_refused(budget: int) -> None:
    @settings(max_examples=budget * 5, deadline=None)
    @given(values_of_depth(), st.integers(1, 120))
    def check(case: tuple[Any, int], limit: int) -> None:
        value, depth = case
        text = json.dumps(value, ensure_ascii=False, indent=None if depth % 2 else 1)
        if depth <= limit:
            assert loads_json(text, limit=limit) == json.loads(text)
        else:
            with pytest.raises(TooDeep) as caught:
                loads_json(text, limit=limit)
            assert 1 <= caught.value.line <= text.count("\n") + 1

    check()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 130), TRICKY, st.integers(1, 120))
def test_toml_within_the_bound_reads_as_tomllib_does(depth: int, words: str, limit: int) -> None:
    inner = json.dumps(words, ensure_ascii=True)  # a TOML basic string
    text = f"# {words.replace(chr(10), ' ')}\n[t]\nx = " + "[" * depth + inner + "]" * depth + "\n"
    if depth <= limit:
        assert loads_toml(text, limit=limit) == tomllib.loads(text)
    else:
        with pytest.raises(TooDeep) as caught:
            loads_toml(text, limit=limit)
        assert caught.value.line == 3


def test_a_hundred_thousand_levels_are_refused_not_a_recursion_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(TooDeep):
        loads_json(deep)
    with pytest.raises(TooDeep):
        loads_toml("a = " + deep)
    assert too_deep_at('"' + "[" * 500 + '"') is None  # inside a string: no nesting


@given(st.lists(st.text(alphabet=st.sampled_from("ab\u2028\x85\x0c\r\x1c\x1d\x1e"), max_size=6)))
def test_json_lines_split_on_newline_only(texts: list[str]) -> None:
    lines = [json.dumps(t, ensure_ascii=False) for t in texts]
    assert [json.loads(line) for line in json_lines("\n".join(lines) + "\n") if line] == texts
    assert [json.loads(line) for line in json_lines("\r\n".join(lines))] == texts
