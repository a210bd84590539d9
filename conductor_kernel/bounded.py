"""JSON and TOML read with a bound on nesting, for every file the product reads.

Python's decoders recurse once per level: text nested a hundred thousand levels deep
raises `RecursionError` (or exhausts the stack) inside them or in whatever walks the
result next. Nothing conductor reads nests deeper than a few levels, so deeper text is
refused before decoding, with the line where it goes too deep (`TooDeep`, a
`ValueError`, so callers that already catch bad JSON catch it too).

Finding the depth is one regular-expression pass (strings skipped whole), run only when
the text holds more opening brackets than the bound allows, so ordinary lines cost one
`count` each.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

MAX_DEPTH = 100

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)
_TOML_TOKENS = re.compile(
    r'"""[\s\S]*?(?:"""|$)|\'\'\'[\s\S]*?(?:\'\'\'|$)|"(?:[^"\\\n]|\\.)*"?|\'[^\'\n]*\'?'
    r"|#[^\n]*|[\[\]{}]"
)


class TooDeep(ValueError):
    """Text nested deeper than `MAX_DEPTH`; `line` is where it went past the bound."""

    def __init__(self, line: int, limit: int = MAX_DEPTH) -> None:
        self.line, self.limit = line, limit
        super().__init__(f"nested more than {limit} levels deep")


def too_deep_at(text: str, *, toml: bool = False, limit: int = MAX_DEPTH) -> int | None:
    """The 1-based line where `text` nests past `limit` brackets, or None."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    for match in (_TOML_TOKENS if toml else _JSON_TOKENS).finditer(text):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, match.start()) + 1
        elif token == "]" or token == "}":
            depth -= 1
    return None


def _line_in_json(text: str) -> int:
    return 1 if "\n" not in text else text.count("\n", 0, len(text) // 2) + 1


def loads_json(text: str | bytes, *, limit: int = MAX_DEPTH) -> Any:
    """`json.loads`, refusing text nested deeper than `limit` with `TooDeep`."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8", errors="replace")
    line = too_deep_at(text, limit=limit)
    if line is not None:
        raise TooDeep(line, limit)
    try:
        return json.loads(text)
    except RecursionError:  # a bound above the interpreter's: still no traceback
        raise TooDeep(_line_in_json(text), limit) from None


def loads_toml(text: str, *, limit: int = MAX_DEPTH) -> dict[str, Any]:
    """`tomllib.loads`, refusing text nested deeper than `limit` with `TooDeep`."""
    line = too_deep_at(text, toml=True, limit=limit)
    if line is not None:
        raise TooDeep(line, limit)
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise TooDeep(_line_in_json(text), limit) from None


def json_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text: split on "\\n" only. `str.splitlines` also splits
    on U+2028, U+0085, form feeds and more, which JSON strings may hold unescaped; a
    carriage return before the newline (a file saved on Windows) is dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]
