"""Parse one meta-model turn: the expert calls it makes and the final answer it gives.

Pure functions, no I/O. The grammar follows what the published meta-prompting runs
show, tolerantly:

* A call is `Expert <one to five words>:` ending a line (anywhere in the line, so
  "... asked by Expert Poet:" counts), then a triple-quoted instruction. A closing
  quote may be missing when the instruction runs to the end of the turn.
* `Expert X's output:` is never a call: the apostrophe is not allowed in a name, so a
  reply the model wrote on an expert's behalf is not dispatched.
* A final answer is `>> FINAL ANSWER:` (any case, any spacing, markdown emphasis or a
  heading mark around it, as in `**>> FINAL ANSWER:**`) then a triple-quoted answer (or
  a fenced block); without either, the rest of the turn, emphasis stripped.
* Only when a turn has no such marker, the looser forms small models write count too,
  each at the start of a line: `>>` alone on a line with `FINAL ANSWER:` on the next,
  or `Final Answer:` without `>>` (`_LOOSE_FINAL_RE`). Mid-sentence ("the final answer:
  ...") is prose, never a marker.
* The marker counts only outside an expert's instruction: an instruction may well tell
  the expert how to phrase a final answer.
* Line endings may be CRLF (or lone CR): they are read as newlines.
* Reasoning (`<think>…</think>`, closed or not; `conductor_kernel.reasoning`) is not
  part of the protocol: a call or an answer the model only thought about is none.

What to do with a turn that both calls experts and answers is the loop's policy, not
the parser's: the parser reports both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from conductor_kernel.reasoning import visible_text

QUOTE = '"""'

_NAME_WORD = r"""(?!expert\b)[^\s:"'’`*]+"""
# "Expert" then 1-5 name words, a colon, and only spaces (or markdown emphasis) to EOL.
# Bold may wrap the whole call line, the name, or "Expert" alone.
_CALL_RE = re.compile(
    rf"(?im)(?<![\w'’])\**expert\**[ \t]+\**(?P<name>{_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{0,4}})"
    r"[ \t]*\**[ \t]*:[ \t]*\**[ \t]*$"
)
_EMPHASIS = r"[*_]*"
_FINAL_RE = re.compile(
    rf"(?i){_EMPHASIS}>>[ \t]*{_EMPHASIS}[ \t]*final[ \t]+answer[ \t]*{_EMPHASIS}[ \t]*:"
    rf"{_EMPHASIS}"
)
# The looser family, tried only when the strict marker is absent: at a line's start,
# after an optional heading mark and emphasis, an optional `>>` ending its own line.
_LOOSE_FINAL_RE = re.compile(
    rf"(?im)^[ \t]*(?:#{{1,6}}[ \t]*)?{_EMPHASIS}(?:>>[ \t]*{_EMPHASIS}[ \t]*\n[ \t]*"
    rf"{_EMPHASIS})?[ \t]*final[ \t]+answer[ \t]*{_EMPHASIS}[ \t]*:{_EMPHASIS}"
)
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


_FENCED_RE = re.compile(r"[ \t]*\n?[ \t\n]*```[^\n`]*\n(.*?)(?:```|\Z)", re.S)
_WRAPPED_RE = re.compile(r"^(\*\*|__)(.+)\1$", re.S)


def normalise_newlines(turn: str) -> str:
    return turn.replace("\r\n", "\n").replace("\r", "\n")


def protocol_text(turn: str) -> str:
    """The part of a turn the protocol reads: newlines normalised, reasoning left out."""
    return visible_text(normalise_newlines(turn))


def _answer_at(turn: str, pos: int) -> tuple[str, bool]:
    """The answer after the marker ending at `pos`, and whether it was closed."""
    block = _quoted_block(turn, pos)
    if block is not None:
        content, closed, _ = block
        return content.strip(), closed
    fenced = _FENCED_RE.match(turn, pos)
    if fenced is not None:
        return fenced.group(1).strip(), fenced.group(0).rstrip().endswith("```")
    rest = turn[pos:].strip()
    while (wrapped := _WRAPPED_RE.match(rest)) is not None:
        rest = wrapped.group(2).strip()
    return rest, False


