"""The protocol parser: a table of the turn shapes the published runs show, properties
that hold for any text, and agreement with the original harness on every published turn.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.protocol import RUN_MARKER, extract_code, parse_turn
from transcripts.published import harness_calls, normalise_expert_name, read_published

Q = '"""'

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


# --- properties -----------------------------------------------------------------------

WORD = st.from_regex(r"[A-Z][a-z]{1,9}", fullmatch=True).filter(lambda w: w.lower() != "expert")
NAME = st.lists(WORD, min_size=1, max_size=5).map(" ".join)
# Instructions: any printable text without triple quotes, not blank.
INSTRUCTION = (
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"'),
        min_size=1,
        max_size=200,
    )
    .map(str.strip)
    .filter(bool)
)
SPACE = st.sampled_from(["", " ", "  ", "\t"])
GAP = st.sampled_from(["\n", "\n\n", "\n  \n", " \n"])


def render(name: str, instruction: str, before: str = "", after: str = "", gap: str = "\n") -> str:
    return f"Expert {name}{before}:{after}{gap}{Q}\n{instruction}\n{Q}"


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


# --- agreement with the original harness on every published turn -----------------------


def _published_turns(shared_dir: Path, folder: str):
    for path in sorted((shared_dir / "transcripts" / folder).glob("*.jsonl")):
        for record in read_published(path).records:
            for turn in record.turns:
                yield path.stem, record.line, turn.number, turn.text


def _disagreements(shared_dir: Path, folder: str) -> list[tuple[str, int, int, list, list]]:
    found = []
    for task, line, number, text in _published_turns(shared_dir, folder):
        theirs = [(normalise_expert_name(n), i) for n, i in harness_calls(text) or []]
        ours = [(c.name, c.instruction.strip()) for c in parse_turn(text).calls]
        if ours != theirs:
            found.append((task, line, number, theirs, ours))
    return found


def test_parser_dispatches_what_the_harness_did_on_every_with_python_turn(
    shared_dir: Path,
) -> None:
    # The one difference: a turn holding a real call and a fabricated reply, where the
    # harness also sent the fabricated "Expert Python's output" block to an "expert".
    differences = _disagreements(shared_dir, "with-python")
    assert differences, "expected the known fabricated-reply dispatch"
    for task, line, number, theirs, ours in differences:
        fabricated = [c for c in theirs if "'s output" in c[0]]
        assert fabricated, f"{task}:{line} turn {number}: harness {theirs} vs ours {ours}"
        assert [c for c in theirs if c not in fabricated] == ours


def test_parser_differs_from_the_harness_without_python_only_on_punctuated_names(
    shared_dir: Path,
) -> None:
    # The harness's name pattern took only letters, digits and underscores, so it never
    # dispatched "Expert Arithmetic Double-Checker:" or "Expert Word Sorter (Revisited):";
    # we do. No other difference is allowed.
    differences = _disagreements(shared_dir, "without-python")
    for task, line, number, theirs, ours in differences:
        extra = [c for c in ours if c not in theirs]
        assert theirs == [c for c in ours if c not in extra], f"{task}:{line} turn {number}"
        assert all(re.search(r"[^\w ]", name.removeprefix("Expert ")) for name, _ in extra)


# --- decorations a model really writes (issue 12, item 9) ---------------------------------


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
ANSWER_TEXT = INSTRUCTION.filter(lambda t: "`" not in t and not t.startswith(("*", "_")))


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
