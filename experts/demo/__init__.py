"""The offline demo model: real sessions for two kinds of question, and no pretending.

It says plainly that it is a demo. It knows a Game of 24 puzzle (four whole numbers to
combine into 24) and sorting a list of words alphabetically; for both it conducts a
real session: Expert Python's code really runs in the sandbox (with Python off, an
expert works the answer out itself), and a second expert checks the result before it
is given. Anything else (an empty question, a word problem, a phrasing it does not
know) ends as a labelled non-answer: the meta turn's completion has the stop reason
`declined`, which the loop records as the run status `declined` and the notebook
never learns from.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from conductor_kernel.interfaces import CallRole, Completion, Message, TextCallback, ToolSpec
from conductor_kernel.prompts import PYTHON_SECTION
from conductor_kernel.text.quoted import placeholder, split
from experts.demo.puzzles import Game24, Sorting, evaluate, game24_solutions, understand
from experts.scripted import ScriptedModel

DECLINED = "declined"

DEMO_NOTICE = (
    "(This is conductor's offline demo model, not a language model. It conducts sessions "
    "for Game of 24 puzzles and word sorting only. To use a real model, set "
    "ANTHROPIC_API_KEY or OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible "
    "server such as vLLM, Ollama or llama.cpp, or pass --model.)"
)

HOW_TO_ASK = (
    "It understands, for example, “Use 4 5 6 10 to make 24”, four numbers alone "
    "(“4 5 6 10”), and “Sort the following words alphabetically: List: pear apple fig”."
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

# A recalled program, run as it is, and what it printed checked in the same run: the
# expression must equal 24 exactly and use each of the puzzle's numbers once.
_RUN_AND_CHECK = """import contextlib, io, re
from fractions import Fraction as F

PROGRAM = __PROGRAM__
NUMBERS = [int(n) for n in "__NUMBERS__".split("/")]
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    exec(compile(PROGRAM, "recalled", "exec"), {"__name__": "__main__"})
answer = (printed.getvalue().strip().splitlines() or [""])[-1].strip()
used = sorted(int(n) for n in re.findall(r"\\d+", answer))
try:
    plain = set(answer) <= set("0123456789+-*/() ") and used == sorted(NUMBERS)
    ok = plain and eval(re.sub(r"(\\d+)", r"F(\\1)", answer)) == 24
except (SyntaxError, ZeroDivisionError):
    ok = False
print(answer)
print("check:", "equals 24 and uses each number once" if ok else "FAILED")
"""
# How the notebook's recall marks a program that fits the question as asked and whose
# answers were checked, and labels a note's program (lessons/read/render.py says them;
# experts may not import lessons). Each counts only where the renderer writes it: the
# mark as a line of its own outside every quote, the label on a quote.
_RUNNABLE_MARK = "  YOU CAN RUN IT:"
_PROGRAM_LABELS = ("program from an earlier run", "program from another notebook")
_NOTE_HEAD = re.compile(r"\[(n[0-9a-f]+)\] ")
_PYTHON_BLOCK = re.compile(r"```python\n(.*)\n```", re.S)
# The recall says the program can be run on this puzzle as it is: not that it was checked
# on it (the check is what this run does next).
_RECALLED = (
    "The notebook holds a program from an earlier run that can be run on this puzzle as it is"
)

# How the conductor's first message begins, in every carrier (conductor_kernel/prompts.py).
_CONDUCTING = "You are the Conductor."
BASELINES_NEED_A_MODEL = (
    "the demo model conducts meta-prompting sessions only (the methods meta and "
    "meta-no-python); this method's prompt needs a real model."
)

_WORDS_HEADER = "The words, one per line:\n"
_ORDER_HEADER = "The proposed order, one per line:\n"
_PYTHON_MARK = PYTHON_SECTION.strip()[:60]


class Declined(str):
    """A meta turn's text that is a non-answer: the demo cannot do this question."""


