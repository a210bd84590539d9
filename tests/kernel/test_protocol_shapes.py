"""The protocol parser on a table of the turn shapes the published runs show, and what
it reports of a call: an unclosed quote, an empty instruction, a fabricated reply, the
Python expert, the code before the run marker.
"""

from __future__ import annotations

import pytest
from turn_strategies import Q

from conductor_kernel.protocol import RUN_MARKER, extract_code, parse_turn

# (id, turn, expected calls as (name, instruction), expected final answer or None)
TURNS: list[tuple[str, str, list[tuple[str, str]], str | None]] = [
    (
        "plain call",
        f"Expert Mathematician:\n{Q}\nCompute 2+2.\n{Q}",
        [("Expert Mathematician", "Compute 2+2.")],
        None,
    ),
    (
        "spaces and tabs around the name and colon, blank line before the quotes",
        f"Expert   Mathematician \t:  \n\n{Q}\nCompute 2+2.\n{Q}",
        [("Expert Mathematician", "Compute 2+2.")],
        None,
    ),
    (
        "lower case",
        f"expert python:\n{Q}\nprint(1)\n{Q}",
        [("Expert python", "print(1)")],
        None,
    ),
    (
        "upper case",
        f"EXPERT CHESS ANALYST:\n{Q}\nFind mate in one.\n{Q}",
        [("Expert CHESS ANALYST", "Find mate in one.")],
        None,
    ),
    (
        "closing quote missing at the end of the turn",
        f"Expert Poet:\n{Q}\nWrite a sonnet about rain.",
        [("Expert Poet", "Write a sonnet about rain.")],
        None,
    ),
    (
        "five-word name",
        f"Expert Very Careful Senior Chess Analyst:\n{Q}\nCheck.\n{Q}",
        [("Expert Very Careful Senior Chess Analyst", "Check.")],
        None,
    ),
    ("six-word name is no call", f"Expert A B C D E F:\n{Q}\nCheck.\n{Q}", [], None),
    (
        "name with a number",
        f"Expert Mathematician 2:\n{Q}\nRecheck.\n{Q}",
        [("Expert Mathematician 2", "Recheck.")],
        None,
    ),
    (
        "free text ending in a name",
        f"Let us have the poem written by Expert Poet:\n{Q}\nA sonnet on tides.\n{Q}",
        [("Expert Poet", "A sonnet on tides.")],
        None,
    ),
    (
        "several calls in one turn",
        f"Expert Geometer:\n{Q}\nArea?\n{Q}\n\nExpert Reviewer:\n{Q}\nCheck the area.\n{Q}",
        [("Expert Geometer", "Area?"), ("Expert Reviewer", "Check the area.")],
        None,
    ),
    (
        "a call and an answer in one turn",
        f"Expert Reviewer:\n{Q}\nCheck 24.\n{Q}\n\n>> FINAL ANSWER:\n{Q}\n24\n{Q}",
        [("Expert Reviewer", "Check 24.")],
        "24",
    ),
    (
        "empty instruction",
        f"Expert Linguist:\n{Q}\n{Q}",
        [("Expert Linguist", "")],
        None,
    ),
    (
        "fabricated expert reply",
        f"Expert Python's output:\n{Q}\nThe result is 24.\n{Q}",
        [],
        None,
    ),
    (
        "fabricated reply with a curly apostrophe",
        f"Expert Python’s output:\n{Q}\n24\n{Q}",
        [],
        None,
    ),
    (
        "bold markdown name",
        f"**Expert Python:**\n{Q}\nprint(6*4)\n{Q}",
        [("Expert Python", "print(6*4)")],
        None,
    ),
    (
        "bold name, colon outside",
        f"**Expert Python**:\n{Q}\nprint(6*4)\n{Q}",
        [("Expert Python", "print(6*4)")],
        None,
    ),
    (
        "call quoted inside the final answer",
        f">> FINAL ANSWER:\nAsk this:\nExpert Poet:\n{Q}\nWrite.\n{Q}",
        [],
        f"Ask this:\nExpert Poet:\n{Q}\nWrite.\n{Q}",
    ),
    (
        "name line with no quoted block",
        f"As checked by Expert Mathematician:\n\nthe boat takes 16 litres.\n\n"
        f">> FINAL ANSWER:\n{Q}\n16\n{Q}",
        [],
        "16",
    ),
    (
        "text after the colon on the same line",
        f"Expert Python: please compute\n{Q}\nprint(1)\n{Q}",
        [],
        None,
    ),
    (
        "ROUND header the harness wrote into a retried turn",
        f"ROUND 3:\n\nExpert Python:\n{Q}\nSort: b a\n{Q}",
        [("Expert Python", "Sort: b a")],
        None,
    ),
    (
        "instruction holding fenced code",
        f"Expert Python:\n{Q}\n```python\nprint(24)\n```\n{RUN_MARKER}\n{Q}",
        [("Expert Python", f"```python\nprint(24)\n```\n{RUN_MARKER}")],
        None,
    ),
    ("answer", f">> FINAL ANSWER:\n{Q}\n(4 + 5 * 6) - 10\n{Q}", [], "(4 + 5 * 6) - 10"),
    ("answer in lower case, tight spacing", f">>final answer:{Q}B{Q}", [], "B"),
    ("answer without quotes", ">> FINAL ANSWER: (B)\n", [], "(B)"),
    ("answer with its closing quote missing", f">> FINAL ANSWER:\n{Q}\n42", [], "42"),
    ("neither call nor answer", "I think the answer is 24.", [], None),
]


