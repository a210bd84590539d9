"""Ids looked up by prefix as a range of the primary key, never with `LIKE`.

A user types the first characters of a run's or a note's id. `LIKE` would read `%` and
`_` in them as wildcards (so `%` alone named a run) and ignore ASCII case, and a `LIKE`
on the key is a full scan. The ids starting with P are exactly those from P up to, not
including, P's successor: P with its last character moved one code point on (SQLite
compares text as UTF-8 bytes, whose order is the code points'), which the key's index
answers directly.
"""

from __future__ import annotations

MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)  # never in stored text: UTF-8 has no form for them


def encodable(text: str) -> bool:
    """Whether SQLite can be given `text` (a lone surrogate has no UTF-8 form)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def successor(prefix: str) -> str | None:
    """The least text greater than every text starting with `prefix`; None when there
    is none (an empty prefix, or one of only the last code point)."""
    while prefix:
        code = ord(prefix[-1]) + 1
        if code in _SURROGATES:
            code = _SURROGATES.stop
        if code <= MAX_CODE_POINT:
            return prefix[:-1] + chr(code)
        prefix = prefix[:-1]
    return None


def prefix_condition(column: str, prefix: str) -> tuple[str, list[str]]:
    """SQL (on the trusted `column` name) and its parameters for `column` starting with
    `prefix`, as a range an index on `column` serves."""
    upper = successor(prefix)
    if upper is None:
        return f"{column} >= ?", [prefix]
    return f"{column} >= ? and {column} < ?", [prefix, upper]
