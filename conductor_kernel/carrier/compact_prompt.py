"""The compact prompt of the carriers that hold a turn to its forms (tools, grammar).

Written for small models, which copy what they are shown: the role, the forms with one
example call made from the question itself, and the ready call an answer given before
any consultation gets back. The paper-faithful prompt stays for `text` (prompts.py).
"""

from __future__ import annotations

from conductor_kernel.prompts import (
    CONSULT_FIRST_NOTE,
    CONSULT_FIRST_TEXT,
    CONSULT_FIRST_TEXT_NOTE,
    CONSULT_FIRST_TOOLS,
    HANDED_QUESTION_BLOCK,
)

# Qwen2.5-Coder-1.5B copied the text prompt's Expert Geometer call, triangle and all,
# into a Game of 24 run: so short, and its one example call is the question's own,
# never another task's. Measured in docs/methods.md ("Small models").

COMPACT_ROLE = (
    "You are the Conductor. You answer the question at the end by consulting experts, "
    "then giving the final answer. An expert sees nothing but your instruction: put the "
    "whole task in it, with every number, word and rule it needs. Experts make mistakes: "
    "have an answer checked before you give it. Aim to finish within {max_rounds} rounds."
)
# Longer questions are not repeated in the example; the model is told to copy them.
EXAMPLE_QUESTION_CHARS = 1200
COMPACT_PYTHON_TASK = (
    "Write a Python program that finds the answer to this task by computing or "
    "searching, checks that it meets every rule of the task, and prints it in the form "
    "the task asks for.\nTask: {task}"
)
COMPACT_OTHER_TASK = (
    "Solve this task step by step, check the result, and end with the answer.\nTask: {task}"
)
COMPACT_TEXT_FORMS = (
    "To consult an expert, write its name and a colon, then the instruction between "
    'triple quotes.{python} For this question, a first call could be:\n\n{name}:\n"""\n'
    '{instruction}\n"""\n\nWhen you are sure, give the answer alone (for a '
    'multiple-choice question, only the option):\n\n>> FINAL ANSWER:\n"""\n[the answer]\n"""'
)
COMPACT_TOOL_FORMS = (
    "You act through tool calls: consult_expert (a name and an instruction) consults an "
    "expert, and its reply comes back as the call's result.{python} For this question, a "
    'first call could be consult_expert with name "{name}" and instruction:\n\n'
    "{instruction}\n\nWhen you are sure, call final_answer with the answer alone (for a "
    "multiple-choice question, only the option)."
)
COMPACT_PYTHON = (
    " Expert Python writes a program and runs it in a sandbox, and you see what it "
    "prints: when the answer can be computed, searched for, counted or sorted, consult "
    "it first."
)
COMPACT_RUN_PYTHON = " run_python runs a program you write and returns what it prints."


def compact_first_message(
    question: str,
    *,
    tools: bool,
    python: bool,
    max_rounds: int,
    recall: str = "",
    consult_first: bool = False,
    handed: bool = False,
) -> str:
    """The first user turn of the tools and grammar carriers: the role, the forms with
    one example call made from this question, what the notebook recalled, the question.
    `handed`: a checked program's call and result came before it (run/experience.py)."""
    name, instruction = example_call(question, python=python)
    forms = COMPACT_TOOL_FORMS if tools else COMPACT_TEXT_FORMS
    python_line = (COMPACT_PYTHON + (COMPACT_RUN_PYTHON if tools else "")) if python else ""
    parts = [
        COMPACT_ROLE.format(max_rounds=max_rounds),
        forms.format(python=python_line, name=name, instruction=instruction),
    ]
    if consult_first:
        parts[-1] += CONSULT_FIRST_NOTE if tools else CONSULT_FIRST_TEXT_NOTE
    if recall and not handed:
        parts.append(recall)
    block = HANDED_QUESTION_BLOCK if handed else COMPACT_QUESTION_BLOCK
    parts.append(block.format(question=question))
    return "\n\n".join(parts)


COMPACT_QUESTION_BLOCK = "Question:\n{question}"


def example_call(question: str, *, python: bool) -> tuple[str, str]:
    """The one example call the compact prompt shows: made from this question."""
    short = len(question) <= EXAMPLE_QUESTION_CHARS
    task = question.strip() if short else "(copy the whole question here)"
    name = "Expert Python" if python else "Expert Solver"
    return name, (COMPACT_PYTHON_TASK if python else COMPACT_OTHER_TASK).format(task=task)


def consult_first(question: str, *, tools: bool, python: bool) -> str:
    """What an answer given before any expert was consulted gets back: a ready call
    (small models copy the calls they are shown)."""
    name, instruction = example_call(question, python=python)
    template = CONSULT_FIRST_TOOLS if tools else CONSULT_FIRST_TEXT
    return template.format(name=name, instruction=instruction)
