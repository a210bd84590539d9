"""Checkmate in one: our rule against the paper's on answers built from every position."""

from __future__ import annotations

from pathlib import Path

import pytest

from conductor.scoring import score
from conductor.tasks.files import TaskItem
from tests.checkmate_variants import tally

GAME = "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6"  # white mates with Qxf7#


def ours(answer: str) -> bool:
    return score("checkmate", answer, TaskItem(id="t", input=GAME, target="Qxf7#")).correct


@pytest.mark.parametrize(
    ("answer", "right"),
    [
        ("Qxf7#", True),
        ("Qxf7", True),  # the move, without its mark
        ("4. Qxf7#", True),
        ("3... Nf6 4. Qxf7#", True),  # the game's last move repeated first
        ("The queen takes on f7: Qxf7#.", True),  # a square in prose is not a move
        ("h5f7", True),
        ("Qxf7# Ke7 Qxe7", False),  # mate, then a continuation
        ("Bxf7+ Ke7 Qxf7#", False),  # a continuation of the side to move
        ("Qxf7# or Bxf7+", False),  # two candidates
        ("Bxf7+", False),  # legal, no mate
        ("Qxf8#", False),  # not legal
        ("", False),
    ],
)
def test_one_move_that_mates(answer: str, right: bool) -> None:
    assert ours(answer) is right


@pytest.mark.slow
@pytest.mark.shared
def test_every_disagreement_with_the_paper_goes_the_way_it_deserves(shared_dir: Path) -> None:
    rows = tally(shared_dir / "tasks" / "CheckmateInOne.jsonl")
    for kind, t in rows.items():
        assert t.ours == t.deserved, kind  # ours is right on every built answer
        assert t.ours_right_on_disagreement == t.disagree, kind
    differ = {kind: t.disagree for kind, t in rows.items() if t.disagree}
    # the list docs/scoring.md gives
    assert differ == {
        "no # suffix": 250,
        "+ instead of #": 250,
        "UCI": 250,
        "long algebraic": 250,
        "game's last move repeated first": 1,
        "hedged: target or another move": 250,
        "continuation ending in the target": 248,
        "mate, then more moves": 250,
    }
