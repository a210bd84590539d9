"""Tools, not transcripts: a program that produced a verified answer, made to take its
inputs from any question of its kind.

A program pasted with one question's data (`words = ['pear', 'apple']`,
`find_expression(4, 5, 6, 10)`, `result = ((-1 + 2) * 3)`) is parsed, and every
literal that is a piece of the question becomes a *parameter*: the slice of a new
question found between the same anchors (the text just before and after the piece in
the question it was learned from), read as text, words, whole numbers, or an arithmetic
expression. The answer is read from the program's output where the original answer was
(its first or last line). The tool runs with the question on standard input, in the
sandbox, never on the host. This module is what a tool is and how one is used; how one
is made of a program is lessons/forms/tool_making.py.

A tool carries the *form* of the question it answers: the question's words, numbers and
signs outside its parameters, in order, with a slot for each parameter, and for each
parameter the kinds of character its value was written with (digits, lower-case letters,
spaces, `+ - * ( )`...). It applies to a question only when the question parses
completely under one of its forms: every anchor found, each parameter as many values as
it read before, every other word, number and sign in its place and nothing more, and each
value written with the characters it was learned with. A bag of known words is not
enough: an instruction after a list, another target, a decimal point, a capital, a
sign make another question, which the tool was never shown to answer.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from conductor_kernel import pyparse
from conductor_kernel.interfaces import TaskScoring
from lessons.forms.problems import core_input
from lessons.forms.question_form import FUNCTION_WORDS, form_of, shape_of

PARAM_KINDS = ("text", "words", "ints", "expr")
INT_RE = re.compile(r"-?\d+")


@dataclass
class Param:
    kind: str  # one of PARAM_KINDS
    left: str  # anchor text before the piece ("" = the question's start)
    right: str  # anchor text after it ("" = the question's end)
    count: int = 0  # values read when learned (words, ints)


@dataclass
class Tool:
    program: str  # the body, with parameters read through _p(i)
    params: list[Param]
    answer_line: int  # 0 = first line of the output, -1 = last
    vocabulary: list[str] = field(default_factory=list)  # words met outside parameters
    forms: list[list[str]] = field(default_factory=list)  # whole-question forms (form_of)
    shapes: list[str] = field(default_factory=list)  # per parameter: its characters' classes

    @property
    def tool_hash(self) -> str:
        body = json.dumps([self.program, [asdict(p) for p in self.params], self.answer_line])
        return hashlib.sha256(body.encode()).hexdigest()[:24]

    def to_json(self) -> str:
        return json.dumps(
            {
                "program": self.program,
                "params": [asdict(p) for p in self.params],
                "answer_line": self.answer_line,
                "vocabulary": self.vocabulary,
                "forms": self.forms,
                "shapes": self.shapes,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Tool:
        data = json.loads(text)
        return cls(
            data["program"],
            [Param(**p) for p in data["params"]],
            int(data["answer_line"]),
            list(data.get("vocabulary", [])),
            [list(f) for f in data.get("forms", [])],
            list(data.get("shapes", [])),
        )


# -- finding a parameter in a question (runs on the host and, as source, in the sandbox) --


def locate(question: str, left: str, right: str) -> tuple[int, int] | None:
    """The span between the anchors, whitespace-insensitive; None when one is missing."""
    import re as _re

    def pattern(text: str) -> str:
        return r"\s+".join(_re.escape(part) for part in text.split())

    start = 0
    if left.strip():
        found = _re.search(pattern(left), question)
        if found is None:
            return None
        start = found.end()
    end = len(question)
    if right.strip():
        found = _re.search(pattern(right), question[start:])
        if found is None:
            return None
        end = start + found.start()
    return start, end


def read_param(question: str, kind: str, left: str, right: str) -> Any:
    """The parameter's value in `question`, or None when it is not there."""
    import re as _re

    span = locate(question, left, right)
    if span is None:
        return None
    piece = question[span[0] : span[1]].strip()
    if not piece:
        return None
    if kind == "words":
        return piece.split()
    if kind == "ints":
        return [int(x) for x in _re.findall(r"-?\d+", piece)]
    return piece


_PRELUDE_TAIL = """
import sys as _sys
_Q = _sys.stdin.read()
_PARAMS = {params!r}


def _p(i):
    kind, left, right = _PARAMS[i]
    value = read_param(_Q, kind, left, right)
    if value is None:
        raise SystemExit("this question has no parameter " + str(i))
    if kind == "expr":
        return eval(value, {{"__builtins__": {{}}}})
    return value
"""


