"""Values shared by every scorer, and the paper's own answer extraction.

Each scorer module defines two pure functions:

* `ours(answer, item, env) -> Verdict`: our rule, given the final answer as
  `conductor_kernel.protocol.parse_final_answer` reads it;
* `paper(output, item, env) -> bool`: the published evaluation's rule, given the
  meta model's whole last turn, because the paper extracted the answer its own way
  (see `paper_answer`) and that extraction is part of its numbers.

plus `NEEDS_TARGET` (whether an item without a target can be scored at all).
"""

from __future__ import annotations

from dataclasses import dataclass

from conductor_kernel.events import MetaTurnFinished
from conductor_kernel.interfaces import Sandbox

PAPER_ANSWER_OPENER = '>> final answer:\n"""'
PAPER_PUNCTUATION = (",", ";", ":", ".", '"')


@dataclass(frozen=True)
class Verdict:
    """Our rule's decision on one answer, and why in a few words."""

    correct: bool
    detail: str


@dataclass(frozen=True)
class ScoreResult:
    """How one answer scored.

    `correct` is our rule; `paper_correct` the published rule on the same record
    (None when it could not be applied, e.g. no raw output). `scored` is False for an
    item without a target whose scorer needs one: such items count in no accuracy.
    """

    correct: bool
    detail: str
    paper_correct: bool | None = None
    scored: bool = True

    def to_dict(self) -> dict[str, object]:
        return {
            "correct": self.correct,
            "detail": self.detail,
            "paper_correct": self.paper_correct,
            "scored": self.scored,
        }


@dataclass(frozen=True)
class ScoringEnv:
    """What a scorer may need beyond the answer: a sandbox for code, its time limit."""

    sandbox: Sandbox | None = None
    timeout_s: float = 10.0


def paper_turn(turn: MetaTurnFinished) -> str:
    """What of a last meta turn the paper's rule reads: a text turn as written. A turn
    carried by tool calls or a grammar holds no `>> FINAL ANSWER`: empty, so the rule
    reads the answer as its harness would have written it (`paper_output_for`)."""
    return "" if turn.carrier else turn.text


def paper_answer(output: str, *, lowercase: bool = True, strip: bool = True) -> str:
    """The answer as the published evaluation read it.

    It lowercased the turn, kept what follows the LAST `>> final answer:` + newline +
    three quotes, cut at the next three quotes, and stripped. With no such opener the
    whole turn was taken (so a run that hit the round cap was scored on its last turn).
    """
    text = output.lower() if lowercase else output
    opener = PAPER_ANSWER_OPENER if lowercase else PAPER_ANSWER_OPENER.upper()
    after = text.rsplit(opener, 1)[-1]
    answer = after.split('"""', 1)[0]
    return answer.strip() if strip else answer


def paper_strip_punctuation(text: str) -> str:
    """The five marks the published evaluation deleted before comparing."""
    for mark in PAPER_PUNCTUATION:
        text = text.replace(mark, "")
    return text