def _scan(turn: str, *, strict: bool = False) -> tuple[list[ExpertCall], re.Match[str] | None]:
    """Calls and the final-answer marker: the strict marker, else (unless `strict`) the
    looser forms."""
    calls, final = _scan_with(turn, _FINAL_RE)
    if final is not None or strict:
        return calls, final
    return _scan_with(turn, _LOOSE_FINAL_RE)


def _scan_with(
    turn: str, final_re: re.Pattern[str]
) -> tuple[list[ExpertCall], re.Match[str] | None]:
    """Calls and the final-answer marker, in one pass from the start of the turn.

    Whichever comes first is taken; a call's quoted instruction is skipped whole, so a
    marker inside it is part of the instruction. Calls after the marker are part of the
    answer.
    """
    calls: list[ExpertCall] = []
    pos = 0
    while True:
        call = _CALL_RE.search(turn, pos)
        final = final_re.search(turn, pos)
        if final is not None and (call is None or final.start() < call.start()):
            return calls, final
        if call is None:
            return calls, None
        block = _quoted_block(turn, call.end())
        if block is None:
            pos = call.end()
            continue
        content, closed, end = block
        calls.append(
            ExpertCall(
                name=_normalise_name(call.group("name")),
                instruction=content,
                closed=closed,
                start=call.start(),
            )
        )
        pos = end


def parse_final_answer(turn: str, *, strict: bool = False) -> tuple[str | None, bool]:
    """The final answer in a turn and whether its closing quote was found. `strict`
    reads only the published runs' marker (`>> FINAL ANSWER:` on one line)."""
    turn = protocol_text(turn)
    _, final = _scan(turn, strict=strict)
    if final is None:
        return None, True
    return _answer_at(turn, final.end())


def parse_expert_calls(turn: str) -> list[ExpertCall]:
    """Every expert call in a turn, in order. A name line with no quoted block is no call."""
    return _scan(protocol_text(turn))[0]


def parse_turn(turn: str) -> ParsedTurn:
    """Calls, final answer and fabricated outputs of one meta-model turn."""
    turn = protocol_text(turn)
    calls, final = _scan(turn)
    answer, answer_closed = (None, True) if final is None else _answer_at(turn, final.end())
    return ParsedTurn(
        calls=calls,
        final_answer=answer,
        answer_closed=answer_closed,
        fabricated_outputs=len(_FAKE_OUTPUT_RE.findall(turn)),
    )


def answer_complete(turn: str) -> bool:
    """Whether a turn written so far holds its whole final answer (quoted or fenced, and
    closed): what a stream is stopped at, since nothing after an answer is acted on."""
    if ">>" not in turn and "FINAL" not in turn.upper():
        return False
    parsed = parse_turn(turn)
    return parsed.final_answer is not None and parsed.answer_closed


RUN_MARKER = "Please run this code!"
_FENCE_RE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*?)```", re.S | re.I)
# Every fence line, opening or closing: an opening one is followed by its code.
_FENCE_LINE_RE = re.compile(r"```[^\n`]*\n|```")


def extract_code(reply: str, marker: str = RUN_MARKER) -> str | None:
    """The code Expert Python asked to run: the last fenced block before the marker, or
    the block the marker was written inside (small models put the line in the fence:
    the block runs without it).

    None when the marker is absent or no fenced block precedes or holds it, reasoning
    left out.
    """
    reply = visible_text(reply)
    at = reply.lower().rfind(marker.lower())
    if at == -1:
        return None
    holding = _block_holding(reply, at)
    if holding is not None:
        return holding
    blocks = _FENCE_RE.findall(reply[:at])
    if not blocks:
        return None
    code: str = blocks[-1]
    return code


def _block_holding(reply: str, at: int) -> str | None:
    """The code of the fenced block that `at` falls inside (an open fence with no close
    before `at`), without the marker's line and anything after it; None if none does."""
    opening = None
    for fence in _FENCE_LINE_RE.finditer(reply[:at]):
        opening = None if opening is not None else fence
    if opening is None:
        return None
    line_start = reply.rfind("\n", 0, at) + 1
    code = reply[opening.end() : line_start]
    return code if code.strip() else None
