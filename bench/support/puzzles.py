"""Game of 24 task files of any size for the benchmarks: the shared file's puzzles first,
then the same puzzles with their numbers in other orders (each as solvable as the one
it came from), then every other set of four numbers from 1 to 13."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "meta-prompting"
GAME_OF_24 = SHARED / "tasks" / "GameOf24.jsonl"


def _inputs(source: Path) -> Iterator[str]:
    puzzles = [json.loads(line)["input"].split() for line in source.open() if line.strip()]
    for order in range(24):
        for numbers in puzzles:
            yield " ".join(list(itertools.permutations(numbers))[order])
    for numbers in itertools.combinations_with_replacement(range(1, 14), 4):
        for shown in itertools.permutations(numbers):
            yield " ".join(map(str, shown))


def game_of_24_file(items: int, folder: Path, source: Path = GAME_OF_24) -> Path:
    """A task file of `items` distinct Game of 24 puzzles in `folder`."""
    rows: list[str] = []
    seen: set[str] = set()
    for shown in _inputs(source):
        if shown not in seen:
            seen.add(shown)
            rows.append(json.dumps({"input": shown, "target": "24"}) + "\n")
            if len(rows) == items:
                break
    path = folder / "GameOf24.jsonl"
    path.write_text("".join(rows))
    return path
