"""A count with its noun in the right number, for every layer's messages."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 round`, `2 rounds`, `0 rounds`; `many` for irregular plurals (`1 query`, ...)."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"
