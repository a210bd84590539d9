"""Making a tool of a program: which literals of a program pasted with one question's
data are pieces of that question, and so become the tool's parameters (see
lessons/forms/tools.py for what a tool is and how it is used).

A piece is found by what it is: a run of whole numbers (`[4, 5, 6, 10]`, the arguments
of `find_expression(4, 5, 6, 10)`), a list or string of the question's words, or an
arithmetic expression with at least three digits. Each becomes a `Param` anchored on the
text around it in the question (`_anchors`); the program then reads it through `_p(i)`.
"""

from __future__ import annotations

import ast
import re

from conductor_kernel import pyparse
from conductor_kernel.interfaces import TaskScoring
from lessons.forms.problems import core_input
from lessons.forms.question_form import form_of, shape_of
from lessons.forms.tools import INT_RE, Param, Tool

ANCHOR_CHARS = 24  # the anchor text kept on either side of a piece
MIN_TEXT = 3  # a string shorter than this is never a piece of the question
_WORD_RE = re.compile(r"[^\W\d_]+")


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _anchors(question: str, start: int, end: int) -> tuple[str, str]:
    before = question[max(0, start - ANCHOR_CHARS) : start]
    if start > ANCHOR_CHARS and " " in before.strip():
        before = before[before.index(" ") + 1 :]  # begin at a word
    after = question[end : end + ANCHOR_CHARS]
    if end + ANCHOR_CHARS < len(question) and " " in after.strip():
        after = after[: after.rstrip().rindex(" ")]  # end at a word
    return before, after


def _find_words(question: str, words: list[str]) -> tuple[int, int] | None:
    found = re.search(r"\s+".join(re.escape(w) for w in words), question)
    return (found.start(), found.end()) if found else None


def _find_ints(question: str, values: list[int]) -> tuple[int, int] | None:
    tokens = list(INT_RE.finditer(question))
    n = len(values)
    for i in range(len(tokens) - n + 1):
        run = tokens[i : i + n]
        if sorted(int(t.group()) for t in run) == sorted(values):
            return run[0].start(), run[-1].end()
    return None


def _find_expr(question: str, source: str) -> tuple[int, int] | None:
    chars = [re.escape(c) for c in _compact(source)]
    if len(chars) < 5:
        return None
    found = re.search(r"\s*".join(chars), question)
    return (found.start(), found.end()) if found else None


def _int_list(node: ast.AST) -> list[int] | None:
    if isinstance(node, ast.List | ast.Tuple | ast.Set) and len(node.elts) >= 2:
        values = [_int_value(e) for e in node.elts]
        if all(v is not None for v in values):
            return [v for v in values if v is not None]
    return None


def _int_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


class _Parameterise(ast.NodeTransformer):
    def __init__(self, question: str, source: str) -> None:
        self.question = question
        self.source = source
        self.params: list[Param] = []
        self.spans: list[tuple[int, int]] = []

    def _param(self, kind: str, span: tuple[int, int], count: int = 0) -> ast.Call:
        left, right = _anchors(self.question, *span)
        self.params.append(Param(kind, left, right, count))
        self.spans.append(span)
        call = ast.Call(ast.Name("_p", ast.Load()), [ast.Constant(len(self.params) - 1)], [])
        return call

    def visit_Call(self, node: ast.Call) -> ast.AST:
        values = [_int_value(a) for a in node.args]
        if len(values) >= 2 and all(v is not None for v in values):
            span = _find_ints(self.question, [v for v in values if v is not None])
            if span is not None:
                self.generic_visit(node)  # the callee may hold parameters too
                node.args = [ast.Starred(self._param("ints", span, len(values)), ast.Load())]
                return node
        return self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and not isinstance(node, ast.Name):
            replaced = self._try(node)
            if replaced is not None:
                return replaced
        return super().generic_visit(node)

    def _try(self, node: ast.expr) -> ast.AST | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if len(text) >= MIN_TEXT and len(text.split()) >= 2:
                span = _find_words(self.question, text.split())
                if span is not None:
                    return self._param("text", span)
            return None
        ints = _int_list(node)
        if ints is not None:
            span = _find_ints(self.question, ints)
            if span is not None:
                value = self._param("ints", span, len(ints))
                return (
                    value
                    if isinstance(node, ast.List)
                    else ast.Call(ast.Name(type(node).__name__.lower(), ast.Load()), [value], [])
                )
            return None
        if isinstance(node, ast.List | ast.Tuple) and len(node.elts) >= 2:
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                words = [str(e.value) for e in node.elts]  # type: ignore[attr-defined]
                if all(w and not any(c.isspace() for c in w) for w in words):
                    span = _find_words(self.question, words)
                    if span is not None:
                        value = self._param("words", span, len(words))
                        if isinstance(node, ast.Tuple):
                            return ast.Call(ast.Name("tuple", ast.Load()), [value], [])
                        return value
            return None
        if isinstance(node, ast.BinOp | ast.UnaryOp):
            segment = ast.get_source_segment(self.source, node) or ""
            if sum(c.isdigit() for c in segment) >= 3:
                span = _find_expr(self.question, segment)
                if span is not None:
                    return self._param("expr", span)
        return None


def answer_line(stdout: str, answer: str) -> int | None:
    """Where the output states the answer: 0 (first line), -1 (last line), or None."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    wanted = {_compact(answer), _compact(answer.split("=")[0])}
    if _compact(lines[0]) in wanted:
        return 0
    if _compact(lines[-1]) in wanted:
        return -1
    return None


def outside_words(question: str, spans: list[tuple[int, int]]) -> list[str]:
    """The question's words outside the given spans, folded to lower case."""
    kept, at = [], 0
    for start, end in sorted(spans):
        kept.append(question[at:start])
        at = max(at, end)
    kept.append(question[at:])
    return sorted({w.lower() for w in _WORD_RE.findall(" ".join(kept))})


def make_tool(
    question: str, code: str, stdout: str, answer: str, *, scoring: TaskScoring
) -> Tool | None:
    """The tool a clean program makes, or None when it takes nothing from the question
    (less any task description of `scoring`'s, see `core_input`)."""
    question = core_input(question, scoring)
    line = answer_line(stdout, answer)
    if line is None:
        return None
    try:
        tree = pyparse.parse(code)
    except SyntaxError:
        return None
    if _runs_code_held_as_text(tree):
        return None
    rewriter = _Parameterise(question, code)
    tree = rewriter.visit(tree)
    if not rewriter.params:
        return None
    ast.fix_missing_locations(tree)
    spans = rewriter.spans
    shapes = [shape_of(question[a:b].strip()) for a, b in spans]
    return Tool(
        ast.unparse(tree),
        rewriter.params,
        line,
        outside_words(question, spans),
        [form_of(question, spans, [p.kind for p in rewriter.params])],
        shapes,
    )


def _runs_code_held_as_text(tree: ast.AST) -> bool:
    """Whether a program runs other code held in a string (`exec`, `compile`): what that
    code takes from the question is out of a parameter's reach (a recalled tool run
    inside a check, say), so no tool is made of it."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("exec", "compile")
        for node in ast.walk(tree)
    )
