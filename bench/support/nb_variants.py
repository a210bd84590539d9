"""Near-miss tasks for the notebook benchmark: questions that look like a shipped task's
but ask for something else (another order, another target, another form).

Each variant rewrites the shipped task's inputs; none has an answer here, because what
is measured is only whether recall shows the old task's tool or pitfalls for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

LIST_RE = re.compile(r"List:\s*(.*)$", re.S)


def _words(text: str) -> str:
    found = LIST_RE.search(text)
    return found.group(1).strip() if found else text


def _path(text: str) -> str:
    found = re.search(r'<path d="[^"]*"/>', text)
    return found.group(0) if found else text


def _sonnet_words(text: str) -> list[str]:
    return re.findall(r'"([^"]+)"', text)


def _expression(text: str) -> str:
    return text.rstrip(" =")


# name -> (shipped task, rewrite of one of its inputs)
VARIANTS: dict[str, tuple[str, Callable[[str], str]]] = {
    "reverse-sort": (
        "word_sorting",
        lambda t: f"Sort the following words in reverse alphabetical order: List: {_words(t)}",
    ),
    "sort-by-length": (
        "word_sorting",
        lambda t: f"Sort the following words by their length, shortest first: List: {_words(t)}",
    ),
    "count-words": (
        "word_sorting",
        lambda t: f"How many of the following words contain the letter e? List: {_words(t)}",
    ),
    "make-ten": ("GameOf24", lambda t: f"Use {t} to make 10"),
    "largest-product": (
        "GameOf24",
        lambda t: f"Which two of the numbers {t} have the largest product?",
    ),
    "expression-mod": (
        "multistep_arithmetic_two",
        lambda t: f"What is the remainder when {_expression(t)} is divided by 7?",
    ),
    "count-negatives": (
        "multistep_arithmetic_two",
        lambda t: f"How many negative numbers appear in {_expression(t)}?",
    ),
    "count-captures": (
        "CheckmateInOne",
        lambda t: f"How many captures were made in this chess game so far? {t}",
    ),
    "limerick": (
        "Sonnets-Standard",
        lambda t: (
            "Write a limerick with rhyme scheme AABBA, containing each of the "
            "following words verbatim: " + ", ".join(f'"{w}"' for w in _sonnet_words(t)) + "."
        ),
    ),
    "path-points": (
        "geometric_shapes",
        lambda t: f"How many distinct points does this SVG path element visit? {_path(t)}",
    ),
}


def variant_questions(name: str, inputs: list[str], limit: int) -> list[str]:
    _task, rewrite = VARIANTS[name]
    return [rewrite(text) for text in inputs[:limit]]
