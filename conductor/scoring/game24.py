"""Game of 24: an arithmetic expression over the four given numbers that equals 24.

Our rule, decided and documented (docs/scoring.md):

* The answer is the expression alone. `×` `·` `∗` read as `*`, `÷` as `/`, `−` `–` as
  `-`; surrounding backticks, `$` and `**` are dropped. A worked chain such as
  `(10 - 1) * (7 - 3) = 9 * 4 = 24` is accepted: only the part before the first `=`
  is judged. Words around the expression ("The answer is ...") are not accepted.
* It is parsed with `ast`, never evaluated by Python: only integer literals, the
  binary operators + - * / and parentheses. No unary minus, powers, decimals or
  functions: each given number is used exactly once, and nothing else.
* Arithmetic is exact (`fractions.Fraction`), so 8 / (3 - 8 / 3) is exactly 24, and
  a float near 24 is not.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from fractions import Fraction

from conductor.scoring.base import ScoringEnv, Verdict, paper_answer
from conductor.tasks.files import TaskItem
from conductor_kernel import pyparse

NEEDS_TARGET = False
GOAL = Fraction(24)
_SYMBOLS = str.maketrans({"×": "*", "·": "*", "∗": "*", "÷": "/", "−": "-", "–": "-"})
_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


class _Rejected(Exception):
    """The expression breaks a rule; the message says which."""


_BARE_PUZZLE = re.compile(r"\s*\d+(?:\s+\d+){3}\s*")


def puzzle_numbers(puzzle: str) -> list[int] | None:
    """The four numbers of a puzzle given as they are ("4 5 6 10", the task file's form)
    or asked as a Game of 24 question ("Use 4 5 6 10 to make 24"); None for anything
    else, which this checker cannot judge (the 24 of the goal is never a given number)."""
    if _BARE_PUZZLE.fullmatch(puzzle):
        return [int(n) for n in puzzle.split()]
    from conductor.scoring.recognise import recognise

    asked = recognise(puzzle)
    if asked is None or asked.task != "GameOf24":
        return None
    return [int(n) for n in asked.task_input.split()]


def unreadable(item: TaskItem) -> str | None:
    """Why this checker cannot judge answers to `item`, or None when it can."""
    if puzzle_numbers(item.input) is None:
        return (
            "the item's input is not a Game of 24 puzzle this checker can read: give the "
            'four numbers ("4 5 6 10") or ask "Use 4 5 6 10 to make 24"'
        )
    return None


def _expression_text(answer: str) -> str:
    text = answer.translate(_SYMBOLS).strip()
    text = text.split("=", 1)[0]
    return text.strip().strip("`$*").strip()


def _evaluate(node: ast.AST, used: list[int]) -> Fraction:
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left, used), _evaluate(node.right, used)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if right == 0:
            raise _Rejected("divides by zero")
        return left / right
    if isinstance(node, ast.Constant) and type(node.value) is int:
        used.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp):
        raise _Rejected("uses a unary sign; only + - * / between the given numbers")
    if isinstance(node, ast.BinOp):
        raise _Rejected(f"uses {type(node.op).__name__}; only + - * / are allowed")
    raise _Rejected(f"contains {type(node).__name__}, which is not arithmetic on the numbers")


def check_expression(expression: str, numbers: list[int]) -> Verdict:
    """Whether `expression` uses exactly `numbers` (as a multiset) and equals 24."""
    try:
        tree = pyparse.parse(expression, mode="eval")
    except SyntaxError:
        return Verdict(False, f"not an arithmetic expression: {expression[:60]!r}")
    used: list[int] = []
    try:
        value = _evaluate(tree.body, used)
    except _Rejected as exc:
        return Verdict(False, str(exc))
    if Counter(used) != Counter(numbers):
        return Verdict(False, f"uses {sorted(used)}, the puzzle gives {sorted(numbers)}")
    if value != GOAL:
        return Verdict(False, f"equals {value}, not 24")
    return Verdict(True, f"{expression} = 24")


def ours(answer: str, item: TaskItem, env: ScoringEnv) -> Verdict:
    expression = _expression_text(answer)
    if not expression:
        return Verdict(False, "empty expression")
    numbers = puzzle_numbers(item.input)
    if numbers is None:
        return Verdict(False, unreadable(item) or "not a puzzle")
    return check_expression(expression, numbers)


# --- the paper's rule -------------------------------------------------------------
# It cut the answer at "=", at "is" (keeping what follows the first "is"), at
# "equals" and "evaluates to", evaluated the rest with Python's eval, accepted a value
# within 1e-3 of 24, and compared the tokens left after blanking + - * / ÷ ( ) with
# the puzzle's numbers as strings. We evaluate the same Python arithmetic with `ast`.

_PAPER_CUTS = (("=", 0), ("is", 1), ("equals", 0), ("evaluates to", 0))
_PAPER_BLANKED = "+-*/÷()"
_MAX_EXPONENT = 64


def _python_arithmetic(node: ast.AST) -> Fraction:
    """What eval() would give for plain arithmetic; _Rejected for anything else."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _python_arithmetic(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _python_arithmetic(node.left), _python_arithmetic(node.right)
        op = node.op
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
            raise _Rejected("division by zero")
        if isinstance(op, ast.Div):
            return left / right
        if isinstance(op, ast.FloorDiv):
            return Fraction(left // right)
        if isinstance(op, ast.Mod):
            return left % right
        if isinstance(op, ast.Pow) and right.denominator == 1 and abs(right) <= _MAX_EXPONENT:
            if left == 0 and right < 0:
                raise _Rejected("division by zero")
            return left ** int(right)
    raise _Rejected("not plain arithmetic")


def paper_rule(answer: str, puzzle: str) -> bool:
    """The published check on an already extracted (lowercased) answer."""
    text = answer
    for word, keep in _PAPER_CUTS:
        if word in text:
            text = text.split(word)[keep].strip()
    try:
        value = _python_arithmetic(pyparse.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, _Rejected):
        return False
    if not abs(value - 24) < Fraction(1, 1000):
        return False
    for symbol in _PAPER_BLANKED:
        text = text.replace(symbol, " ")
    tokens = re.sub(" +", " ", text).strip().split(" ")
    return sorted(tokens) == sorted(puzzle.split(" "))


def paper(output: str, item: TaskItem, env: ScoringEnv) -> bool:
    numbers = puzzle_numbers(item.input)
    puzzle = item.input if numbers is None else " ".join(map(str, numbers))
    return paper_rule(paper_answer(output), puzzle)
