"""Scorers: is an answer right? Ours, and the published paper's rule beside it.

One module per scorer, each with pure `ours` and `paper` functions (see base.py);
`score()` runs both on one answer. Rules and every deviation from the paper are
documented in docs/scoring.md.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from conductor.scorer_table import REQUIRES, SCORERS, known_scorers
from conductor.scoring.base import ScoreResult, ScoringEnv, Verdict
from conductor.scoring.deps import MissingScorerDependency, require
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import BUILTIN, TaskSpec, UnknownTaskError, get_spec
from conductor_kernel.errors import UserFacingError
from conductor_kernel.interfaces import Sandbox

__all__ = [
    "REQUIRES",
    "SCORERS",
    "MissingScorerDependency",
    "ScoreResult",
    "ScoringEnv",
    "UnknownScorerError",
    "Verdict",
    "check_dependencies",
    "score",
]


class UnknownScorerError(UserFacingError):
    """A scorer name nobody registered."""


def scorer_module(name: str) -> ModuleType:
    if name not in SCORERS:
        raise UnknownScorerError(f"unknown scorer {name!r}; known scorers: {known_scorers()}")
    return importlib.import_module(SCORERS[name][0])


def _scorer_name(spec_or_name: TaskSpec | str) -> str:
    if not isinstance(spec_or_name, str):
        return spec_or_name.scorer
    if spec_or_name in SCORERS:
        return spec_or_name
    try:
        return get_spec(spec_or_name).scorer
    except UnknownTaskError:
        raise UnknownScorerError(
            f"{spec_or_name!r} is neither a scorer nor a task; known scorers: "
            f"{known_scorers()}; known tasks: {', '.join(BUILTIN)}"
        ) from None


def check_dependencies(spec_or_name: TaskSpec | str) -> None:
    """Raise `MissingScorerDependency` (with the pip command) if the scorer cannot run.

    Call it before scoring anything, so that no number is printed by a scorer that
    would have to guess.
    """
    name = _scorer_name(spec_or_name)
    require(name, REQUIRES.get(name, ()))


def paper_output_for(answer: str | None) -> str:
    """A last turn as the paper's harness wrote it, for when only the answer is known."""
    return "" if answer is None else f'>> FINAL ANSWER:\n"""\n{answer}\n"""'


def score(
    spec_or_name: TaskSpec | str,
    answer: str | None,
    item: TaskItem,
    *,
    output: str | None = None,
    sandbox: Sandbox | None = None,
    timeout_s: float = 10.0,
    with_paper: bool = True,
) -> ScoreResult:
    """Score one final answer (None: the run gave none) for `item`.

    `spec_or_name` is a TaskSpec, a task name or a scorer name. `output` is the meta
    model's whole last turn, which the paper's rule reads its own way; without it the
    paper's rule sees the answer as its harness would have written it.
    Raises `MissingScorerDependency` when the scorer's package is not installed, and
    `puzzles.NoSandboxError` for a P3 item without a working sandbox.
    """
    name = _scorer_name(spec_or_name)
    require(name, REQUIRES.get(name, ()))
    module = scorer_module(name)
    if module.NEEDS_TARGET and item.target is None:
        return ScoreResult(False, "no target: not scored", None, scored=False)
    # A checker that cannot read the item (a puzzle asked in a form it does not know)
    # leaves it unscored: judging anyway would count a right answer wrong.
    unreadable = getattr(module, "unreadable", None)
    reason = unreadable(item) if unreadable is not None else None
    if reason:
        return ScoreResult(False, f"not scored: {reason}", None, scored=False)
    env = ScoringEnv(sandbox=sandbox, timeout_s=timeout_s)
    if answer is None:
        verdict = Verdict(False, "no final answer")
    else:
        verdict = module.ours(answer, item, env)
    paper_correct = None
    if with_paper:
        paper_correct = bool(module.paper(output or paper_output_for(answer), item, env))
    return ScoreResult(verdict.correct, verdict.detail, paper_correct)
