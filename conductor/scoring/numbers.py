"""Numbers as people write them, read exactly (as `Fraction`s).

Handles any script's decimal digits (Bengali ১৮, Thai ๑๘, full-width １８ ...),
a minus sign (`-` or `−`) that does not follow a letter or digit, and both grouping
conventions:

* `70,000` `70.000` `70 000` `70'000` and Indian `1,20,000` are seventy thousand /
  one lakh twenty thousand;
* `7,425.00` `7.425,00` `7 425,00`: with two kinds of mark, the last is the decimal
  mark;
* one `,` or `.` followed by exactly three digits is grouping (`2,125` = 2125,
  `1.500` = 1500); otherwise it is a decimal mark (`2,5` = 2.5, `106.12`).

The single-mark-three-digits case is genuinely ambiguous (`2.125` could be a
decimal); answers to counting problems use grouping far more often, so that wins.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

_GROUP_SPACES = " \u00a0\u202f\u2009'’"
_MINUS = "-−"
# Digit groups joined by one mark; a space-like mark only before exactly 3 digits.
_NUMBER_RE = re.compile(
    rf"(?<![\d.,])(?P<sign>[{_MINUS}])?"
    rf"(?P<body>\d+(?:(?:[.,]\d+)|(?:[{_GROUP_SPACES}]\d{{3}}(?!\d)))*)"
)


@dataclass(frozen=True)
class Number:
    value: Fraction
    text: str
    start: int


def ascii_digits(text: str) -> str:
    """The text with every decimal digit of any script replaced by 0-9."""
    if text.isascii():
        return text
    out = []
    for ch in text:
        if not ch.isascii() and unicodedata.category(ch) == "Nd":
            out.append(str(unicodedata.digit(ch)))
        else:
            out.append(ch)
    return "".join(out)


def _value(body: str) -> Fraction | None:
    marks = [(i, ch) for i, ch in enumerate(body) if not ch.isdigit()]
    if not marks:
        return Fraction(int(body))
    kinds = {ch for _, ch in marks if ch in ".,"}
    decimal_at: int | None = None
    if len(kinds) == 2:
        last_at, last_mark = marks[-1]
        if last_mark not in ".," or sum(ch == last_mark for _, ch in marks) > 1:
            return None  # e.g. "1.234,5,6": not a number anyone writes
        decimal_at = last_at
    elif len(kinds) == 1:
        (mark,) = kinds
        uses = [i for i, ch in marks if ch == mark]
        spaces = len(marks) - len(uses)
        after = body[uses[-1] + 1 :]
        leading_zero = body.startswith("0")  # "0.250" is a decimal, never grouping
        grouping = len(uses) > 1 or (len(after) == 3 and not spaces and not leading_zero)
        if spaces and len(uses) == 1:
            grouping = False  # "7 425,00": spaces group, so the comma is decimal
        if not grouping:
            if len(uses) > 1:
                return None
            decimal_at = uses[0]
    whole = body[:decimal_at] if decimal_at is not None else body
    frac = body[decimal_at + 1 :] if decimal_at is not None else ""
    whole_digits = "".join(ch for ch in whole if ch.isdigit())
    return Fraction(int(whole_digits)) + (
        Fraction(int(frac), 10 ** len(frac)) if frac else Fraction(0)
    )


def find_numbers(text: str) -> list[Number]:
    """Every number written in `text`, in order."""
    text = ascii_digits(text)
    found = []
    for m in _NUMBER_RE.finditer(text):
        value = _value(m.group("body"))
        if value is None:
            continue
        # A dash right after a letter or digit is a hyphen ("4-hour"), not a minus.
        if m.group("sign") and not (m.start() and text[m.start() - 1].isalnum()):
            value = -value
        found.append(Number(value=value, text=m.group(0), start=m.start()))
    return found


def parse_number(text: str) -> Fraction | None:
    """The value of a text that is one number and nothing else (bar punctuation)."""
    text = ascii_digits(text.strip())
    numbers = find_numbers(text)
    if len(numbers) != 1:
        return None
    only = numbers[0]
    rest = text[: only.start] + text[only.start + len(only.text) :]
    if any(ch.isalnum() for ch in rest):
        return None
    return only.value


def format_number(value: Fraction) -> str:
    """A Fraction as a plain decimal when it is one, else p/q."""
    if value.denominator == 1:
        return str(value.numerator)
    as_float = float(value)
    if Fraction(repr(as_float)) == value:
        return repr(as_float)
    return f"{value.numerator}/{value.denominator}"
