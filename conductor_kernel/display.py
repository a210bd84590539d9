"""Make untrusted text safe to show: control characters become visible escapes.

Everything a model or a sandbox produced can hold terminal escape sequences (clear the
screen, rewrite an earlier line, write the clipboard with OSC 52, hyperlinks with
OSC 8), 8-bit C1 controls, NUL, or bidirectional overrides that reorder what a reader
sees. `visible()` turns each of them into a printable escape such as `\\x1b` or
`\\u202e`, so what is shown is exactly what was sent, and nothing in it can act on the
terminal, the TUI or a log. Newlines and tabs are kept; a lone carriage return is not
(it moves the cursor back over text already shown), but CRLF reads as a newline.

Every place that shows such text (the CLI printer, the TUI, `runs show`, exports, log
lines) passes it through here first; HTML escaping comes on top of this, not instead.
"""

from __future__ import annotations

import logging
import re

# Bidirectional formatting characters: embeddings, overrides, isolates and marks.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# Zero-width and line/paragraph separators that hide or break text unseen, the
# deprecated format controls, the interlinear annotation marks, and the tag characters
# (U+E0000..E007F), which spell out ASCII no reader sees ("ASCII smuggling").
_INVISIBLE = "\u2028\u2029\ufeff\u200b\u2060\u180e\u206a-\u206f\ufff9-\ufffb"
_TAGS = "\U000e0000-\U000e007f"
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _BIDI + _INVISIBLE + _TAGS + "\ud800-\udfff]")
# The same set, for tests and callers that check text already shown.
UNSAFE = _UNSAFE


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with every control or invisible formatting character shown as an escape."""
    if not text:
        return text
    text = text.replace("\r\n", "\n")
    return _UNSAFE.sub(_escape, text)


def is_visible(text: str) -> bool:
    """True when `text` holds nothing `visible` would escape (newlines and tabs aside)."""
    return _UNSAFE.search(text.replace("\r\n", "\n")) is None


def visible_line(text: str) -> str:
    """Like `visible`, for one-line places (log lines, table cells): newlines escaped too."""
    return visible(text).replace("\n", "\\n").replace("\t", "\\t")


class VisibleFormatter(logging.Formatter):
    """Log lines with control characters shown as escapes: a log message may quote a
    model, a sandbox (the runner's last output) or a file name, and it ends up on a
    terminal (stderr) or in a log file read with `cat`/`tail -f`."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))
