"""The final-answer family small models write (seen with Qwen2.5-Coder-1.5B): `>>` and
`FINAL ANSWER:` on separate lines, or `Final Answer:` without `>>`, at a line's start,
are answers; "final answer" inside a sentence is not; the strict marker wins when both
are present. Generated from the grammar, not listed.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from turn_strategies import INSTRUCTION, Q

from conductor_kernel.protocol import parse_final_answer, parse_turn

CASED = st.tuples(*[st.booleans()] * 12).map(
    lambda ups: "".join(
        c.upper() if u else c.lower() for c, u in zip("final answer", ups, strict=False)
    )
)
HEADING = st.sampled_from(["", "# ", "## ", "### "])
EMPHASIS = st.sampled_from(["", "**", "__", "*"])
ARROW = st.sampled_from(["", ">>\n", ">> \n", "**>>**\n", ">>\n\n"])
INDENT = st.sampled_from(["", " ", "  "])
BODY = st.sampled_from(["quoted", "fenced", "bare"])
PROSE = st.sampled_from(["", "Let me check.\n", "Round result:\n\n", "6 * 4 = 24\n"])


def marker(heading: str, emphasis: str, arrow: str, indent: str, words: str) -> str:
    return f"{indent}{heading}{arrow}{emphasis}{words}:{emphasis}"


def body(kind: str, answer: str) -> str:
    if kind == "quoted":
        return f"\n{Q}\n{answer}\n{Q}"
    if kind == "fenced":
        return f"\n```\n{answer}\n```"
    return f" {answer}"


@given(PROSE, HEADING, EMPHASIS, ARROW, INDENT, CASED, BODY, INSTRUCTION)
@settings(max_examples=60)
def test_every_form_of_the_loose_family_is_an_answer(
    prose: str, heading: str, emphasis: str, arrow: str, indent: str, words: str, kind: str,
    answer: str,
) -> None:  # fmt: skip
    if kind == "fenced":
        answer = answer.replace("`", "")
    if not answer.strip() or (kind == "bare" and answer != answer.strip("*_")):
        return
    turn = prose + marker(heading, emphasis, arrow, indent, words) + body(kind, answer)
    assert parse_turn(turn).final_answer == answer.strip()
    assert parse_final_answer(turn, strict=True)[0] is None  # the published reading


@given(st.sampled_from(["So the", "I think the", "Here is my", "- the"]), CASED, INSTRUCTION)
@settings(max_examples=60)
def test_final_answer_inside_a_sentence_is_prose(lead: str, words: str, text: str) -> None:
    assert parse_turn(f"{lead} {words}: {text}").final_answer is None


@given(HEADING, ARROW, CASED, INSTRUCTION, INSTRUCTION)
@settings(max_examples=60)
def test_the_strict_marker_wins_over_a_loose_one(
    heading: str, arrow: str, words: str, loose: str, strict: str
) -> None:
    for turn in (
        f"{heading}{arrow}{words}: {loose}\n\n>> FINAL ANSWER:\n{Q}\n{strict}\n{Q}",
        f">> FINAL ANSWER:\n{Q}\n{strict}\n{Q}\n\n{heading}{arrow}{words}: {loose}",
    ):
        assert parse_turn(turn).final_answer == strict


@given(HEADING, ARROW, CASED, INSTRUCTION)
@settings(max_examples=40)
def test_a_loose_marker_inside_an_instruction_is_part_of_it(
    heading: str, arrow: str, words: str, text: str
) -> None:
    turn = f"Expert Checker:\n{Q}\nCheck this, then write\n{heading}{arrow}{words}: {text}\n{Q}"
    parsed = parse_turn(turn)
    assert parsed.final_answer is None
    assert len(parsed.calls) == 1
