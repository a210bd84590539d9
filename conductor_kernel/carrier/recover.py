"""Tool calls a model wrote as text in its reply instead of making them.

Small models offered tools often write the call into the content: in a
`<tool_call>...</tool_call>` block (their chat template's own form, the closing tag
sometimes missing), as bare JSON, in a code fence, or with every brace doubled
(`{{"name": "run_python", ...}}`, copied from a template that escapes them). Such a
call is read as a call; the turn's record says it was recovered from text.

A JSON object counts when it names a tool and carries arguments: `{"name": ...,
"arguments": {...}}` (or `parameters`), or OpenAI's `{"function": {"name": ...,
"arguments": "..."}}`. Bare JSON outside a tag must name one of the protocol's tools,
so an answer that happens to be JSON is not taken for a call. Reasoning
(`<think>...</think>`) is never read.
"""

from __future__ import annotations

import bisect
import json
import re
import textwrap
from collections.abc import Iterator
from typing import Any

from conductor_kernel.carrier.tools import CONSULT, TOOL_NAMES
from conductor_kernel.interfaces import ToolCall
from conductor_kernel.protocol import protocol_text

_TAG_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S | re.I)
_DECODER = json.JSONDecoder(strict=False)  # raw newlines inside strings, as models write
_NAME_KEYS = ("name", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_EXPERT_RE = re.compile(r"\s*expert\b", re.I)


def calls_in_text(text: str) -> list[ToolCall]:
    """The tool calls written in a reply's text, in order; [] when there are none."""
    visible = protocol_text(text)
    parts: list[tuple[str, bool]] = []  # (text, inside a tag), in order
    last = 0
    for tag in _TAG_RE.finditer(visible):
        parts += [(visible[last : tag.start()], False), (tag.group(1), True)]
        last = tag.end()
    parts.append((visible[last:], False))
    return [
        call
        for part, tagged in parts
        for value in _json_values(part)
        for call in _as_calls(value, any_name=tagged)
    ]


def _json_values(text: str) -> Iterator[Any]:
    """Every top-level JSON object or array in `text`, left to right; one written with
    doubled braces is read with them undoubled."""
    pos = 0
    while True:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i != -1]
        if not starts:
            return
        start = min(starts)
        found = _decode_at(text, start)
        if found is None:
            pos = start + 1
            continue
        value, end = found
        yield value
        pos = end


def _decode_at(text: str, start: int) -> tuple[Any, int] | None:
    """The JSON value starting at `start` and where it ends, else None."""
    # A call is an object (or a list of them): nothing else is worth repairing.
    kept, added = _backslashes_kept(text, start) if _CALL_START.match(text, start) else ("", [])
    if added:
        try:
            value, end = _DECODER.raw_decode(kept)
        except ValueError:
            pass
        else:
            if isinstance(value, dict | list):
                return value, start + end - bisect.bisect_left(added, end)
    try:
        value, end = _DECODER.raw_decode(text, start)
    except ValueError:
        pass
    else:
        if isinstance(value, dict | list):
            return value, end
        return None
    if '"""' in text[start:]:
        repaired, origin = _triple_quotes_as_json(text, start)
        try:
            value, end = _DECODER.raw_decode(repaired)
        except ValueError:
            pass
        else:
            if isinstance(value, dict):
                return value, origin[end - 1] + 1
    if not text.startswith("{{", start):
        return None
    single, origin = _undoubled(text, start)
    try:
        value, end = _DECODER.raw_decode(single)
    except ValueError:
        return None
    return (value, origin[end - 1] + 1) if isinstance(value, dict) else None


_TRIPLE_RE = re.compile(r'"""(.*?)"""', re.S)


