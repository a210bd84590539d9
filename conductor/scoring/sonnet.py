"""Sonnets: 14 lines, rhyme scheme ABAB CDCD EFEF GG, the required words present.

Our rule:

* Lines are the answer's non-empty lines, less a title (a first line that is a
  Markdown heading, wrapped in ** or __, or starts with "Title:") and less rhyme
  labels such as a trailing "(A)". There must be exactly 14.
* Lines sharing a letter of the scheme must end on words that rhyme or slant-rhyme
  (`rhyme.rhyme_kind`: CMU dictionary, spelling fallback for unknown words; measured
  against 349 hand-labelled pairs in tests/data/rhyme_pairs.tsv). A word does not
  rhyme with itself.
* Every required word must appear as a whole word, any case. The words come from
  the target (`ABAB CDCD EFEF GG, grass value jail`) or, without one, from the quoted
  words of the input.

The paper's rule (sonnet_paper.py, every rule written out there) skipped the required
words, ignored end words missing from the dictionary, forgave a line whose end word
rhymes with nothing when few lines do so, and demanded 10-11 syllables a line; we do
not count syllables (the task asks for a rhyme scheme and words, not a metre).
"""

from __future__ import annotations

import re
from itertools import pairwise

from conductor.scoring import sonnet_paper
from conductor.scoring.base import ScoringEnv, Verdict, paper_answer
from conductor.scoring.rhyme import last_word, rhyme
from conductor.tasks.files import TaskItem

NEEDS_TARGET = False
DEFAULT_SCHEME = "ABAB CDCD EFEF GG"
_TITLE = re.compile(r"^(?:#+\s|\*\*.*\*\*$|__.*__$|title\s*:)", re.I)
_LABEL = re.compile(r"\s*\([A-Za-z]\)\s*$")


def poem_lines(text: str) -> list[str]:
    lines = [_LABEL.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if lines and _TITLE.match(lines[0]):
        lines = lines[1:]
    return lines


def scheme_and_words(item: TaskItem) -> tuple[str, list[str]]:
    """The rhyme scheme (letters only) and required words for an item."""
    target = item.target or ""
    scheme_part, _, words_part = target.partition(",")
    scheme = re.sub(r"[^A-Za-z]", "", scheme_part).upper() or re.sub(r"\s", "", DEFAULT_SCHEME)
    words = words_part.split() if words_part.strip() else re.findall(r'"([^"]+)"', item.input)
    return scheme, [w.strip() for w in words if w.strip()]


def rhyme_faults(lines: list[str], scheme: str) -> list[str]:
    ends = [last_word(line) for line in lines]
    faults = []
    for letter in dict.fromkeys(scheme):
        at = [i for i, mark in enumerate(scheme) if mark == letter]
        for i, j in pairwise(at):
            if not rhyme(ends[i], ends[j]):
                faults.append(f"{letter}: {ends[i]!r} (line {i + 1}) / {ends[j]!r} (line {j + 1})")
    return faults


def missing_words(text: str, words: list[str]) -> list[str]:
    return [w for w in words if not re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text, re.I)]


def ours(answer: str, item: TaskItem, env: ScoringEnv) -> Verdict:
    scheme, words = scheme_and_words(item)
    lines = poem_lines(answer)
    if len(lines) != len(scheme):
        return Verdict(False, f"{len(lines)} lines, the scheme needs {len(scheme)}")
    problems = []
    missing = missing_words(answer, words)
    if missing:
        problems.append("missing " + ", ".join(missing))
    faults = rhyme_faults(lines, scheme)
    if faults:
        problems.append("no rhyme " + "; ".join(faults[:3]) + ("; ..." if len(faults) > 3 else ""))
    if problems:
        return Verdict(False, "; ".join(problems))
    return Verdict(True, f"{len(lines)} lines rhyme {scheme}, words present")


def paper(output: str, item: TaskItem, env: ScoringEnv) -> bool:
    """The published evaluation: the fixed scheme, no required words (as it was called)."""
    return sonnet_paper.passes(paper_answer(output), DEFAULT_SCHEME)
