"""Recognising a built-in task from a question asked without one (solve, the TUI).

A question typed at the prompt names no task, so no scorer would ever judge its answer
and the notebook would never trust (or make a tool from) an interactive run. Some tasks
can be told from the question alone *and* judged without a target file:

- Game of 24: four whole numbers and "24" (the game24 checker needs nothing else);
- word sorting: a list of lower-case words after "List:" or a colon, to be put in
  alphabetical order (the known answer is the sorted list);
- multistep arithmetic: one expression of whole numbers, + - * and parentheses (the
  known answer is its exact value).

Recognition is deliberately narrow: every word of the question outside its numbers, list
or expression must be one these tasks are plainly asked with (a short list per task; the
built-in description, when the question starts with it, is set aside first). A near miss
("reverse alphabetical order", "make 10", "using only addition", "modulo 7") has a word
outside that list, or no 24, and is not recognised: a wrong recognition would label a
wrong answer verified.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction

from conductor.tasks.specs import BUILTIN

_WORD = re.compile(r"[^\W\d_]+")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_COMMON = _wordset(
    "a an the this these those to of and or in on with using use by for from as at is are "
    "be it its can you i me we us please find give write show tell what which how get make "
    "reach obtain solve answer final result one single each all number numbers "
    "following below given list words word expression value exactly once"
)
# What each task may be asked with: the common words and its own.
_GAME24 = _COMMON | _wordset(
    "game puzzle four whole combine arithmetic operations operators basic equal equals "
    "equaling total so that yields yield gives twenty addition subtraction multiplication "
    "division parentheses brackets"
)
_SORTING = _COMMON | _wordset(
    "sort sorted sorting order ordered put arrange alphabetically alphabetical "
    "alphabetic alphabetize alphabetise ascending"
)
_ARITHMETIC = _COMMON | _wordset(
    "work out compute calculate evaluate simplify arithmetic equal equals result "
    "resulting integer respect usual operations parentheses signs negative"
)
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


def _words_allowed(text: str, allowed: frozenset[str]) -> bool:
    return all(word in allowed for word in _WORD.findall(text.lower()))


def _game24(text: str, described: bool) -> Recognised | None:
    if re.search(r"\d[.,/]\d|[-−]\s*\d|\d\s*[*×/÷+^]", text):
        return None  # decimals, signs or an expression: not four plain numbers
    given = re.findall(r"\d+", text)
    if not described:  # the goal must be said: four numbers alone could be anything
        if given.count("24") != 1 or len(given) != 5:
            return None
        given.remove("24")
    if len(given) != 4:
        return None
    if not all(1 <= int(n) <= 100 for n in given):
        return None
    if not _words_allowed(re.sub(r"\d+", " ", text), _GAME24):
        return None
    return Recognised("GameOf24", " ".join(given), None)


_LIST = re.compile(r"(?is)\blist\s*:\s*(.+)$|:\s*([^:]+)$")


def _word_sorting(text: str, described: bool) -> Recognised | None:
    if described and "list" not in text.lower() and ":" not in text:
        text = "List: " + text
    found = _LIST.search(text)
    if found is None:
        return None
    listed = re.split(r"[\s,]+", (found.group(1) or found.group(2) or "").strip())
    instruction = text[: found.start()]
    if len(listed) < 2 or not all(re.fullmatch(r"[a-z][a-z&'.-]*", w) for w in listed):
        return None
    if re.search(r"\d", instruction):
        return None
    said = set(_WORD.findall(instruction.lower()))
    if not described and not said & {"sort", "sorted", "alphabetically", "alphabetical", "alphabetize",
                   "alphabetise"}:  # fmt: skip
        return None
    if not _words_allowed(instruction, _SORTING):
        return None
    return Recognised("word_sorting", " ".join(listed), " ".join(sorted(listed)))


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
    if not _words_allowed(head, _ARITHMETIC):
        return None
    expression = tail.rstrip("?= \n").translate(str.maketrans("−×", "-*"))
    value = _exact_value(expression)
    if value is None or value.denominator != 1:
        return None
    return Recognised("multistep_arithmetic_two", tail, str(value.numerator))


def _exact_value(expression: str) -> Fraction | None:
    """The value of whole numbers under + - * and signs, never evaluated by Python."""
    try:
        tree = ast.parse(expression, mode="eval")
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
