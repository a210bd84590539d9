"""Problem-level identity: what a problem keeps when it is paraphrased or translated.

A word problem translated into another language keeps its quantities: the numbers, in
whatever digits the script writes them (Bengali ৫, Thai ๕, full-width ５, Chinese 五),
with thousands written `1,000`, `1.000` or `1 000`. Those numbers, as index terms
(`num_1000`), let recall find the same problem across languages and types, where the
words share nothing. The question's hash tells the same question asked again (evaluation
never shows a note made from the question under test).
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata

from conductor_kernel.interfaces import TaskScoring

_CJK_DIGITS = {c: i for i, c in enumerate("〇一二三四五六七八九")} | {"两": 2, "兩": 2, "零": 0}
_CJK_UNITS = {"十": 10, "百": 100, "千": 1000}
_CJK_MYRIAD = {"万": 10_000, "萬": 10_000, "億": 100_000_000, "亿": 100_000_000}
_CJK_RUN = re.compile(r"[〇一二三四五六七八九两兩零十百千万萬億亿]+")
_THOUSANDS = re.compile(r"(?<=\d)[,.\u00a0\u202f ](?=\d{3}(?!\d))")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def _cjk_value(run: str) -> int | None:
    """The value of a run of Chinese/Japanese numerals (三百五十 → 350), else None."""
    total, section, digit = 0, 0, None
    for char in run:
        if char in _CJK_DIGITS:
            # Digit by digit, as in 二〇二三, or one digit before a unit.
            digit = _CJK_DIGITS[char] + (digit * 10 if digit is not None else 0)
        elif char in _CJK_UNITS:
            section += (1 if digit is None else digit) * _CJK_UNITS[char]
            digit = None
        else:
            total += (section + (digit or 0)) * _CJK_MYRIAD[char]
            section, digit = 0, None
    value = total + section + (digit or 0)
    return value if value > 0 else None


# A decimal digit of any script other than 0-9 (`\d` is Unicode's Nd class).
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")


def ascii_digits(text: str) -> str:
    """Every decimal digit of any script as 0-9; a CJK numeral run as its value."""
    # A scan in C, not a Python loop over every character: recall reads the numbers of
    # every candidate's question, and published questions run to thousands of characters.
    text = _OTHER_DIGIT.sub(lambda m: str(unicodedata.digit(m.group())), text)

    def cjk(match: re.Match[str]) -> str:
        run = match.group()
        if len(run) == 1:
            # A lone numeral is more often part of a word than a quantity: 一共 (in
            # all), 一半 (half), 第一 (first), 十分 (very); and a small count is spelled
            # in the languages it is asked in next, so it carries nothing across.
            return run
        value = _cjk_value(run)
        return f" {value} " if value is not None else run

    text = _DIGIT_UNIT.sub(_digit_unit, text)
    return _CJK_RUN.sub(cjk, text)


_DIGIT_UNIT = re.compile(r"(\d+(?:\.\d+)?)\s*([万萬億亿千])")


def _digit_unit(match: re.Match[str]) -> str:
    """`8万` (Japanese, Chinese: digits times a unit) as 80000."""
    unit = {**_CJK_MYRIAD, "千": 1000}[match.group(2)]
    value = float(match.group(1)) * unit
    return f" {int(value) if value == int(value) else value} "


def problem_numbers(text: str) -> list[str]:
    """The problem's quantities as canonical strings (`1000`, `2.5`), in order."""
    return list(_problem_numbers(text))


# Recall compares the question with each candidate's: the same texts come back often.
@functools.lru_cache(maxsize=4096)
def _problem_numbers(text: str) -> tuple[str, ...]:
    text = _THOUSANDS.sub("", ascii_digits(text))
    out = []
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", ".")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.append(value.lstrip("0") or "0")
    return tuple(out)


def number_terms(text: str) -> list[str]:
    """Index tokens for the problem's numbers (`num_1000`, `num_2p5`)."""
    return sorted({"num_" + n.replace(".", "p") for n in problem_numbers(text)})


def normal_question(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def question_hash(text: str) -> str:
    return hashlib.sha256(normal_question(text).encode()).hexdigest()[:24]


def same_question(a: str, b: str) -> bool:
    """The same question, also when one is the other with a task description before it."""
    na, nb = normal_question(a), normal_question(b)
    if not na or not nb:
        return False
    return na == nb or (len(nb) >= 12 and nb in na) or (len(na) >= 12 and na in nb)


def core_input(question: str, scoring: TaskScoring) -> str:
    """The question less a built-in task's description before it (the batch form asks
    `description + input`): tools read, and excerpts are cut from, the input alone. The
    descriptions are those of the notebook's scorers."""
    for description in scoring.task_descriptions():
        head = description.strip()
        if head and question.startswith(head):
            return question[len(head) :].strip()
    return question
