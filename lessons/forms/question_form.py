"""The form of a whole question: its words, numbers and signs outside a tool's
parameters, in order, with a slot for each parameter (`form_of`), and the kinds of
character a parameter's value was written with (`shape_of`). A tool applies to a
question only when the question has one of its forms (tools.py).
"""

from __future__ import annotations

import re

_TOKEN_RE = re.compile(r"\d+|[^\W\d_]+|[^\s\w]|_")
# Words that say something about data rather than being in it ("... but give them in
# reverse order"): a parameter read as words or text holding one is not plain data.
# fmt: off
FUNCTION_WORDS = frozenset((
    "a", "an", "the", "and", "but", "or", "then", "than", "them", "they", "it", "its", "in",
    "on", "of", "to", "by", "for", "with", "without", "from", "into", "is", "are", "be",
    "give", "show", "write", "answer", "count", "order", "reverse", "only", "each", "every",
    "not", "no", "please", "which", "what", "how",
))
# fmt: on


def slot(index: int) -> str:
    return "{" + str(index) + "}"


def form_of(question: str, spans: list[tuple[int, int]], kinds: list[str]) -> list[str]:
    """The question outside the given spans as tokens (words folded to lower case,
    numbers, single signs), each span replaced by its parameter's slot, in reading order.
    A span of whole numbers keeps what stands between its numbers ("4, 5, 6 and 10"):
    only the numbers are the parameter's."""
    out: list[str] = []
    at = 0
    for start, end, index in sorted((s, e, i) for i, (s, e) in enumerate(spans)):
        out += [t.lower() for t in _TOKEN_RE.findall(question[at:start])]
        if kinds[index] == "ints":
            inside = _TOKEN_RE.findall(question[max(at, start) : end])
            out += [slot(index) if t.isdigit() else t.lower() for t in inside]
        else:
            out.append(slot(index))
        at = max(at, end)
    out += [t.lower() for t in _TOKEN_RE.findall(question[at:])]
    return out


_SIGN_RE = re.compile(r"\*\*|//|[^\w\s]|_")


def shape_of(piece: str) -> str:
    """The classes of character a value is written with, space-separated and sorted: d
    digit, a lower-case letter, A capital, s space, and each sign as itself (`**` and
    `//` as one: a power is not a product)."""
    classes = set(_SIGN_RE.findall(piece))
    for char in piece:
        if char.isdigit():
            classes.add("d")
        elif char.isalpha():
            classes.add("A" if char.isupper() else "a")
        elif char.isspace():
            classes.add("s")
    return " ".join(sorted(classes))
