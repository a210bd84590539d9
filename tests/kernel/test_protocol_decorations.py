"""Decorations a model really writes around the protocol (issue 12, item 9): CRLF and CR
line endings, emphasis and headings around the final-answer marker, a fenced answer, and
a marker quoted inside an instruction, which never ends the turn.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from turn_strategies import INSTRUCTION, NAME, Q, render

from conductor_kernel.protocol import parse_turn
from conductor_kernel.reasoning import reasoning_spans


def test_crlf_line_endings_parse_like_lf() -> None:
    turn = f"Expert Mathematician:\r\n{Q}\r\nAdd 2 and 2.\r\n{Q}\r\n"
    assert [(c.name, c.instruction) for c in parse_turn(turn).calls] == [
        ("Expert Mathematician", "Add 2 and 2.")
    ]
    assert parse_turn(f">> FINAL ANSWER:\r\n{Q}\r\n42\r\n{Q}").final_answer == "42"


@pytest.mark.parametrize(
    "marker",
    [
        "**>> FINAL ANSWER:**",
        ">> **FINAL ANSWER:**",
        ">> **FINAL ANSWER**:",
        "__>> FINAL ANSWER:__",
        "*>> Final Answer:*",
        "### >> FINAL ANSWER:",
    ],
)
def test_a_decorated_final_answer_marker_gives_the_bare_answer(marker: str) -> None:
    assert parse_turn(f"{marker}\n{Q}\n42\n{Q}").final_answer == "42"
    assert parse_turn(f"{marker} **42**").final_answer == "42"


def test_a_fenced_final_answer_is_read_like_a_quoted_one() -> None:
    parsed = parse_turn(">> FINAL ANSWER:\n```\n(6 - 4) * 12\n```\n")
    assert parsed.final_answer == "(6 - 4) * 12" and parsed.answer_closed


def test_a_final_answer_marker_inside_an_instruction_is_not_the_answer() -> None:
    turn = (
        f"Expert Checker:\n{Q}\nCheck 6*7. End your reply with >> FINAL ANSWER: "
        f"and the number.\n{Q}\n"
    )
    parsed = parse_turn(turn)
    assert parsed.final_answer is None
    assert [c.name for c in parsed.calls] == ["Expert Checker"]
    assert ">> FINAL ANSWER:" in parsed.calls[0].instruction


LINE_ENDING = st.sampled_from(["\n", "\r\n", "\r"])
# Emphasis around the whole marker or its words, a heading mark, any case and spacing.
MARKER = st.builds(
    lambda wrap, inner, words, arrows: (
        f"{wrap}{arrows}**{words}:**{wrap}" if inner else f"{wrap}{arrows}{words}:{wrap}"
    ),
    st.sampled_from(["", "**", "__", "*"]),
    st.booleans(),
    st.sampled_from(["FINAL ANSWER", "Final Answer", "final answer", "FINAL  ANSWER"]),
    st.sampled_from([">>", ">> ", ">>  "]),
) | st.sampled_from(["### >> FINAL ANSWER:", "## >> Final answer:", "> >> FINAL ANSWER:"])
# A reasoning tag (`<think>`, closed or not) hides what follows by design
# (conductor_kernel/reasoning.py): an answer holding one is no plain answer.
ANSWER_TEXT = INSTRUCTION.filter(
    lambda t: "`" not in t and not t.startswith(("*", "_")) and not reasoning_spans(t)
)


@given(MARKER, ANSWER_TEXT, LINE_ENDING)
@settings(max_examples=150)
def test_any_decorated_marker_with_any_line_ending_gives_the_answer(
    marker: str, answer: str, eol: str
) -> None:
    answer = answer.replace("\r", " ").replace("\n", " ").strip() or "x"
    turn = f"Some reasoning.{eol}{eol}{marker}{eol}{Q}{eol}{answer}{eol}{Q}{eol}"
    parsed = parse_turn(turn)
    assert parsed.final_answer == answer, turn
    assert parsed.calls == []


@given(NAME, INSTRUCTION, LINE_ENDING, st.sampled_from(["", "**"]))
@settings(max_examples=100)
def test_any_call_with_any_line_ending_round_trips(
    name: str, instruction: str, eol: str, bold: str
) -> None:
    instruction = instruction.replace("\r", " ").replace("\n", " ").strip() or "x"
    turn = f"{bold}Expert {name}:{bold}{eol}{Q}{eol}{instruction}{eol}{Q}{eol}"
    parsed = parse_turn(turn)
    assert [(c.name, c.instruction.strip()) for c in parsed.calls] == [
        (f"Expert {name}", instruction)
    ]


@given(NAME, INSTRUCTION, MARKER, INSTRUCTION)
@settings(max_examples=100)
def test_a_marker_inside_an_instruction_never_ends_the_turn(
    name: str, before: str, marker: str, after: str
) -> None:
    instruction = f"{before}\n{marker} {after}"
    turn = render(name, instruction)
    parsed = parse_turn(turn)
    assert parsed.final_answer is None
    assert [c.instruction.strip() for c in parsed.calls] == [instruction.strip()]