@pytest.mark.parametrize(
    ("turn", "calls", "answer"), [t[1:] for t in TURNS], ids=[t[0] for t in TURNS]
)
def test_turn_shapes(turn: str, calls: list[tuple[str, str]], answer: str | None) -> None:
    parsed = parse_turn(turn)
    assert [(c.name, c.instruction.strip()) for c in parsed.calls] == calls
    assert parsed.final_answer == answer


def test_missing_closing_quotes_are_flagged() -> None:
    call = parse_turn(f"Expert Poet:\n{Q}\nWrite.").calls[0]
    assert not call.closed
    assert parse_turn(f"Expert Poet:\n{Q}\nWrite.\n{Q}").calls[0].closed
    assert not parse_turn(f">> FINAL ANSWER:\n{Q}\n42").answer_closed


def test_empty_instruction_is_reported_but_not_dispatchable() -> None:
    parsed = parse_turn(f"Expert Linguist:\n{Q}\n  \n{Q}\nExpert Poet:\n{Q}\nA line.\n{Q}")
    assert [c.is_empty for c in parsed.calls] == [True, False]
    assert [c.name for c in parsed.dispatchable] == ["Expert Poet"]


def test_fabricated_outputs_are_counted() -> None:
    turn = f"Expert Python's output:\n{Q}\n24\n{Q}\n\nExpert Critic's output:\n{Q}\nok\n{Q}"
    assert parse_turn(turn).fabricated_outputs == 2


@pytest.mark.parametrize(
    ("name", "python"),
    [("Expert Python", True), ("Expert python", True), ("Expert Python Reviewer", False)],
)
def test_python_expert_is_recognised_by_name(name: str, python: bool) -> None:
    call = parse_turn(f"{name}:\n{Q}\nx\n{Q}").calls[0]
    assert call.is_python is python


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (f"```python\nprint(1)\n```\n{RUN_MARKER}", "print(1)\n"),
        (f"```python\nprint(1)\n```\n```py\nprint(2)\n```\n{RUN_MARKER}", "print(2)\n"),
        (f"```\nprint(3)\n```\n{RUN_MARKER} and then more text", "print(3)\n"),
        (f"```python3\nprint(4)\n```{RUN_MARKER}", "print(4)\n"),
        ("```python\nprint(1)\n```\nno marker here", None),
        (f"{RUN_MARKER} but no code at all", None),
        (f"{RUN_MARKER}\n```python\nprint(5)\n```", None),  # the block comes after the marker
    ],
)
def test_extract_code_takes_the_last_fenced_block_before_the_marker(
    reply: str, code: str | None
) -> None:
    assert extract_code(reply) == code
