"""How a note's question differs from the one asked: named, so that a note of another
question is never read as this question's answer.

Numbers first (a word problem with one number changed is another problem: "this was
asked with 16; yours says 19"), then the words, where the two questions are in one
language (most words shared): a list with other words, an instruction with other words
("reverse", "length"). Two questions that share few words but all their numbers are the
same problem in two languages (kin): not a difference.
"""

from __future__ import annotations

import re
from collections import Counter

from lessons.forms.problems import normal_question, problem_numbers, same_question

_WORD = re.compile(r"[^\W\d_]+")
SAME_LANGUAGE_SHARE = 0.5
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
    if not asked_before.strip() or same_question(asked_before, asked):
        return None
    before, now = Counter(problem_numbers(asked_before)), Counter(problem_numbers(asked))
    if before != now:
        gone, added = sorted((before - now).elements()), sorted((now - before).elements())
        if not gone:
            return f"yours also has {_listed(added)}"
        if not added:
            return f"this was also asked with {_listed(gone)}"
        return f"this was asked with {_listed(gone)}; yours says {_listed(added)}"
    old, new = _words(asked_before), _words(asked)
    if len(old & new) < SAME_LANGUAGE_SHARE * max(1, min(len(old), len(new))):
        return None  # another language, the same quantities: the same problem
    if old == new:
        return None  # the same words and numbers, in another order or spacing
    gone, added = sorted(old - new), sorted(new - old)
    if not gone:
        return f"yours also says {_listed(added)}"
    if not added:
        return f"its question also said {_listed(gone)}"
    return f"its question said {_listed(gone)}; yours says {_listed(added)}"
