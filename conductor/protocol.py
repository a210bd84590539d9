"""Parse one meta-model turn: the expert calls it makes and the final answer it gives.

Pure functions, no I/O. The grammar follows what the published meta-prompting runs
show, tolerantly:

* A call is `Expert <one to five words>:` ending a line (anywhere in the line, so
  "... asked by Expert Poet:" counts), then a triple-quoted instruction. A closing
  quote may be missing when the instruction runs to the end of the turn.
* `Expert X's output:` is never a call: the apostrophe is not allowed in a name, so a
  reply the model wrote on an expert's behalf is not dispatched.
* A final answer is `>> FINAL ANSWER:` (any case, any spacing) then a triple-quoted
  answer; without quotes, the rest of the turn is taken.

What to do with a turn that both calls experts and answers is the loop's policy, not
the parser's: the parser reports both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

QUOTE = '"""'

_NAME_WORD = r"""(?!expert\b)[^\s:"'’`*]+"""
# "Expert" then 1-5 name words, a colon, and only spaces (or markdown emphasis) to EOL.
# Bold may wrap the whole call line, the name, or "Expert" alone.
_CALL_RE = re.compile(
    rf"(?im)(?<![\w'’])\**expert\**[ \t]+\**(?P<name>{_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{0,4}})"
    r"[ \t]*\**[ \t]*:[ \t]*\**[ \t]*$"
)
_FINAL_RE = re.compile(r"(?i)>>[ \t]*final[ \t]+answer[ \t]*:")
_FAKE_OUTPUT_RE = re.compile(r"(?im)^\s*expert[ \t]+[^\n]{1,80}?['’]s[ \t]+output[ \t]*:")
PYTHON_NAMES = frozenset({"python", "python programmer", "python coder", "python developer"})


@dataclass(frozen=True)
class ExpertCall:
    """One call to an expert. `name` is the full name, e.g. "Expert Mathematician"."""

    name: str
    instruction: str
    closed: bool = True  # False when the closing triple quote was missing
    start: int = 0  # offset of the call in the turn

    @property
    def short_name(self) -> str:
        return self.name.split(None, 1)[1] if " " in self.name else self.name

    @property
    def is_python(self) -> bool:
        return self.short_name.strip().lower() in PYTHON_NAMES

    @property
    def is_empty(self) -> bool:
        return not self.instruction.strip()


@dataclass(frozen=True)
class ParsedTurn:
    calls: list[ExpertCall] = field(default_factory=list)
    final_answer: str | None = None
    answer_closed: bool = True
    # Offsets where the model wrote "Expert X's output:" itself (a fabricated reply).
    fabricated_outputs: int = 0

    @property
    def dispatchable(self) -> list[ExpertCall]:
        return [c for c in self.calls if not c.is_empty]

    @property
    def has_answer(self) -> bool:
        return self.final_answer is not None


def _normalise_name(raw: str) -> str:
    words = raw.replace("*", " ").split()
    return "Expert " + " ".join(words)


def _quoted_block(text: str, pos: int) -> tuple[str, bool, int] | None:
    """The triple-quoted block starting at `pos` (after optional whitespace).

    Returns (content, closed, end offset) or None when no block starts there.
    """
    m = re.compile(r"[ \t]*\r?\n?[ \t\r\n]*").match(text, pos)
    start = m.end() if m else pos
    if not text.startswith(QUOTE, start):
        return None
    body_start = start + len(QUOTE)
    end = text.find(QUOTE, body_start)
    if end == -1:
        return text[body_start:].strip("\n"), False, len(text)
    return text[body_start:end].strip("\n"), True, end + len(QUOTE)


def parse_final_answer(turn: str) -> tuple[str | None, bool]:
    """The final answer in a turn and whether its closing quote was found."""
    m = _FINAL_RE.search(turn)
    if not m:
        return None, True
    block = _quoted_block(turn, m.end())
    if block is not None:
        content, closed, _ = block
        return content.strip(), closed
    rest = turn[m.end() :].strip()
    return rest, False


def parse_expert_calls(turn: str) -> list[ExpertCall]:
    """Every expert call in a turn, in order. A name line with no quoted block is no call."""
    calls: list[ExpertCall] = []
    pos = 0
    while True:
        m = _CALL_RE.search(turn, pos)
        if not m:
            return calls
        block = _quoted_block(turn, m.end())
        if block is None:
            pos = m.end()
            continue
        content, closed, end = block
        calls.append(
            ExpertCall(
                name=_normalise_name(m.group("name")),
                instruction=content,
                closed=closed,
                start=m.start(),
            )
        )
        pos = end


def parse_turn(turn: str) -> ParsedTurn:
    """Calls, final answer and fabricated outputs of one meta-model turn."""
    answer, answer_closed = parse_final_answer(turn)
    calls = parse_expert_calls(turn)
    if answer is not None:
        # A call quoted inside the final answer is part of the answer, not a call.
        answer_at = _FINAL_RE.search(turn)
        assert answer_at is not None
        calls = [c for c in calls if c.start < answer_at.start()]
    return ParsedTurn(
        calls=calls,
        final_answer=answer,
        answer_closed=answer_closed,
        fabricated_outputs=len(_FAKE_OUTPUT_RE.findall(turn)),
    )


RUN_MARKER = "Please run this code!"
_FENCE_RE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*?)```", re.S | re.I)


def extract_code(reply: str, marker: str = RUN_MARKER) -> str | None:
    """The code Expert Python asked to run: the last fenced block before the marker.

    None when the marker is absent or no fenced block precedes it.
    """
    at = reply.rfind(marker)
    if at == -1:
        return None
    blocks = _FENCE_RE.findall(reply[:at])
    if not blocks:
        return None
    return blocks[-1]
