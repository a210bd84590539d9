"""Exact match without punctuation (word_sorting, multistep_arithmetic_two).

Our rule compares sequences of words, case-insensitively: the answer and the target
are split at whitespace and commas, and quotes, periods, colons and semicolons are
trimmed from each word's ends (never from its middle, so `it&t` and `o'clock` stay
whole). When the target is a single number, the answer must be a single number with
the same value, written any usual way: `-11,520` `−11520` `-11520.` all match -11520.

The paper's rule deleted , ; : . " everywhere, turned newlines into spaces and
compared the strings: spacing counted (two spaces between words failed), and a
decimal point vanished (`2.5` matched a target of 25).
"""

from __future__ import annotations

import re

from conductor.scoring.base import ScoringEnv, Verdict, paper_answer, paper_strip_punctuation
from conductor.scoring.numbers import format_number, parse_number
from conductor.tasks.files import TaskItem

NEEDS_TARGET = True
_EDGE_MARKS = "\"'`“”‘’.,;:*"


def words(text: str) -> list[str]:
    parts = re.split(r"[\s,]+", text.lower())
    return [w for w in (p.strip(_EDGE_MARKS) for p in parts) if w]


def ours(answer: str, item: TaskItem, env: ScoringEnv) -> Verdict:
    target = item.target or ""
    target_value = parse_number(target)
    if target_value is not None:
        value = parse_number(answer)
        if value is None:
            return Verdict(False, f"not a single number: {answer[:60]!r}")
        if value != target_value:
            return Verdict(False, f"{format_number(value)} != {format_number(target_value)}")
        return Verdict(True, f"= {format_number(value)}")
    got, want = words(answer), words(target)
    if got == want:
        return Verdict(True, f"{len(want)} words match")
    for at, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            return Verdict(False, f"word {at + 1}: {g!r} where the target has {w!r}")
    return Verdict(False, f"{len(got)} words where the target has {len(want)}")


def paper_rule(answer: str, target: str) -> bool:
    """The published check on an already extracted (lowercased) answer."""
    return target.lower() == paper_strip_punctuation(answer).replace("\n", " ")


def paper(output: str, item: TaskItem, env: ScoringEnv) -> bool:
    return paper_rule(paper_answer(output), item.target or "")
