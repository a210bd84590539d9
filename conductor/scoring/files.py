"""Scoring published-format files by the paper's rule and ours side by side
(`conductor score` parses and prints; this scores; a batch's results are scored by
conductor/batch/scores.py into the same tallies).

A published file holds one record a line with `input`, `target` and `output` (the meta
model's last turn; the final answer is the triple-quoted text after `>> FINAL ANSWER:`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conductor.scoring import score
from conductor.scoring.base import ScoreResult, paper_turn
from conductor.tasks.files import OnError, Problem, TaskFileError, TaskItem, read_task_file
from conductor.tasks.specs import TaskSpec
from conductor_kernel.interfaces import Sandbox
from conductor_kernel.protocol import parse_final_answer


@dataclass
class Disagreement:
    item: TaskItem
    ours: bool
    paper: bool
    detail: str
    answer: str | None


@dataclass
class FileScore:
    """One file's tallies under both rules."""

    file: str
    task: str
    scorer: str
    n: int = 0
    ours_correct: int = 0
    paper_correct: int = 0
    no_answer: int = 0
    unscored: int = 0
    skipped_lines: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)
    method: str = ""  # a comparison's method, one tally each

    def count(
        self, item: TaskItem, answer: str | None, result: ScoreResult, *, disagrees: bool
    ) -> None:
        """One graded item (or one the scorer could not grade) on the tallies."""
        if not result.scored:
            self.unscored += 1
            return
        self.n += 1
        self.ours_correct += result.correct
        self.paper_correct += bool(result.paper_correct)
        self.no_answer += answer is None
        if disagrees:
            self.disagreements.append(
                Disagreement(
                    item, result.correct, bool(result.paper_correct), result.detail, answer
                )
            )

    def correct(self, rule: str) -> int:
        return self.paper_correct if rule == "paper" else self.ours_correct

    def accuracy(self, rule: str) -> float | None:
        return round(100.0 * self.correct(rule) / self.n, 2) if self.n else None

    def to_dict(self, rule: str) -> dict[str, Any]:
        return {
            "file": self.file,
            "task": self.task,
            "scorer": self.scorer,
            "rule": rule,
            "n": self.n,
            "correct": self.correct(rule),
            "accuracy": self.accuracy(rule),
            "paper_correct": self.paper_correct,
            "paper_accuracy": self.accuracy("paper"),
            "ours_correct": self.ours_correct,
            "ours_accuracy": self.accuracy("ours"),
            "no_answer": self.no_answer,
            "unscored": self.unscored,
            "disagreements": len(self.disagreements),
            "skipped_lines": self.skipped_lines,
            **({"method": self.method} if self.method else {}),
        }


def score_file(
    path: str | Path,
    spec: TaskSpec,
    *,
    sandbox: Sandbox | None = None,
    on_error: OnError = "stop",
) -> FileScore:
    task_file = read_task_file(path, on_error=on_error)
    tally = FileScore(file=str(path), task=spec.name, scorer=spec.scorer)
    tally.skipped_lines = len(task_file.problems)
    for item in task_file.items:
        output = item.metadata.get("output")
        if not isinstance(output, str):
            problem = Problem(str(path), item.line, "no `output` text (not a published run)")
            if on_error == "stop":
                raise TaskFileError(
                    f"{problem}. `conductor score` reads records with input, target and "
                    "output; fix the line or pass --on-bad-line skip."
                )
            tally.skipped_lines += 1
            continue
        # Published outputs: read with the marker their harness knew.
        answer, _closed = parse_final_answer(output, strict=True)
        result = score(spec, answer, item, output=output, sandbox=sandbox)
        # A published record without the paper's verdict counts as a disagreement.
        tally.count(item, answer, result, disagrees=result.correct != result.paper_correct)
    return tally


def last_meta_turn(transcript: Path) -> str | None:
    """The run's last meta turn, which the paper's rule reads (through the one reader and
    the one fold); None without one, or when the transcript cannot be read."""
    from record.fold import outline_file

    if not transcript.is_file():
        return None
    try:
        run = outline_file(transcript)
    except OSError:
        return None
    turns = [r.finished for r in run.rounds if r.finished is not None]
    return (paper_turn(turns[-1]) or None) if turns else None
