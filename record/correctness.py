"""Whether a run's answer is right, as one value every reader shows the same way.

A run is scored when it ends and when it is imported (a `RunScored` event after its
`RunFinished`); a batch's runs also carry the batch's score in `RunFinished.score`.
`Correctness` reads either, so the listings, the audit, the diff, the TUI and the HTML
say "correct", "wrong" or "unscored" from one field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a type only: the run filters' flags import this module
    from conductor_kernel.events import RunScored

# The labels, also the values `runs list --correctness` and the TUI filter take.
CORRECT, WRONG, UNSCORED = "correct", "wrong", "unscored"
LABELS = (CORRECT, WRONG, UNSCORED)
# One character for narrow columns, the same in every listing: ✓ right, ✗ wrong, · unscored.
MARKS = {CORRECT: "✓", WRONG: "✗", UNSCORED: "·"}


def label_of(correct: object) -> str:
    """The label of a verdict as stored: true (runs.db's 1) correct, false wrong, None
    unscored."""
    if correct is None:
        return UNSCORED
    return CORRECT if correct else WRONG


@dataclass(frozen=True)
class Correctness:
    correct: bool | None = None  # None: not scored
    scorer: str = ""
    detail: str = ""
    paper_correct: bool | None = None

    @property
    def label(self) -> str:
        return label_of(self.correct)

    @property
    def mark(self) -> str:
        """One character for narrow columns: ✓ right, ✗ wrong, · unscored."""
        return MARKS[self.label]

    def describe(self) -> str:
        """`wrong (game24: does not use the numbers 1 2 3 4)`, or `unscored (why)`."""
        why = ": ".join(part for part in (self.scorer, self.detail) if part)
        return f"{self.label} ({why})" if why else self.label

    def to_dict(self) -> dict[str, Any]:
        """The shape of a batch's score (`ScoreResult.to_dict`), plus the scorer."""
        return {
            "correct": bool(self.correct),
            "detail": self.detail,
            "paper_correct": self.paper_correct,
            "scored": self.correct is not None,
            "scorer": self.scorer,
        }

    @classmethod
    def of_event(cls, event: RunScored) -> Correctness:
        return cls(event.correct, event.scorer, event.detail, event.paper_correct)

    @classmethod
    def of_score(cls, score: dict[str, Any] | None) -> Correctness:
        """From a score dict (a batch's `RunFinished.score`); unscored if it holds none."""
        if not score or "correct" not in score or score.get("scored") is False:
            detail = str(score.get("detail", "")) if score else ""
            return cls(None, str(score.get("scorer", "")) if score else "", detail)
        return cls(
            bool(score["correct"]),
            str(score.get("scorer", "")),
            str(score.get("detail", "")),
            score.get("paper_correct"),
        )
