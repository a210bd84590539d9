"""Why a meta turn was neither a call nor an answer, in words for the model.

A small model that misses the protocol by a little (a call line with no quoted
instruction, "final answer" in a sentence, its whole message inside a reasoning block)
does better when the nudge says what was wrong than with the generic reminder alone.
Each reason names what the model wrote and what the parser needs instead.
"""

from __future__ import annotations

import re

from conductor_kernel.protocol import _CALL_RE, _FAKE_OUTPUT_RE, protocol_text
from conductor_kernel.reasoning import split_reasoning

_SAME_LINE_CALL_RE = re.compile(r"(?im)^[^\n]*?\bexpert[ \t]+([^\n:\"]{1,60}?)[ \t]*:[ \t]*\"\"\"")
_ANSWER_WORDS_RE = re.compile(r"(?i)final[ \t]+answer")


def why_not_accepted(turn: str) -> list[str]:
    """Reasons the turn held no call and no answer (empty when none is recognisable)."""
    split = split_reasoning(turn)
    if split.has_reasoning and not split.visible.strip():
        return [
            "Everything in your last message was inside a reasoning block "
            "(<think>...</think>); reasoning is never read as a call or an answer, so "
            "write the call or the answer after the block."
        ]
    text = protocol_text(turn)
    reasons: list[str] = []
    names = [" ".join(m.group("name").replace("*", " ").split()) for m in _CALL_RE.finditer(text)]
    if names:
        reasons.append(
            f"You wrote `Expert {names[0]}:` but no instruction in triple quotes followed "
            'it, so nothing was sent: put the instruction between two lines of """.'
        )
    elif (same := _SAME_LINE_CALL_RE.search(text)) is not None:
        reasons.append(
            f"Your call to Expert {same.group(1).strip()} put the instruction on the same "
            "line as the name: end the line after the colon and start the triple-quoted "
            "instruction on the next line."
        )
    if _FAKE_OUTPUT_RE.search(text):
        reasons.append(
            "You wrote an expert's output yourself; experts answer only when you call "
            "them, and their replies come back in the next message."
        )
    if _ANSWER_WORDS_RE.search(text):
        reasons.append(
            'You wrote "final answer" but not as the marker: the answer counts only on '
            "a line that begins with >> FINAL ANSWER: followed by the answer in triple "
            "quotes."
        )
    return reasons


def nudge_with_reasons(nudge: str, turn: str) -> str:
    """The nudge, after the reasons this turn was not accepted (if any are known)."""
    reasons = why_not_accepted(turn)
    if not reasons:
        return nudge
    return "Your last message was not accepted. " + " ".join(reasons) + "\n\n" + nudge
