"""Properties of the protocol parser that hold for any text: well-formed calls round-trip
in order, a call and an answer are both reported, a fabricated reply is never a call,
bold names parse like plain ones, and no text makes it (or `extract_code`) fail.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from turn_strategies import INSTRUCTION, NAME, Q, render

from conductor_kernel.protocol import RUN_MARKER, extract_code, parse_turn

SPACE = st.sampled_from(["", " ", "  ", "\t"])
GAP = st.sampled_from(["\n", "\n\n", "\n  \n", " \n"])


@given(NAME, INSTRUCTION, SPACE, SPACE, GAP)
@settings(max_examples=60)
def test_any_well_formed_call_round_trips(
    name: str, instruction: str, before: str, after: str, gap: str
) -> None:
    parsed = parse_turn(render(name, instruction, before, after, gap))
    assert [(c.name, c.instruction.strip()) for c in parsed.calls] == [
        (f"Expert {name}", instruction)
    ]
    assert parsed.final_answer is None


@given(st.lists(st.tuples(NAME, INSTRUCTION), min_size=1, max_size=4), st.text(max_size=40))
@settings(max_examples=40)
def test_several_calls_keep_their_order(calls: list[tuple[str, str]], prose: str) -> None:
    prose = prose.replace('"', "").replace(":", "")
    turn = "\n\n".join(f"{prose}\n{render(n, i)}" for n, i in calls)
    parsed = parse_turn(turn)
    assert [(c.name, c.instruction.strip()) for c in parsed.calls] == [
        (f"Expert {n}", i) for n, i in calls
    ]


@given(NAME, INSTRUCTION, INSTRUCTION)
@settings(max_examples=40)
def test_call_and_answer_are_both_reported(name: str, instruction: str, answer: str) -> None:
    parsed = parse_turn(f"{render(name, instruction)}\n\n>> FINAL ANSWER:\n{Q}\n{answer}\n{Q}")
    assert [c.instruction.strip() for c in parsed.calls] == [instruction]
    assert parsed.final_answer == answer


@given(NAME, INSTRUCTION)
@settings(max_examples=40)
def test_a_fabricated_reply_is_never_a_call(name: str, text: str) -> None:
    turn = f"Expert {name}'s output:\n{Q}\n{text}\n{Q}"
    parsed = parse_turn(turn)
    assert parsed.calls == []
    assert parsed.fabricated_outputs == 1


@given(NAME, INSTRUCTION)
@settings(max_examples=40)
def test_bold_names_parse_like_plain_ones(name: str, instruction: str) -> None:
    for shape in (f"**Expert {name}:**", f"**Expert {name}**:", f"Expert **{name}**:"):
        calls = parse_turn(f"{shape}\n{Q}\n{instruction}\n{Q}").calls
        assert [c.name for c in calls] == [f"Expert {name}"], shape


@given(st.text(max_size=400))
@settings(max_examples=300)
def test_any_text_parses_without_error(text: str) -> None:
    parsed = parse_turn(text)
    for call in parsed.calls:
        assert call.name.startswith("Expert ")
        assert 2 <= len(call.name.split()) <= 6
        assert Q not in call.instruction


@given(st.text(max_size=300))
def test_extract_code_never_fails(text: str) -> None:
    code = extract_code(text)
    assert code is None or RUN_MARKER in text
