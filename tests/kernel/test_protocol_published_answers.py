"""The looser final-answer family changes nothing the published runs' grammar recognised:
on every turn of every published run (meta-prompting and the baselines) an answer the
strict marker found is found unchanged, and on the meta-prompting runs no turn gains one
(the baselines' harness, which left bare "FINAL ANSWER:" turns unread, is read strictly
by the baselines and by `conductor score`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conductor_kernel.protocol import parse_final_answer, parse_turn
from record.published import read_published


def _turns(root: Path) -> Iterator[tuple[str, int, int, str]]:
    for path in sorted(root.rglob("*.jsonl")):
        for record in read_published(path).records:
            for turn in record.turns:
                yield str(path.relative_to(root)), record.line, turn.number, turn.text


@pytest.mark.slow
def test_nothing_the_published_grammar_recognised_changes(shared_dir: Path) -> None:
    root = shared_dir / "transcripts"
    seen = 0
    for where, line, number, text in _turns(root):
        seen += 1
        strict, _ = parse_final_answer(text, strict=True)
        loose = parse_turn(text).final_answer
        if strict is not None:
            assert loose == strict, f"{where}:{line} turn {number}"
        elif not where.startswith("baselines"):
            assert loose is None, f"{where}:{line} turn {number}: {loose!r}"
    assert seen > 10_000  # every folder was read