def _lines_after(text: str, header: str) -> list[str]:
    if header not in text:
        return []
    body = text.split(header, 1)[1]
    body = body.split("\n\n", 1)[0]
    return [line.strip() for line in body.splitlines() if line.strip()]


def _expert(name: str, instruction: str) -> str:
    if name == "Expert Python":
        m = re.search(r"numbers ([\d, ]+), each", instruction)
        if m:
            values = [int(n) for n in re.findall(r"\d+", m.group(1))]
            code = _GAME24_CODE.format(numbers=values)
        else:
            code = _SORT_CODE.format(words=_lines_after(instruction, _WORDS_HEADER))
        return f"Here is a program for it.\n\n```python\n{code}```\n\nPlease run this code!"
    if name == "Expert Mathematician":
        m = re.search(r"numbers ([\d, ]+), each", instruction)
        numbers = [int(n) for n in re.findall(r"\d+", m.group(1))] if m else []
        found = next(game24_solutions(numbers), None) if len(numbers) == 4 else None
        return f"Answer: {found}" if found else "Answer: no solution"
    if name == "Expert Arithmetic Checker":
        return _check_arithmetic(instruction)
    if name == "Expert Lexicographer":
        words = _lines_after(instruction, _WORDS_HEADER)
        proposed = _lines_after(instruction, _ORDER_HEADER)
        if _ORDER_HEADER not in instruction:
            return "Answer: " + " ".join(sorted(words))
        if proposed == sorted(words):
            return "Yes: it is in order and holds exactly those words."
        return "No: it is not in order, or the words differ."
    return "I can only check the demo's own puzzles."


def _check_arithmetic(instruction: str) -> str:
    m = re.search(r"Evaluate (.+?) step by step", instruction)
    given = re.search(r"each of ([\d, ]+) exactly once", instruction)
    expression = m.group(1) if m else ""
    try:
        value, used = evaluate(expression)
    except (ValueError, SyntaxError):
        return f"No: I cannot evaluate {expression!r} as plain arithmetic."
    wanted = [int(n) for n in re.findall(r"\d+", given.group(1))] if given else []
    if Counter(used) != Counter(wanted):
        return f"No: {expression} uses {used}, not each of {wanted} exactly once."
    if value != 24:
        return f"No: {expression} equals {value}, not 24."
    return f"Yes: {expression} equals 24 exactly and uses each given number once."


# -- the meta model's turns ----------------------------------------------------------------


def _question(messages: list[Message]) -> str:
    first = messages[0].content if messages else ""
    return first.rsplit("Question:\n", 1)[-1].split("\n\nBegin by", 1)[0]


def _last_stdout(messages: list[Message]) -> str:
    """The stdout block of the last program run shown to the meta model."""
    text = messages[-1].content if messages else ""
    m = re.search(r"stdout:\n```\n(.*?)\n```", text, re.S)
    return m.group(1).strip() if m else ""


def _last_reply_answer(messages: list[Message]) -> str:
    m = re.search(r"Answer: (.+)", messages[-1].content if messages else "")
    return m.group(1).strip() if m else ""


def _declined(why: str) -> Declined:
    return Declined(f"{DEMO_NOTICE}\n\nNo answer: {why}")


def _meta(messages: list[Message]) -> str:
    question = _question(messages)
    if not question.strip():
        return _declined("the question is empty. Type a question and press Enter.")
    own_words = split(messages[0].content if messages else "")[0]
    if _CONDUCTING not in own_words:
        # A baseline's prompt (standard, chain of thought, personas): the demo only
        # conducts, so it says that, not a reason from a session it never held.
        return _declined(BASELINES_NEED_A_MODEL)
    understood = understand(question)
    turn = sum(1 for m in messages if m.role == "user")
    # The conductor's own instructions say whether Python is on, never a quoted note.
    python = _PYTHON_MARK in split(messages[0].content if messages else "")[0]
    if isinstance(understood, Game24):
        return _game24_turn(turn, understood.numbers, messages, python)
    if isinstance(understood, Sorting):
        return _sort_turn(turn, understood.words, messages, python)
    return _declined(
        "the demo model cannot answer this question; only a real model can. " + HOW_TO_ASK
    )