def program_for(tool: Tool) -> str:
    """The whole program: the question readers, then the tool's body."""
    import inspect

    params = [(p.kind, p.left, p.right) for p in tool.params]
    prelude = (
        "from __future__ import annotations\n\n"
        + inspect.getsource(locate)
        + "\n\n"
        + inspect.getsource(read_param)
    )
    return prelude + _PRELUDE_TAIL.format(params=params) + "\n" + tool.program


def render_form(tool: Tool) -> str:
    """The tool's first form in one line, each slot named by what it takes."""
    if not tool.forms:
        return "(no form)"

    def name(index: int) -> str:
        param = tool.params[index]
        if param.kind == "ints":
            return "<number>"
        if param.kind == "words":
            return "<list of words>"
        if param.kind == "expr":
            return "<expression>"
        return "<text>"

    tokens = []
    for token in tool.forms[0]:
        found = re.fullmatch(r"\{(\d+)\}", token)
        tokens.append(name(int(found.group(1))) if found else token)
    return " ".join(tokens)


# A sign between two letters or digits: inside a word (`it&t`, `o'neill`, `co-op`);
# never a comma or semicolon, which separate the items of a list.
_SIGN_IN_WORD = re.compile(r"(?<=[^\W_])[^\w\s,;](?=[^\W_])")


def parses(
    tool: Tool, question: str, *, scoring: TaskScoring, signs_in_words: bool = False
) -> bool:
    """Whether `question` (less any built-in description) parses completely under one of
    the tool's forms, each value written as its parameter's was. With `signs_in_words`,
    the words of a list or a text may also hold signs inside them that its own had none
    of (`it&t`, `o'neill`; not `pear,` or `(fig)`, which make another list): for a tool
    whose answer to the question is checked before it is shown
    (lessons/read/tool_check.py), never for one shown unchecked."""
    if not tool.forms or len(tool.shapes) != len(tool.params):
        return False  # a tool stored before forms existed is never offered
    spans = reads(tool, question, scoring=scoring)
    if spans is None:
        return False
    question = core_input(question, scoring)
    if form_of(question, spans, [p.kind for p in tool.params]) not in tool.forms:
        return False
    for param, shape, (start, end) in zip(tool.params, tool.shapes, spans, strict=True):
        piece = question[start:end].strip()
        written = piece
        if signs_in_words and param.kind in ("words", "text"):
            written = _SIGN_IN_WORD.sub("", piece)
        if not set(shape_of(written).split()) <= set(shape.split()):
            return False
        if param.kind in ("words", "text"):
            # Data, not an instruction: a list or a game holds no "then", "them", "in".
            words = piece.split()
            if param.kind == "words" and len(words) < 2:
                return False
            if any(w.strip(".,;:!?-\"'").lower() in FUNCTION_WORDS for w in words):
                return False
    return True


# -- using a tool -------------------------------------------------------------------------


def reads(tool: Tool, question: str, *, scoring: TaskScoring) -> list[tuple[int, int]] | None:
    """The spans the tool's parameters take in `question` (less any built-in task's
    description, see `core_input`), or None when it cannot read it. Numbers take only
    the stretch from the first to the last number read, so the words around them still
    count as the question's instruction."""
    question = core_input(question, scoring)
    spans = []
    for param in tool.params:
        span = locate(question, param.left, param.right)
        value = read_param(question, param.kind, param.left, param.right)
        if span is None or value is None:
            return None
        if param.kind == "ints":
            if param.count and len(value) != param.count:
                return None
            found = list(INT_RE.finditer(question, span[0], span[1]))
            if not found:
                return None
            span = (found[0].start(), found[-1].end())
        spans.append(span)
    return spans


def applies(tool: Tool, question: str, *, scoring: TaskScoring) -> bool:
    """Whether the question parses completely under the tool's form (`parses`)."""
    return parses(tool, question, scoring=scoring)


def answer_from(tool: Tool, stdout: str) -> str | None:
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[tool.answer_line] if lines else None


def instantiate(tool: Tool, question: str, *, scoring: TaskScoring) -> str | None:
    """The tool's program with this question's values written in, ready to run as is."""
    question = core_input(question, scoring)
    values = [read_param(question, p.kind, p.left, p.right) for p in tool.params]
    if any(v is None for v in values):
        return None

    class _Fill(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            if isinstance(node.func, ast.Name) and node.func.id == "_p" and node.args:
                index = node.args[0]
                if isinstance(index, ast.Constant) and isinstance(index.value, int):
                    kind, value = tool.params[index.value].kind, values[index.value]
                    if kind == "expr":
                        try:
                            return pyparse.parse(str(value), mode="eval").body
                        except SyntaxError:
                            return ast.Constant(str(value))
                    return pyparse.parse(repr(value), mode="eval").body
            return self.generic_visit(node)

    tree = _Fill().visit(pyparse.parse(tool.program))
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)
