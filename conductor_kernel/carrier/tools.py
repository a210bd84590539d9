"""The protocol as tool calls: the tools a meta turn is offered, and reading its calls.

Three tools carry the protocol's acts: `consult_expert` (a name and an instruction),
`run_python` (code for Expert Python, which runs it as given) and `final_answer`. A
turn's calls become the same `ParsedTurn` the text parser gives (its expert calls up to
the first answer, and the answer), so everything after (dispatch, events, transcript,
audit) is the text protocol's. As in the text, an answer ends the turn: calls written
after it are not run. A call that cannot be acted on (a tool not offered this round,
arguments that are not a JSON object, a field missing) gets a `problem`: one sentence
for the model, sent back as that call's result.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from conductor_kernel.interfaces import ToolCall, ToolSpec
from conductor_kernel.protocol import RUN_MARKER, ExpertCall, ParsedTurn, parse_turn

CONSULT = "consult_expert"
RUN_PYTHON = "run_python"
FINAL = "final_answer"
# Offered only when a checked result is at hand (the notebook handed over a program
# checked on the question, or a line a program of the run printed passed the check once
# the model's own answer failed it): its answer, cited rather than copied (a 1.5B model copying `(1+11)*(13-11)` into a
# final_answer call dropped the opening parenthesis, in 4 of 14 puzzles).
CITE = "answer_with_checked_result"
TOOL_NAMES = (CONSULT, RUN_PYTHON, FINAL, CITE)
PYTHON_EXPERT = "Expert Python"


def _object(properties: dict[str, str], required: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": "string", "description": v} for k, v in properties.items()},
        "required": list(required),
    }


CONSULT_SPEC = ToolSpec(
    CONSULT,
    "Consult an expert. It has not seen the question or anything else: the instruction "
    "must hold everything it needs. Its reply comes back as this call's result.",
    _object(
        {
            "name": "The expert's name, e.g. Expert Mathematician or Expert Reviewer.",
            "instruction": "All the expert needs: the numbers, text and constraints, and "
            "the form of reply wanted.",
        },
        ["name", "instruction"],
    ),
)
RUN_PYTHON_SPEC = ToolSpec(
    RUN_PYTHON,
    "Run a Python 3 program in a sandbox (standard library, numpy, sympy; no network). "
    "What it prints comes back as this call's result.",
    _object({"code": "The whole program; it must print its results."}, ["code"]),
)
FINAL_SPEC = ToolSpec(
    FINAL,
    "Give the final answer to the question. This ends the session: give it only once "
    "the solution has been checked.",
    _object(
        {"answer": "The answer alone (for a multiple-choice question, the option)."}, ["answer"]
    ),
)


CITE_SPEC = ToolSpec(
    CITE,
    "Give, as the final answer, exactly the checked result above: what a program printed "
    "for this question (the notebook's, or one of this session's) that the task's check "
    "accepts. This ends the session.",
    {"type": "object", "properties": {}, "required": []},
)


def offered_tools(
    *, python: bool, answer: bool, cite: bool = False, consult: bool = True
) -> tuple[ToolSpec, ...]:
    """The tools of one meta turn: the experts unless closed (`consult`; Python only
    when it runs), the answer unless withheld, and the checked result to cite when one
    is at hand (`cite`)."""
    specs = [CONSULT_SPEC] if consult else []
    if python and consult:
        specs.append(RUN_PYTHON_SPEC)
    if answer:
        specs.append(FINAL_SPEC)
        if cite:
            specs.append(CITE_SPEC)
    return tuple(specs)


@dataclass(frozen=True)
class ReadCall:
    """One tool call, read: the expert call or the answer it is, or why it is neither."""

    call: ToolCall
    expert: ExpertCall | None = None
    answer: str | None = None
    problem: str | None = None
    after_answer: bool = False  # written after the turn's answer: not run


@dataclass(frozen=True)
class ToolTurn:
    """A turn's tool calls, read, and the `ParsedTurn` they come to."""

    reads: list[ReadCall]
    parsed: ParsedTurn

    @property
    def problems(self) -> list[ReadCall]:
        return [r for r in self.reads if r.problem is not None]


