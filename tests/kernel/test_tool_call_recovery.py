"""Tool calls written as text instead of made (issue 34): over generated calls written in
every form small models use (a `<tool_call>` block, closed or not; bare JSON; every brace
doubled; a code fence; OpenAI's wire shape; `parameters` for `arguments`), with prose
around them, each is read back as the call it is, in order; prose, JSON that names no
tool, and reasoning are never read as calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.carrier.recover import calls_in_text
from conductor_kernel.carrier.tools import TOOL_NAMES

# Any text but a reasoning tag: `<think>` opens reasoning wherever it is written, and a
# call inside reasoning is never read (test_a_call_only_thought_about_is_none).
# Nor a backspace, form feed or carriage return: written as `\\b`, `\\f`, `\\r` before a
# letter, they are read as the LaTeX a model meant (`\\frac`, `\\beta`, `\\right`; see
# test_latex_in_a_call_written_as_text_keeps_its_backslashes).
ANY_TEXT = st.text(alphabet=st.characters(blacklist_characters="\b\f\r"), max_size=60).filter(
    lambda t: "think>" not in t.lower()
)
ARGS: dict[str, Any] = {
    "consult_expert": st.fixed_dictionaries({"name": ANY_TEXT, "instruction": ANY_TEXT}),
    "run_python": st.fixed_dictionaries({"code": ANY_TEXT}),
    "final_answer": st.fixed_dictionaries({"answer": ANY_TEXT}),
    "answer_with_checked_result": st.just({}),
}
CALL = st.sampled_from(TOOL_NAMES).flatmap(lambda n: st.tuples(st.just(n), ARGS[n]))
# Prose that holds no JSON of its own (no braces or brackets) and no tags.
PROSE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="{}[]<"),
    max_size=80,
)


def _json(name: str, args: dict[str, str], key: str, ascii_only: bool) -> str:
    return json.dumps({"name": name, key: args}, ensure_ascii=ascii_only)


FORMS: dict[str, Callable[[str], str]] = {
    "tag": lambda j: f"<tool_call>\n{j}\n</tool_call>",
    "unclosed tag": lambda j: f"<tool_call>{j}",
    "bare": lambda j: j,
    "doubled braces": lambda j: j.replace("{", "{{").replace("}", "}}"),
    "fenced": lambda j: f"```json\n{j}\n```",
    "doubled in a tag": lambda j: (
        "<tool_call>" + j.replace("{", "{{").replace("}", "}}") + "</tool_call>"
    ),
}


@st.composite
def written_call(draw: st.DrawFn) -> tuple[str, str, dict[str, str]]:
    """(the call as written, its tool, its arguments)."""
    name, args = draw(CALL)
    ascii_only = draw(st.booleans())
    if draw(st.booleans()):  # OpenAI's wire shape: the arguments as a JSON string
        j = json.dumps(
            {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        )
    else:
        j = _json(name, args, draw(st.sampled_from(["arguments", "parameters"])), ascii_only)
    form = draw(st.sampled_from(sorted(FORMS)))
    if form == "unclosed tag":
        form = "tag"  # only the last call of a reply may leave its tag open
    return FORMS[form](j), name, args


@settings(max_examples=300)
@given(written_call(), PROSE, PROSE, st.booleans())
def test_a_call_in_any_written_form_is_read_back(
    call: tuple[str, str, dict[str, str]], before: str, after: str, open_tag: bool
) -> None:
    written, name, args = call
    if open_tag and written.startswith("<tool_call>") and written.endswith("</tool_call>"):
        written, after = written[: -len("</tool_call>")], ""
    found = calls_in_text(f"{before}\n{written}\n{after}")
    assert [(c.name, json.loads(c.arguments)) for c in found] == [(name, args)]


@settings(max_examples=150)
@given(st.lists(st.tuples(written_call(), PROSE), min_size=1, max_size=4))
def test_several_calls_are_read_in_order(
    calls: list[tuple[tuple[str, str, dict[str, str]], str]],
) -> None:
    text = "\n".join(f"{written}\n{prose}" for (written, _, _), prose in calls)
    found = calls_in_text(text)
    assert [(c.name, json.loads(c.arguments)) for c in found] == [(n, a) for (_, n, a), _ in calls]


@settings(max_examples=150)
@given(PROSE)
def test_prose_is_no_call(prose: str) -> None:
    assert calls_in_text(prose) == []


@settings(max_examples=150)
@given(st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=3), ANY_TEXT, PROSE)
def test_json_that_names_no_tool_is_no_call_outside_a_tag(
    data: dict[str, str], who: str, prose: str
) -> None:
    """An answer that happens to be JSON, or a call-shaped object naming no tool of the
    protocol, is text; inside a `<tool_call>` block the same object is a call (to a
    tool that does not exist, which the model is then told)."""
    named = {"name": who, "arguments": data}
    bare = f"{prose} {json.dumps(data)} {json.dumps(named)}"
    assert [c.name for c in calls_in_text(bare)] == ([who] if who in TOOL_NAMES else [])
    tagged = calls_in_text(f"<tool_call>{json.dumps(named)}</tool_call>")
    assert [(c.name, json.loads(c.arguments)) for c in tagged] == [(who, data)]


@settings(max_examples=100)
@given(written_call(), PROSE)
def test_a_call_only_thought_about_is_none(
    call: tuple[str, str, dict[str, str]], prose: str
) -> None:
    written, _, _ = call
    assert calls_in_text(f"<think>\n{written}\n</think>\n{prose}") == []


CODE_LINES = st.lists(
    st.text(
        st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\'),
        min_size=1,
        max_size=30,
    ).filter(lambda line: line.strip() == line),
    min_size=1,
    max_size=5,
)


@settings(max_examples=100)
@given(lines=CODE_LINES, indent=st.sampled_from(["", "  ", "    ", "\t"]), after=st.booleans())
def test_a_program_written_as_a_triple_quoted_string_is_read_dedented(
    lines: list[str], indent: str, after: bool
) -> None:
    body = "\n".join(indent + line for line in lines)
    text = f'{{"name": "run_python", "arguments": {{"code": """\n{body}\n{indent}"""}}}}'
    if after:
        text += '\n{"name": "final_answer", "arguments": {"answer": "7"}}'
    calls = calls_in_text(text)
    assert calls[0].name == "run_python"
    assert json.loads(calls[0].arguments) == {"code": "\n".join(lines)}
    assert [c.name for c in calls[1:]] == (["final_answer"] if after else [])


@given(name=st.sampled_from(["Expert Reviewer", "expert mathematician", "Expert"]))
def test_a_call_named_for_the_expert_is_a_consultation_when_it_says_what_to_ask(
    name: str,
) -> None:
    text = json.dumps({"name": name, "arguments": {"instruction": "Check 3 + 4."}})
    [call] = calls_in_text(text)
    assert call.name == "consult_expert"
    assert json.loads(call.arguments) == {"name": name, "instruction": "Check 3 + 4."}
    assert calls_in_text(json.dumps({"name": name, "arguments": {"x": 1}})) == []


LATEX = st.lists(
    st.sampled_from(
        [r"\(", r"\)", r"\[", r"\]", r"\frac{4}{6}", r"\sqrt{2}", r"\cdot", r"\div",
         r"\beta", r"\left(", r"\right)", r"\pm", r"\{", " 24 ", "check ", "x = 5"]
    ),
    min_size=1,
    max_size=8,
).map("".join)  # fmt: skip


@given(LATEX, st.sampled_from(["Expert Reviewer", "consult_expert"]))
def test_latex_in_a_call_written_as_text_keeps_its_backslashes(latex: str, name: str) -> None:
    """A small model writes LaTeX into a JSON string unescaped (Qwen2.5-Coder-1.5B:
    `"instruction": "Review \\(\\frac{4 \\times 5}{6} + 10\\)"`): the call is still read,
    and its backslashes stand for themselves."""
    if name == "consult_expert":
        body = (
            f'{{"name": "{name}", "arguments": {{"name": "Expert X", "instruction": "{latex}"}}}}'
        )
    else:
        body = f'{{"name": "{name}", "arguments": {{"name": "{name}", "instruction": "{latex}"}}}}'
    calls = calls_in_text(f"```json\n{body}\n```")
    assert len(calls) == 1 and calls[0].name == "consult_expert"
    assert json.loads(calls[0].arguments)["instruction"] == latex