def recalled_program(first: str) -> tuple[str, str] | None:
    """The note id and program the notebook's recall says can be run as it is on this
    question, if it says so of one: read from the renderer's own lines only (a note's
    quoted words may say anything) and from that note's quoted program."""
    own, quoted = split(first.rsplit("Question:\n", 1)[0])
    blocks = {placeholder(i): block for i, block in enumerate(quoted)}
    note, runnable = None, False
    for line in own.splitlines():
        head = _NOTE_HEAD.match(line)
        block = blocks.get(line)
        if head:
            note, runnable = head.group(1), False
        elif note and line.startswith(_RUNNABLE_MARK):
            runnable = True
        elif note and runnable and block is not None and block.label in _PROGRAM_LABELS:
            code = _PYTHON_BLOCK.fullmatch(block.body)
            return (note, code.group(1)) if code else None
    return None


def _run_recalled(note: str, program: str, numbers: tuple[int, ...]) -> str:
    code = _RUN_AND_CHECK.replace("__PROGRAM__", json.dumps(program)).replace(
        "__NUMBERS__", "/".join(map(str, numbers))
    )
    return (
        f"{DEMO_NOTICE}\n\n{_RECALLED} [{note}]: I have it run as it is, and check what it "
        f'prints in the same run.\n\nExpert Python:\n"""\n```python\n{code}```\n'
        'Please run this code!\n"""'
    )


def _game24_turn(turn: int, numbers: tuple[int, ...], messages: list[Message], python: bool) -> str:
    listed = ", ".join(map(str, numbers))
    task = (
        f"every way to combine the numbers {listed}, each used exactly once, with + - * / "
        "and parentheses, using exact fractions"
    )
    recalled = recalled_program(messages[0].content) if python and messages else None
    if recalled is not None:
        # Round 1 runs the recalled program; when its check passes, round 2 answers.
        if turn == 1:
            return _run_recalled(*recalled, numbers)
        if turn == 2:
            printed = _last_stdout(messages).splitlines()
            if len(printed) == 2 and printed[1].startswith("check: equals 24"):
                return (
                    f"The recalled program printed {printed[0]}, and the check in the same "
                    "run confirms it equals 24 using each number once.\n\n"
                    f'>> FINAL ANSWER:\n"""\n{printed[0]}\n"""'
                )
            return (
                "The recalled program's answer did not pass its check, so a new search is "
                f'written.\n\nExpert Python:\n"""\nWrite a program that searches {task}, '
                'and prints one expression equal to 24 (or "no solution").\n"""'
            )
        turn -= 1  # the recalled program failed: the usual session, a round later
    if turn == 1 and python:
        return (
            f"{DEMO_NOTICE}\n\nExperts I may consult: Expert Python, Expert Arithmetic Checker.\n\n"
            f'Expert Python:\n"""\nWrite a program that searches {task}, and prints one '
            'expression equal to 24 (or "no solution").\n"""'
        )
    if turn == 1:
        return (
            f"{DEMO_NOTICE}\n\nExperts I may consult: Expert Mathematician, Expert Arithmetic "
            f'Checker.\n\nExpert Mathematician:\n"""\nYou are a mathematician. Try {task}, '
            'and reply with one expression equal to 24 as "Answer: EXPRESSION", or '
            '"Answer: no solution" when none exists.\n"""'
        )
    if turn == 2:
        found = _last_stdout(messages) if python else _last_reply_answer(messages)
        if found == "no solution":
            return (
                "The search tried every combination and found none.\n\n"
                '>> FINAL ANSWER:\n"""\nno solution\n"""'
            )
        if not found:
            return _declined("the expert gave no expression, so there is nothing to check.")
        return (
            "An expression is proposed. A second expert should check it by hand.\n\n"
            f'Expert Arithmetic Checker:\n"""\nYou check arithmetic. Evaluate {found} step by step '
            f"with exact fractions. Say whether it equals 24 and whether it uses each of {listed} "
            'exactly once and no other number.\n"""'
        )
    verdict = messages[-1].content if messages else ""
    answer = _last_checked_expression(messages)
    if "Yes:" in verdict and answer:
        return f'Both experts agree.\n\n>> FINAL ANSWER:\n"""\n{answer}\n"""'
    return _declined("the checker rejected the proposed expression.")


