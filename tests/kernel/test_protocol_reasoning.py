"""Reasoning is not protocol: every marker shape the parser knows, wrapped in every form of
reasoning block a server sends, is never a call, a final answer or code to run; the same
markers outside reasoning still are (issue 27, item 2).
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st
from turn_strategies import INSTRUCTION, NAME, Q, render

from conductor_kernel.protocol import RUN_MARKER, extract_code, parse_turn
from conductor_kernel.reasoning import ReasoningFold, folded, split_reasoning

# Every shape of a marker, from a name and an instruction (or answer) text.
CALL_SHAPES: list[Callable[[str, str], str]] = [
    lambda n, t: render(n, t),
    lambda n, t: f"**Expert {n}:**\n{Q}\n{t}\n{Q}",
    lambda n, t: f"Expert **{n}**:\n{Q}\n{t}\n{Q}",
    lambda n, t: f"Expert Python:\n{Q}\n```python\nprint({t!r})\n```\n{RUN_MARKER}\n{Q}",
    lambda n, t: f"Let me ask Expert {n}:\n{Q}\n{t}",  # closing quote missing
]
ANSWER_SHAPES: list[Callable[[str], str]] = [
    lambda t: f">> FINAL ANSWER:\n{Q}\n{t}\n{Q}",
    lambda t: f"**>> FINAL ANSWER:**\n{Q}\n{t}\n{Q}",
    lambda t: f">>FINAL ANSWER: {t}",
    lambda t: f"## >> Final Answer:\n```\n{t}\n```",
    lambda t: f">> FINAL ANSWER:\n{Q}\n{t}",  # closing quote missing
]


def _closed(tag: str) -> Callable[[str], str]:
    return lambda body: f"<{tag}>\n{body}\n</{tag}>"


# The forms a reasoning block takes in a reply's text. `at_start` forms only occur
# first (the template opened the block), `at_end` ones only last (a cut turn).
WRAPS: dict[str, Callable[[str], str]] = {
    "think": _closed("think"),
    "THINK": _closed("THINK"),
    "thinking": _closed("thinking"),
    "reasoning": _closed("reasoning"),
    "folded reasoning_content": lambda body: folded(body, ""),
}
AT_START: dict[str, Callable[[str], str]] = {"opened by template": lambda b: f"{b}\n</think>"}
AT_END: dict[str, Callable[[str], str]] = {"unclosed": lambda b: f"<think>\n{b}"}

PROSE = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs", "Cc"), blacklist_characters="\"<>:*`#'’"
        ),
        max_size=60,
    )
    .filter(lambda s: "expert" not in s.lower() and "final" not in s.lower())
    .map(str.strip)
)
MARKER = st.one_of(
    st.builds(lambda shape, n, t: shape(n, t), st.sampled_from(CALL_SHAPES), NAME, INSTRUCTION),
    st.builds(lambda shape, t: shape(t), st.sampled_from(ANSWER_SHAPES), INSTRUCTION),
)


def _nothing_acted_on(turn: str) -> None:
    parsed = parse_turn(turn)
    assert parsed.calls == [], turn
    assert parsed.final_answer is None, turn
    assert extract_code(turn) is None, turn


@given(
    st.lists(MARKER, min_size=1, max_size=3).map("\n\n".join),
    st.sampled_from(sorted(WRAPS)),
    PROSE,
    PROSE,
)
@settings(max_examples=80)
def test_markers_inside_reasoning_are_never_acted_on(
    markers: str, wrap: str, before: str, after: str
) -> None:
    _nothing_acted_on(f"{before}\n{WRAPS[wrap](markers)}\n{after}")


@given(st.lists(MARKER, min_size=1, max_size=3).map("\n\n".join), PROSE)
@settings(max_examples=40)
def test_reasoning_opened_by_the_template_or_cut_off_is_never_acted_on(
    markers: str, prose: str
) -> None:
    for wrap in AT_START.values():
        _nothing_acted_on(f"{wrap(markers)}\n{prose}")
    for wrap in AT_END.values():
        _nothing_acted_on(f"{prose}\n{wrap(markers)}")


@given(
    st.sampled_from(CALL_SHAPES[:3]),
    NAME,
    INSTRUCTION,
    st.lists(MARKER, min_size=1, max_size=2).map("\n\n".join),
    st.sampled_from(sorted(WRAPS)),
)
@settings(max_examples=50)
def test_a_call_outside_reasoning_is_dispatched_as_without_it(
    shape: Callable[[str, str], str], name: str, instruction: str, thought: str, wrap: str
) -> None:
    call = shape(name, instruction)
    alone = parse_turn(call)
    assert [c.instruction.strip() for c in alone.calls] == [instruction]
    with_thought = parse_turn(f"{WRAPS[wrap](thought)}\n{call}")
    assert [(c.name, c.instruction) for c in with_thought.calls] == [
        (c.name, c.instruction) for c in alone.calls
    ]
    assert with_thought.final_answer is None


@given(
    st.sampled_from(ANSWER_SHAPES),
    INSTRUCTION,
    st.lists(MARKER, min_size=1, max_size=2).map("\n\n".join),
    st.sampled_from(sorted(WRAPS)),
)
@settings(max_examples=50)
def test_an_answer_outside_reasoning_is_taken_as_without_it(
    shape: Callable[[str], str], answer: str, thought: str, wrap: str
) -> None:
    text = shape(answer)
    alone = parse_turn(text)
    assert alone.final_answer is not None
    with_thought = parse_turn(f"{WRAPS[wrap](thought)}\n{text}")
    assert with_thought.calls == []
    assert with_thought.final_answer == alone.final_answer


@given(INSTRUCTION, st.lists(st.sampled_from(["r", "t"]), min_size=1, max_size=12))
@settings(max_examples=40)
def test_a_fold_keeps_every_piece_and_reads_back_as_reasoning(body: str, order: list[str]) -> None:
    fold = ReasoningFold()
    out = []
    thought, said = [], []
    for i, kind in enumerate(order):
        piece = f"{kind}{i} "
        if kind == "r":
            out.append(fold.reasoning(piece))
            thought.append(piece)
        else:
            out.append(fold.text(piece))
            said.append(piece)
    out.append(fold.close())
    split = split_reasoning("".join(out))
    assert "".join(split.reasoning).replace(" ", "") == "".join(thought).replace(" ", "")
    assert split.visible.replace("\n", "").replace(" ", "") == "".join(said).replace(" ", "")
