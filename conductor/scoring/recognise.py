"""Recognising a built-in task from a question asked without one (solve, the TUI).

A question typed at the prompt names no task, so no scorer would ever judge its answer
and the notebook would never trust (or make a tool from) an interactive run. Some tasks
can be told from the question alone *and* judged without a target file:

- Game of 24: four whole numbers and "24" (the game24 checker needs nothing else);
- word sorting: a list of lower-case words after "List:" or a colon, to be put in
  alphabetical order (the known answer is the sorted list);
- multistep arithmetic: one expression of whole numbers, + - * and parentheses (the
  known answer is its exact value).

Recognition is a full parse: the whole question (less the built-in description, when it
starts with it) must read as one of the task's forms, every word, number and sign in its
place: the goal where the goal goes, the numbers as one list, nothing after it. A bag of
allowed words is not enough (`Use 2 3 4 24 to make 10` has only allowed words and five
numbers, one of them 24, and asks for 10). A near miss ("reverse alphabetical order",
"make 10", "using only addition", "modulo 7", an instruction after the list) does not
parse and is not recognised: a wrong recognition would label a wrong answer verified.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction

from conductor.tasks.specs import BUILTIN
from conductor_kernel import pyparse

_MAX_EXPRESSION = 200  # characters: far beyond the task's, small enough to parse safely


@dataclass(frozen=True)
class Recognised:
    """The task a question is an instance of, the input its scorer reads, and the known
    answer where the question itself fixes one."""

    task: str
    task_input: str
    target: str | None


def recognise(question: str) -> Recognised | None:
    """The built-in task `question` is asked as, or None when it is not surely one."""
    text = question.strip()
    if not text or len(text) > 4000:
        return None
    for task, attempt in (
        ("GameOf24", _game24),
        ("word_sorting", _word_sorting),
        ("multistep_arithmetic_two", _arithmetic),
    ):
        described = BUILTIN[task].description.strip()
        if text.startswith(described):  # the batch form: our own words, then the input
            found = attempt(text[len(described) :].strip(), True)
        else:
            found = attempt(text, False)
        if found is not None:
            return found
    return None


_SEP = r"(?:\s*,\s*(?:and\s+)?|\s+(?:and\s+)?)"
_NUMS4 = rf"(\d+){_SEP}(\d+){_SEP}(\d+){_SEP}(\d+)"
_ONCE = r"(?:\s*,?\s*(?:each\s+)?(?:exactly\s+)?once(?:\s+each)?)?"
_OPS = (
    r"(?:\s*,?\s*(?:with|using)\s+(?:\+\s*,?\s*-\s*,?\s*\*\s*,?\s*(?:and\s+)?/"
    r"|(?:the\s+)?(?:four\s+)?(?:basic\s+)?(?:arithmetic\s+)?(?:operations|operators|arithmetic)))?"
)
_GOAL = r"\s*,?\s*(?:to|and)\s+(?:make|get|reach|obtain|equal|total)\s+24"
_END = r"\s*[.!?]?\s*"
_LEAD = r"(?:use|using|with|combine)\s+(?:the\s+)?(?:(?:four\s+)?numbers\s*:?\s*)?"
# The forms a Game of 24 question is typed in; the batch form's input is the numbers.
_GAME24_FORMS = (
    re.compile(rf"{_LEAD}{_NUMS4}{_ONCE}{_OPS}{_ONCE}{_GOAL}{_END}"),
    re.compile(rf"(?:the\s+)?(?:game\s+of\s+24|24\s+game)\s*[:\-]\s*{_NUMS4}{_END}"),
)
_GAME24_INPUT = re.compile(rf"{_NUMS4}\s*")


def _game24(text: str, described: bool) -> Recognised | None:
    text = " ".join(text.lower().split())
    forms = (_GAME24_INPUT,) if described else _GAME24_FORMS
    for form in forms:
        found = form.fullmatch(text)
        if found is not None:
            given = list(found.groups())
            if all(1 <= int(n) <= 100 for n in given):
                return Recognised("GameOf24", " ".join(given), None)
    return None


_LISTED = r"([a-z][a-z&'.-]*(?:(?:\s*,\s*|\s+)[a-z][a-z&'.-]*)+)"
_ALPHA = r"(?:alphabetically|in\s+alphabetical\s+order)"
_WHICH = r"(?:(?:the\s+)?following\s+|these\s+|the\s+|this\s+)?(?:list\s+of\s+)?(?:words?|list)"
# The forms a word-sorting question is asked in: a verb, the words, the order, the list.
_SORTING_FORMS = (
    re.compile(rf"(?:please\s+)?sort\s+{_WHICH}(?:\s+{_ALPHA})?\s*[:.]?\s*(?:list\s*:\s*)?"
               rf"{_LISTED}\s*\.?"),
    re.compile(rf"(?:please\s+)?(?:alphabeti[sz]e|(?:arrange|put|order)\s+{_WHICH}\s+{_ALPHA})"
               rf"(?:\s+{_WHICH})?\s*[:.]?\s*(?:list\s*:\s*)?{_LISTED}\s*\.?"),
)  # fmt: skip
_SORTING_INPUT = re.compile(rf"(?:list\s*:\s*)?{_LISTED}\s*\.?")


def _word_sorting(text: str, described: bool) -> Recognised | None:
    text = " ".join(text.split())
    if not re.fullmatch(r"[^A-Z]*", text.split(":")[-1]):
        return None  # a capital in the list: which order is meant is not plain
    # After the description, the input alone or the task file's own sentence.
    forms = (_SORTING_INPUT, *_SORTING_FORMS) if described else _SORTING_FORMS
    for form in forms:
        found = form.fullmatch(text.lower())
        if found is not None:
            listed = re.split(r"\s*,\s*|\s+", found.group(1).strip())
            if len(listed) < 2:
                return None
            return Recognised("word_sorting", " ".join(listed), " ".join(sorted(listed)))
    return None


_ASKED = (
    r"(?:(?:what\s+is|what's|compute|calculate|evaluate|work\s+out|simplify|solve)"
    r"(?:\s+the\s+value\s+of)?\s*:?\s*)?"
)


_EXPRESSION = re.compile(r"[\d\s+\-−*×()]+=?\s*\??\s*$")


def _arithmetic(text: str, described: bool) -> Recognised | None:
    # The expression is the question's tail from its first digit or parenthesis.
    start = re.search(r"[-−\d(]", text)
    if start is None:
        return None
    head, tail = text[: start.start()], text[start.start() :].strip()
    if len(tail) > _MAX_EXPRESSION or not _EXPRESSION.fullmatch(tail):
        return None
    if not re.search(r"\d\s*[-+*×−]\s*[-−(]?\s*\d|\)\s*[-+*×−]", tail):
        return None  # a lone number is not an expression
    if not re.fullmatch(_ASKED, " ".join(head.lower().split())):
        return None
    expression = tail.rstrip("?= \n").translate(str.maketrans("−×", "-*"))
    value = _exact_value(expression)
    if value is None or value.denominator != 1:
        return None
    return Recognised("multistep_arithmetic_two", tail, str(value.numerator))


def _exact_value(expression: str) -> Fraction | None:
    """The value of whole numbers under + - * and signs, never evaluated by Python."""
    try:
        tree = pyparse.parse(expression, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None
    try:
        return _value(tree.body, 0)
    except (ValueError, RecursionError):
        return None


def _value(node: ast.AST, depth: int) -> Fraction:
    if depth > 50:
        raise ValueError("too deep")
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _value(node.operand, depth + 1)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        left, right = _value(node.left, depth + 1), _value(node.right, depth + 1)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if abs(left.numerator) > 10**30 or abs(right.numerator) > 10**30:
            raise ValueError("too large")
        return left * right
    raise ValueError("not whole-number arithmetic")
