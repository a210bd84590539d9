"""What the offline demo understands, and how it works a puzzle out.

Two kinds of question: a Game of 24 puzzle (four whole numbers to combine into 24) and
a list of words to sort. `understand` reads a question as one of them or as neither;
`game24_solutions` and `evaluate` are the experts' exact arithmetic (fractions, never
floats). The conducting itself, and the programs its Expert Python runs, are in the
package's `__init__`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from itertools import permutations

from conductor_kernel import pyparse


@dataclass(frozen=True)
class Game24:
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class Sorting:
    words: tuple[str, ...]


_FOUR_NUMBERS = re.compile(r"^\s*(\d+)[\s,]+(\d+)[\s,]+(\d+)[\s,]+(\d+)\s*\.?\s*$")
_USE_TO_MAKE = re.compile(
    r"\b(?:use|using|with|combine|from)\s+(?:the\s+numbers\s+)?"
    r"(\d+)[\s,]+(?:and\s+)?(\d+)[\s,]+(?:and\s+)?(\d+)[\s,]+(?:and\s+)?(\d+)\b"
    r".{0,40}?\b(?:make|get|reach|equal|equals|totals?)\s+24\b",
    re.I | re.S,
)
_MAKE_FROM = re.compile(
    r"\bmake\s+24\s+(?:from|with|using|out\s+of)\s+(?:the\s+numbers\s+)?"
    r"(\d+)[\s,]+(?:and\s+)?(\d+)[\s,]+(?:and\s+)?(\d+)[\s,]+(?:and\s+)?(\d+)\b",
    re.I,
)
_SORT_WORDS = re.compile(r"\bsort\b[^\n:]*?\b(?:words|list)\b[^\n:]*:", re.I)


def understand(question: str) -> Game24 | Sorting | None:
    """The demo's reading of a question, or None when it is not one it can do."""
    lines = [line for line in question.splitlines() if line.strip()]
    # A task file's input (after the task's rules) is the last line: four numbers alone.
    for line in reversed(lines):
        m = _FOUR_NUMBERS.match(line)
        if m:
            return Game24(tuple(int(n) for n in m.groups()))
    for pattern in (_USE_TO_MAKE, _MAKE_FROM):
        m = pattern.search(question)
        if m:
            return Game24(tuple(int(n) for n in m.groups()))
    return _sorting(question)


def _sorting(question: str) -> Sorting | None:
    """Words after the last `List:` (the data's format), or after "sort ... words:"."""
    at = question.rfind("List:")
    if at != -1:
        rest = question[at + len("List:") :]
    else:
        m = _SORT_WORDS.search(question)
        if m is None:
            return None
        rest = question[m.end() :]
    words = tuple(rest.split())
    if not words or any('"""' in w or "```" in w for w in words):
        return None
    return Sorting(words)


# -- working it out (the experts' side) --------------------------------------------------


def game24_solutions(numbers: tuple[int, ...] | list[int]) -> Iterator[str]:
    """Every expression over `numbers`, each used once, equal to 24 (exact fractions)."""

    def search(values: list[tuple[Fraction, str]]) -> Iterator[str]:
        if len(values) == 1:
            if values[0][0] == 24:
                yield values[0][1]
            return
        for i, j in permutations(range(len(values)), 2):
            (a, ea), (b, eb) = values[i], values[j]
            rest = [v for k, v in enumerate(values) if k not in (i, j)]
            options = [(a + b, f"({ea} + {eb})"), (a - b, f"({ea} - {eb})")]
            options.append((a * b, f"({ea} * {eb})"))
            if b != 0:
                options.append((a / b, f"({ea} / {eb})"))
            for value, text in options:
                yield from search([*rest, (value, text)])

    for found in search([(Fraction(n), str(n)) for n in numbers]):
        yield found[1:-1]


def evaluate(expression: str) -> tuple[Fraction, list[int]]:
    """Exact value of plain arithmetic (integers, + - * /) and the integers it uses."""
    used: list[int] = []

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            used.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div) and right != 0:
                return left / right
        raise ValueError("not plain arithmetic")

    return walk(pyparse.parse(expression, mode="eval")), used