def _last_checked_expression(messages: list[Message]) -> str:
    for message in reversed(messages):
        m = re.search(r"Evaluate (.+?) step by step", message.content)
        if message.role == "assistant" and m:
            return m.group(1)
    return ""


def _sort_turn(turn: int, words: tuple[str, ...], messages: list[Message], python: bool) -> str:
    listing = "\n".join(words)
    if turn == 1:
        expert = "Expert Python" if python else "Expert Lexicographer"
        task = (
            "Write a program that sorts these words in alphabetical order (by character "
            "code, as Python's sorted does) and prints them on one line separated by spaces."
            if python
            else "Put these words in alphabetical order and reply with them on one line, "
            'separated by spaces, after "Answer: ".'
        )
        return (
            f"{DEMO_NOTICE}\n\nExperts I may consult: {expert}, Expert Lexicographer.\n\n"
            f'{expert}:\n"""\n{task}\n\n{_WORDS_HEADER}{listing}\n"""'
        )
    if turn == 2:
        result = _last_stdout(messages) if python else _last_reply_answer(messages)
        if not result:
            return _declined("the expert gave no sorted list, so there is nothing to check.")
        proposed = "\n".join(result.split())
        return (
            "A sorted list is proposed. A second expert should check it.\n\n"
            f'Expert Lexicographer:\n"""\nYou are a lexicographer. Is the proposed order '
            "alphabetical (by character code), and does it hold exactly the given words? "
            f'Reply "Yes" or "No".\n\n{_WORDS_HEADER}{listing}\n\n{_ORDER_HEADER}{proposed}\n"""'
        )
    verdict = messages[-1].content if messages else ""
    order = _proposed_order(messages)
    if "Yes:" in verdict and order:
        answer = " ".join(order)
        return f'The order is confirmed.\n\n>> FINAL ANSWER:\n"""\n{answer}\n"""'
    return _declined("the lexicographer did not confirm the proposed order.")


def _proposed_order(messages: list[Message]) -> list[str]:
    for message in reversed(messages):
        if message.role == "assistant" and _ORDER_HEADER in message.content:
            return _lines_after(message.content.split('"""')[-2] + "\n", _ORDER_HEADER)
    return []


class DemoModel(ScriptedModel):
    """The scripted demo, whose non-answers carry the stop reason `declined`."""

    def complete(
        self,
        messages: list[Message],
        *,
        system: str | None = None,
        on_text: TextCallback | None = None,
        cache: bool = False,
        role: CallRole = "meta",
        max_tokens: int | None = None,
        tools: Sequence[ToolSpec] | None = None,
        grammar: str | None = None,
        temperature: float | None = None,
    ) -> Completion:
        # The demo speaks the text protocol only (no `ToolSupport`, no `GrammarSupport`).
        completion = super().complete(
            messages, system=system, on_text=on_text, cache=cache, role=role, max_tokens=max_tokens
        )
        if isinstance(completion.text, Declined):
            return replace(completion, text=str(completion.text), stop_reason=DECLINED)
        return completion


# Requests the demo keeps (for a test to look at the last few): a batch of thousands of
# items grew about 50 KB an item keeping them all.
DEMO_KEEPS = 16


def demo_model() -> DemoModel:
    return DemoModel(_meta, _expert, name="demo", keep_requests=DEMO_KEEPS)
