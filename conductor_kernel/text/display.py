"""Make untrusted text safe to show: control and invisible characters become escapes.

Everything a model or a sandbox produced can hold terminal escape sequences (clear the
screen, rewrite an earlier line, write the clipboard with OSC 52, hyperlinks with
OSC 8), 8-bit C1 controls, NUL, bidirectional overrides that reorder what a reader
sees, or characters drawn as nothing at all that still carry text (tag characters
spelling ASCII, 46 variation selectors after an emoji, zero-width joiners, fillers).
`visible()` turns each of them into a printable escape such as `\\x1b`, `\\u202e` or
`\\U000e0041`, so what is shown is exactly what was sent, and nothing in it can act on
the terminal, the TUI or a log, nor reach a reader (or the meta model) unseen.
Newlines and tabs are kept; a lone carriage return is not (it moves the cursor back
over text already shown), but CRLF reads as a newline.

The set is derived from Unicode properties, not listed by hand: every code point that
is Default_Ignorable_Code_Point (which takes in the format characters, variation
selectors 1-256, Hangul fillers, the combining grapheme joiner, invisible operators,
soft hyphen, ZWJ/ZWNJ, tag characters and the ranges Unicode reserves for more of
them), every format (Cf), control (Cc, bar tab and newline), surrogate (Cs), line and
paragraph separator (Zl, Zp) and noncharacter. Python's `unicodedata` has categories
but not Default_Ignorable_Code_Point, so the maintained `regex` package (its own,
current Unicode database) supplies `\\p{...}`. One addition no property names: U+2800
BRAILLE PATTERN BLANK, a symbol whose glyph is empty and which is used as invisible
filler. The price is that emoji sequences joined by ZWJ or carrying U+FE0F show their
escapes; an escape a reader can see beats text nobody can.

Every place that shows such text (the CLI printer, the TUI, `runs show`, exports, log
lines) passes it through here first, and so does the sandbox output the meta model
reads; HTML escaping comes on top of this, not instead.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

# Drawn blank, yet neither whitespace nor default-ignorable: no property marks these.
_BLANK_GLYPHS = "\u2800"
# Within ASCII the set is the control characters bar tab and newline (no ASCII code
# point is format, ignorable, a separator or a noncharacter): most text shown is ASCII,
# and matched with the standard library's `re` it needs no `regex` (12 ms to import, a
# tenth of a short command's start). tests/escaping/ checks both ways agree.
_ASCII_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@functools.cache
def _unsafe() -> Any:
    import regex

    return regex.compile(
        r"[[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Cc}\p{Cs}\p{Zl}\p{Zp}"
        r"\p{Noncharacter_Code_Point}" + _BLANK_GLYPHS + r"]--[\t\n]]",
        regex.VERSION1,
    )


def __getattr__(name: str) -> Any:
    # UNSAFE: the whole set as a compiled `regex`, for tests and callers that check
    # text already shown; compiled when first asked for.
    if name == "UNSAFE":
        return _unsafe()
    raise AttributeError(name)


def _escape(match: Any) -> str:
    char = match.group()
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _pattern(text: str) -> Any:
    return _ASCII_UNSAFE if text.isascii() else _unsafe()


def visible(text: str) -> str:
    """`text` with every control or invisible formatting character shown as an escape."""
    if not text:
        return text
    text = text.replace("\r\n", "\n")
    return str(_pattern(text).sub(_escape, text))


def is_visible(text: str) -> bool:
    """True when `text` holds nothing `visible` would escape (newlines and tabs aside)."""
    text = text.replace("\r\n", "\n")
    return _pattern(text).search(text) is None


def visible_line(text: str) -> str:
    """Like `visible`, for one-line places (log lines, table cells): newlines escaped too."""
    return visible(text).replace("\n", "\\n").replace("\t", "\\t")


class VisibleFormatter(logging.Formatter):
    """Log lines with control characters shown as escapes: a log message may quote a
    model, a sandbox (the runner's last output) or a file name, and it ends up on a
    terminal (stderr) or in a log file read with `cat`/`tail -f`."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))
