"""User text as an SQLite FTS5 query: every word must match, nothing is syntax.

FTS5 reads `NOT`, `AND`, `OR`, `NEAR`, `"`, `(`, `)`, `:`, `*`, `^` and `-` as query
syntax, so ordinary text such as `Janet's ducks`, `to-make`, `a:b` or `(x` either fails
or means something else. Each whitespace-separated word becomes a quoted string (a
double quote inside is doubled), so the words are matched as written, all of them.
The raw syntax stays available behind an explicit option (`runs search --raw`).
"""

from __future__ import annotations

from conductor_kernel.errors import UserFacingError


class SearchSyntaxError(UserFacingError):
    """A full-text query SQLite refuses (only raw FTS5 syntax can be one)."""

    def __init__(self, query: str, reason: str) -> None:
        self.query, self.reason = query, reason
        super().__init__(f"the full-text query {query!r} is not valid ({reason}).")


def quote_words(text: str) -> str:
    """`text` as an FTS5 query of quoted words, all required; "" when there are none."""
    words = text.replace("\x00", " ").split()  # SQLite ends a string at NUL
    return " ".join('"' + word.replace('"', '""') + '"' for word in words)
