"""The offline demo model: recorded sessions played when no model is configured.

It says plainly that it is a demo. It knows two kinds of question, a Game of 24
puzzle (four numbers) and sorting a list of words; for both it conducts a real session:
Expert Python's code really runs in the sandbox, and a second expert checks the result.
Anything else gets an answer that explains how to configure a real model.
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction

from conductor.interfaces import Message
from experts.scripted import ScriptedModel

DEMO_NOTICE = (
    "(This is conductor's offline demo model, not a language model. It plays recorded "
    "sessions for Game of 24 puzzles and word sorting. To use a real model, set "
    "ANTHROPIC_API_KEY or OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible "
    "server such as vLLM, Ollama or llama.cpp, or pass --model.)"
)

_GAME24_CODE = '''from fractions import Fraction
from itertools import permutations

NUMBERS = {numbers}


def solutions(values):
    """Every expression over `values` (pairs of (Fraction, text)) equal to 24."""
    if len(values) == 1:
        if values[0][0] == 24:
            yield values[0][1]
        return
    for i, j in permutations(range(len(values)), 2):
        (a, ea), (b, eb) = values[i], values[j]
        rest = [v for k, v in enumerate(values) if k not in (i, j)]
        options = [(a + b, f"({{ea}} + {{eb}})"), (a - b, f"({{ea}} - {{eb}})"), (a * b, f"({{ea}} * {{eb}})")]
        if b != 0:
            options.append((a / b, f"({{ea}} / {{eb}})"))
        for value, text in options:
            yield from solutions([*rest, (value, text)])


found = next(solutions([(Fraction(n), str(n)) for n in NUMBERS]), None)
print(found[1:-1] if found else "no solution")
'''

_SORT_CODE = """words = {words!r}
print(" ".join(sorted(words)))
"""


def _numbers(question: str) -> list[int] | None:
    found = [int(n) for n in re.findall(r"\b\d+\b", question)]
    if len(found) == 5 and 24 in found:
        found.reverse()
        found.remove(24)  # "make 24" names the goal, not a number to use
        found.reverse()
    return found if len(found) == 4 else None


def _words_to_sort(question: str) -> list[str] | None:
    m = re.search(r"(?is)\bsort\b.*?:\s*(.+)$", question)
    if not m:
        return None
    words = re.findall(r"[A-Za-z']+", m.group(1))
    return words or None


def _last_stdout(messages: list[Message]) -> str:
    """The stdout block of the last program run shown to the meta model."""
    text = messages[-1].content if messages else ""
    m = re.search(r"stdout:\n```\n(.*?)\n```", text, re.S)
    return m.group(1).strip() if m else ""


def _evaluate(expression: str) -> Fraction:
    """Exact value of an arithmetic expression of numbers and + - * / (nothing else)."""

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return Fraction(node.value)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            ops = {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}
            if type(node.op) in ops:
                return ops[type(node.op)]
            if isinstance(node.op, ast.Div) and right != 0:
                return left / right
        raise ValueError("not plain arithmetic")

    return walk(ast.parse(expression, mode="eval"))


def _meta(messages: list[Message]) -> str:
    question = messages[0].content.rsplit("Question:\n", 1)[-1].split("\n\nBegin by", 1)[0]
    turn = sum(1 for m in messages if m.role == "user")
    numbers, words = _numbers(question), _words_to_sort(question)
    if numbers:
        return _game24_turn(turn, numbers, messages)
    if words:
        return _sort_turn(turn, words, messages)
    return f'{DEMO_NOTICE}\n\n>> FINAL ANSWER:\n"""\n{DEMO_NOTICE}\n"""'


def _game24_turn(turn: int, numbers: list[int], messages: list[Message]) -> str:
    listed = ", ".join(map(str, numbers))
    if turn == 1:
        return (
            f"{DEMO_NOTICE}\n\nExperts I may consult: Expert Python, Expert Arithmetic Checker.\n\n"
            f'Expert Python:\n"""\nWrite a program that searches every way to combine the numbers '
            f"{listed}, each used exactly once, with + - * / and parentheses, using exact "
            'fractions, and prints one expression equal to 24 (or "no solution").\n"""'
        )
    found = _last_stdout(messages) if turn == 2 else ""
    if turn == 2 and found and found != "no solution":
        return (
            "The program proposes an expression. A second expert should check it by hand.\n\n"
            f'Expert Arithmetic Checker:\n"""\nYou check arithmetic. Evaluate {found} step by step '
            f"with exact fractions. Say whether it equals 24 and whether it uses each of {listed} "
            'exactly once and no other number.\n"""'
        )
    if turn == 3:
        answer = _last_expression(messages)
        return f'Both the program and the checker agree.\n\n>> FINAL ANSWER:\n"""\n{answer}\n"""'
    return 'The search found no way to make 24.\n\n>> FINAL ANSWER:\n"""\nno solution\n"""'


def _last_expression(messages: list[Message]) -> str:
    for message in reversed(messages):
        m = re.search(r"Evaluate (.+?) step by step", message.content)
        if message.role == "assistant" and m:
            return m.group(1)
    return "no solution"


def _sort_turn(turn: int, words: list[str], messages: list[Message]) -> str:
    if turn == 1:
        return (
            f"{DEMO_NOTICE}\n\nExperts I may consult: Expert Python, Expert Lexicographer.\n\n"
            f'Expert Python:\n"""\nSort these words in alphabetical order and print them on one '
            f'line separated by spaces: {" ".join(words)}\n"""'
        )
    if turn == 2:
        result = _last_stdout(messages)
        return (
            f'Expert Lexicographer:\n"""\nYou are a lexicographer. Is this list in alphabetical '
            f"order, and does it hold exactly these words: {' '.join(words)}? The list: "
            f'{result}\n"""'
        )
    result = _last_expression_sorted(messages)
    return f'The order is confirmed.\n\n>> FINAL ANSWER:\n"""\n{result}\n"""'


def _last_expression_sorted(messages: list[Message]) -> str:
    for message in reversed(messages):
        m = re.search(r"The list: (.+?)\n", message.content)
        if message.role == "assistant" and m:
            return m.group(1)
    return ""


def _expert(name: str, instruction: str) -> str:
    if name == "Expert Python":
        numbers = re.search(r"numbers ([\d, ]+), each", instruction)
        if numbers:
            values = [int(n) for n in re.findall(r"\d+", numbers.group(1))]
            code = _GAME24_CODE.format(numbers=values)
        else:
            words = instruction.rsplit(":", 1)[-1].split()
            code = _SORT_CODE.format(words=words)
        return f"Here is a program for it.\n\n```python\n{code}```\n\nPlease run this code!"
    if name == "Expert Arithmetic Checker":
        m = re.search(r"Evaluate (.+?) step by step", instruction)
        expression = m.group(1) if m else ""
        try:
            value = _evaluate(expression)
        except (ValueError, SyntaxError):
            return f"I cannot evaluate {expression!r} as plain arithmetic."
        verdict = "equals 24" if value == 24 else f"equals {value}, not 24"
        return f"Evaluating {expression} exactly: it {verdict}."
    m = re.search(r"exactly these words: (.+?)\? The list: (.+)$", instruction, re.S)
    if m:
        wanted, got = m.group(1).split(), m.group(2).split()
        good = got == sorted(wanted)
        return "Yes: it is in order and holds exactly those words." if good else "No: it is not."
    return "I can only check the demo's own puzzles."


def demo_model() -> ScriptedModel:
    return ScriptedModel(_meta, _expert, name="demo")
