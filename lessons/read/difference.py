"""How a note's question differs from the one asked: named, so that a note of another
question is never read as this question's answer.

Numbers first (a word problem with one number changed is another problem: "this was
asked with 16; yours says 19"), then the words (a list with other words, an instruction
with other words: "reverse", "length"), then signs and capitals ("4/5" for "4 5").
Two worded questions with the same two or more quantities, in the same order, that share
almost no words are the same problem in two languages (kin): not a difference.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter

from lessons.forms.problems import normal_question, problem_numbers, same_question

_WORD = re.compile(r"[^\W\d_]+")
_TOKEN = re.compile(r"\d+|[^\W\d_]+|[^\s\w]|_")
# Two questions with the same quantities sharing fewer words than this are one problem
# in two languages (a translation keeps the names and little else).
OTHER_LANGUAGE_SHARE = 0.25

NAMED_MOST = 4


def _words(text: str) -> set[str]:
    return set(_WORD.findall(normal_question(text)))


def _listed(items: list[str]) -> str:
    shown = ", ".join(f"'{item}'" if not item[0].isdigit() else item for item in items[:NAMED_MOST])
    more = len(items) - NAMED_MOST
    return shown + (f" and {more} more" if more > 0 else "") if items else "nothing else"


def difference(asked_before: str, asked: str) -> str | None:
    """What differs between the two questions, in one line; None when they are the same
    question (or the same problem in another language)."""
    if not asked_before.strip():
        return None
    if same_question(asked_before, asked):  # capitals may still differ ("Pear" for "pear")
        same_text = normal_question(asked_before) == normal_question(asked)
        return _written(asked_before, asked) if same_text else None
    in_order = problem_numbers(asked_before), problem_numbers(asked)
    before, now = Counter(in_order[0]), Counter(in_order[1])
    if before != now:
        gone, added = sorted((before - now).elements()), sorted((now - before).elements())
        if not gone:
            return f"yours also has {_listed(added)}"
        if not added:
            return f"this was also asked with {_listed(gone)}"
        return f"this was asked with {_listed(gone)}; yours says {_listed(added)}"
    old, new = _words(asked_before), _words(asked)
    fewest = min(len(old), len(new))
    translated = in_order[0] == in_order[1] and len(in_order[0]) >= 2 and fewest >= 3
    if translated and len(old & new) < OTHER_LANGUAGE_SHARE * fewest:
        return None  # another language, the same quantities in order: the same problem
    gone, added = sorted(old - new), sorted(new - old)
    if not gone and not added:
        return _written(asked_before, asked)
    if not gone:
        return f"yours also says {_listed(added)}"
    if not added:
        return f"its question also said {_listed(gone)}"
    return f"its question said {_listed(gone)}; yours says {_listed(added)}"


def _written(asked_before: str, asked: str) -> str | None:
    """The same words and numbers: a difference in signs, capitals or order ("4/5" for
    "4 5", "-3" for "3", "Pear" for "pear"), named by its first place; None when only the
    spacing differs."""
    old = _TOKEN.findall(unicodedata.normalize("NFKC", asked_before))
    new = _TOKEN.findall(unicodedata.normalize("NFKC", asked))
    if old == new:
        return None
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, old, new, autojunk=False
    ).get_opcodes():
        if tag != "equal":
            was = " ".join(old[max(0, i1 - 1) : i2 + 1])
            now = " ".join(new[max(0, j1 - 1) : j2 + 1])
            return f"its question had '{was}' where yours has '{now}'"
    return None