def arguments_of(call: ToolCall) -> dict[str, Any] | str:
    """The call's arguments as an object, or why they are not one."""
    text = call.arguments.strip()
    if not text:
        return {}
    try:
        value = json.loads(text, strict=False)  # raw newlines in strings: models write them
    except json.JSONDecodeError as exc:
        return f"its arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return f"its arguments are a JSON {type(value).__name__}, not an object"
    return value


def _text_field(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def expert_name(raw: str) -> str:
    """`Mathematician`, `expert mathematician`, `Expert  Mathematician` -> one form."""
    words = raw.replace("*", " ").split()
    if words and words[0].lower() == "expert":
        words = words[1:]
    return "Expert " + " ".join(words)


def _read_one(
    call: ToolCall, offered: Collection[str], index: int, cited: str | None = None
) -> ReadCall:
    # An answer is read even in a round that withholds it: the policy that withheld it
    # (consult first) then says why it is not taken, as for an answer written as text.
    if call.name == CITE:
        if cited is None:
            return ReadCall(call, problem="there is no checked result to cite in this run")
        return ReadCall(call, answer=cited)
    if call.name not in offered and call.name != FINAL:
        if call.name in TOOL_NAMES:
            return ReadCall(call, problem=f"{call.name} is not offered in this round")
        tools = ", ".join(sorted(offered))
        return ReadCall(call, problem=f"there is no tool named {call.name!r} (the tools: {tools})")
    args = arguments_of(call)
    if isinstance(args, str):
        return ReadCall(call, problem=args)
    if call.name == FINAL:
        answer = _text_field(args, "answer")
        if answer is None or not answer.strip():
            return ReadCall(call, problem='final_answer needs a non-empty "answer" string')
        return ReadCall(call, answer=answer.strip())
    if call.name == RUN_PYTHON:
        code = _text_field(args, "code")
        if code is None or not code.strip():
            return ReadCall(call, problem='run_python needs the program as a "code" string')
        program = f"```python\n{code.strip(chr(10))}\n```\n{RUN_MARKER}"
        return ReadCall(call, expert=ExpertCall(PYTHON_EXPERT, program, start=index))
    name = _text_field(args, "name")
    instruction = _text_field(args, "instruction")
    if name is None or not expert_name(name).removeprefix("Expert").strip():
        return ReadCall(call, problem='consult_expert needs the expert\'s "name"')
    if instruction is None:
        return ReadCall(call, problem='consult_expert needs an "instruction" string')
    # An empty instruction is an expert call the loop declines, as in the text protocol.
    return ReadCall(
        call, expert=ExpertCall(expert_name(name), instruction.strip("\n"), start=index)
    )


def read_tool_calls(
    calls: Sequence[ToolCall], offered: Collection[str], *, cited: str | None = None
) -> ToolTurn:
    """The turn's calls, in order, read against the tools it was offered; `cited` is
    the answer a `CITE` call gives (the checked result handed over, if any)."""
    reads: list[ReadCall] = []
    experts: list[ExpertCall] = []
    answer: str | None = None
    for index, call in enumerate(calls):
        read = _read_one(call, offered, index, cited)
        if answer is not None and read.problem is None:
            read = ReadCall(call, expert=read.expert, answer=read.answer, after_answer=True)
        elif read.answer is not None:
            answer = read.answer
        elif read.expert is not None:
            experts.append(read.expert)
        reads.append(read)
    return ToolTurn(reads, ParsedTurn(calls=experts, final_answer=answer))


def answer_written(text: str, calls: Sequence[dict[str, str]]) -> str | None:
    """The final answer a recorded turn wrote (`MetaTurnFinished.text` and `tool_calls`),
    taken or not: its first `final_answer` call's, else the text protocol's."""
    for call in calls:
        if call.get("name") == FINAL:
            read = _read_one(ToolCall(FINAL, call.get("arguments", "")), (FINAL,), 0)
            if read.answer is not None:
                return read.answer
    return parse_turn(text).final_answer
