"""Recalled notes as text for the first meta turn, under a token budget.

Only what fits is rendered, and only rendered notes are reported in the `Recall` event,
so the event names exactly what the model saw.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from conductor_kernel.text.display import visible_line
from conductor_kernel.text.tokens import estimate_tokens as tokenizer_count
from lessons.values import EVIDENCE_WORDS, excerpt, trust_name

HEADER = (
    "From the notebook: notes distilled from earlier runs on questions like this one. "
    "They may be wrong or may not fit; use what helps and check it. When a note helps, "
    "name its id in brackets (e.g. [n3d59f5a1b2c]) where you use it."
)
VERIFIED = {
    **EVIDENCE_WORDS,
    "sandbox": "a program printed it (not independently checked)",
    "agreement": "experts agreed (not independently checked)",
}


# Said of a tool that fits the question as asked and whose answers were checked: the
# meta model can run it at once, rather than have a program written again.
RUNNABLE = (
    "  YOU CAN RUN IT: this program fits your question as asked (every word and number "
    "of it read) and its answers were checked before. Send it to Expert Python as it is, "
    'in a ```python block followed by the line "Please run this code!" (it runs as '
    "given, with no expert call), then check what it prints."
)


# Said of a tool whose answer to this very question passed the task's check in a fresh
# sandbox before recall showed it (lessons/read/tool_check.py).
CHECKED_HERE = (
    "  CHECKED ON YOUR QUESTION: run on this question in a fresh sandbox, it printed "
    "{answer} and the task's own check accepts that answer."
)


# Anthropic's tokenizer is not published; its counts run above cl100k's on most text,
# so the budget keeps a margin.
TOKEN_MARGIN = 1.2


# Cached: rendering counts each note twice (does it fit, then what it used), and the
# same notes, headers and lines come back recall after recall.
@functools.lru_cache(maxsize=4096)
def count_tokens(text: str) -> int:
    """Tokens `text` takes (conductor_kernel/text/tokens.py), with a margin for other
    tokenizers."""
    return math.ceil(tokenizer_count(text) * TOKEN_MARGIN)


def estimate_tokens(text: str) -> int:
    return count_tokens(text)


@dataclass
class Rendered:
    text: str
    tokens: int
    note_ids: list[str]


def render_note(note: dict[str, Any], *, code_chars: int) -> str:
    counters = f"helped {note['helpful']}, hurt {note['harmful']}"
    if note.get("tool_tests") == 0:
        counters = "not yet tested on other questions · " + counters
    elif "tool_pass_rate" in note:
        counters = f"tested pass rate {note['tool_pass_rate']:.0%} · " + counters
    source = f"from run {note['source_run']}" if note.get("source_run") else "imported"
    if note.get("origin"):  # another notebook brought it (schema m004): say which, escaped
        source += f" · {excerpt(visible_line(note['origin']), 300)}"
    trust = trust_name(note["verification"], note.get("outcome", ""))
    evidence = VERIFIED.get(note["verification"], note["verification"])
    if trust == "rejected":  # a failure, whatever the level of its evidence
        evidence = "FAILED: the run's answer was judged wrong; do not reuse it"
    elif trust == "unverified":
        evidence = "not verified"
    head = f"[{note['id']}] {note['kind']} · {trust}: {evidence} · {counters} · {source}"
    warning = ""
    if note.get("differs"):
        head += " · ANOTHER QUESTION"
        warning = (
            f"  Made for a different question ({note['differs']}): its answer is not "
            "this question's answer."
        )
    code = (note.get("code") or "").rstrip()
    whole = len(code) <= code_chars
    checked_here = ""
    if note.get("checked_answer") is not None and not note.get("differs"):
        checked_here = CHECKED_HERE.format(answer=excerpt(str(note["checked_answer"]), 400))
    lines = [
        head,
        warning,
        RUNNABLE if note.get("runnable") and code and whole and not note.get("differs") else "",
        checked_here,
        f"  key: {note['key']}" if note.get("key") else "",
        f"  {note['text']}",
    ]
    if code:
        if not whole:
            code = code[:code_chars].rstrip() + "\n# ... (cut to fit the notebook budget)"
        lines.append("```python\n" + code + "\n```")
    return "\n".join(line for line in lines if line)


def render_recall(
    *,
    type_name: str | None,
    description: str,
    suggestions: list[str],
    procedure: list[str],
    notes: list[dict[str, Any]],
    budget_tokens: int,
    code_chars: int = 3000,
) -> Rendered:
    """The recall text, growing section by section while it fits the budget."""
    parts = [HEADER]
    used = estimate_tokens(HEADER)

    def fits(text: str) -> bool:
        return used + estimate_tokens(text) + 1 <= budget_tokens

    if type_name:
        line = f"Task type: {type_name}. {excerpt(description, 300)}".strip()
        if fits(line):
            parts.append(line)
            used += estimate_tokens(line) + 1
    for title, items, numbered in (
        ("Suggestions:", suggestions, False),
        ("Procedure that worked before:", procedure, True),
    ):
        if not items:
            continue
        block = [title]
        for i, item in enumerate(items, 1):
            candidate = f"{i}. {item}" if numbered else f"- {item}"
            if not fits("\n".join([*block, candidate])):
                break
            block.append(candidate)
        if len(block) > 1:
            text = "\n".join(block)
            parts.append(text)
            used += estimate_tokens(text) + 1
    shown: list[str] = []
    if notes and fits("Notes:"):
        parts.append("Notes:")
        used += 2
        for note in notes:
            text = render_note(note, code_chars=code_chars)
            if not fits(text) and note.get("code"):
                # Try the note with its code cut down to what is left.
                room = budget_tokens - used - estimate_tokens(render_note(note, code_chars=0))
                chars = room * 2  # code runs near 2-4 characters a token; cut, then re-count
                while chars > 200:
                    text = render_note(note, code_chars=chars - 80)
                    if fits(text):
                        break
                    chars = int(chars * 0.8)
            if not fits(text):
                continue
            parts.append(text)
            used += estimate_tokens(text) + 1
            shown.append(note["id"])
        if not shown:
            parts.pop()
    if len(parts) == 1:
        return Rendered("", 0, [])
    text = "\n\n".join(parts)
    return Rendered(text, estimate_tokens(text), shown)