def _triple_quotes_as_json(text: str, start: int) -> tuple[str, list[int]]:
    """`text[start:]` with each Python triple-quoted string made a JSON string (its
    text dedented: a program written indented inside the JSON runs as written), and
    for each character kept the offset in `text` just past what it came from."""
    out: list[str] = []
    origin: list[int] = []
    i = start
    for found in _TRIPLE_RE.finditer(text, start):
        for j in range(i, found.start()):
            out.append(text[j])
            origin.append(j)
        literal = json.dumps(textwrap.dedent(found.group(1)).strip("\n"), ensure_ascii=False)
        out.extend(literal)
        origin.extend([found.end() - 1] * len(literal))
        i = found.end()
    for j in range(i, len(text)):
        out.append(text[j])
        origin.append(j)
    return "".join(out), origin


# In a string of a call written as text, a backslash that begins no JSON escape (`\\(`,
# `\\sqrt` in LaTeX) stands for itself, and so does one JSON would read as a form feed,
# a backspace or a carriage return before a letter (`\\frac`, `\\beta`, `\\right`): no
# model means those. `\\n` and `\\t` keep their meaning (a program's tab is a tab).
_KEPT_ESCAPES = frozenset('"\\/bfnrtu')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_ESCAPE_RE = re.compile(r"\\(.)", re.S)  # a backslash and what it escapes, pair by pair
_CALL_START = re.compile(r'\{\s*"|\[\s*\{')


def _backslashes_kept(text: str, start: int) -> tuple[str, list[int]]:
    """`text[start:]` with each such backslash doubled, and where each added one stands
    in the result (ascending). Only backslashes are visited: every `{` of a reply is
    tried as a start, and a walk over each character from each made long replies slow."""
    pieces: list[str] = []
    added: list[int] = []
    last = start
    for escape in _ESCAPE_RE.finditer(text, start):
        at, after = escape.start(), escape.group(1)
        control = after in "bfr" and text[at + 2 : at + 3].isalpha()
        bad_unicode = after == "u" and not _HEX4.fullmatch(text[at + 2 : at + 6])
        if after in _KEPT_ESCAPES and not bad_unicode and not control:
            continue
        pieces += [text[last:at], "\\"]
        added.append(at - start + len(added))
        last = at
    pieces.append(text[last:])
    return "".join(pieces), added


def _undoubled(text: str, start: int) -> tuple[str, list[int]]:
    """`text[start:]` with `{{` and `}}` made single, and for each character kept the
    offset in `text` just past what it came from."""
    out: list[str] = []
    origin: list[int] = []
    i = start
    while i < len(text):
        pair = text[i : i + 2]
        step = 2 if pair in ("{{", "}}") else 1
        out.append(text[i])
        origin.append(i + step - 1)
        i += step
    return "".join(out), origin


def _as_calls(value: Any, *, any_name: bool) -> list[ToolCall]:
    if isinstance(value, list):
        return [c for item in value for c in _as_calls(item, any_name=any_name)]
    if not isinstance(value, dict):
        return []
    inner = value.get("function")
    if isinstance(inner, dict):  # OpenAI's wire shape, written out
        return _as_calls(inner, any_name=any_name)
    name = next(
        (value[k] for k in (*_NAME_KEYS, "function") if isinstance(value.get(k), str)), None
    )
    arguments = next((value[k] for k in _ARGUMENT_KEYS if k in value), None)
    # Named for the expert, not the tool: a consultation, when it says what to ask.
    named_for_expert = name is not None and name not in TOOL_NAMES and _EXPERT_RE.match(name)
    if named_for_expert and isinstance(arguments, dict):
        instruction = arguments.get("instruction")
        if isinstance(instruction, str):
            asked = {"name": name, "instruction": instruction}
            return [ToolCall(CONSULT, json.dumps(asked, ensure_ascii=False))]
    if name is None or not (any_name or name in TOOL_NAMES):
        return []
    if isinstance(arguments, str):
        return [ToolCall(name, arguments)]
    if isinstance(arguments, dict):
        return [ToolCall(name, json.dumps(arguments, ensure_ascii=False))]
    if arguments is None and any_name:
        return [ToolCall(name, "{}")]
    return []
