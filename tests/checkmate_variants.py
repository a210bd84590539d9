"""Answers built from every position of the CheckmateInOne task file, each with the verdict
it deserves, to find and check every case where our rule and the paper's part.

`python tests/checkmate_variants.py [TASK_FILE]` prints the table docs/scoring.md shows;
tests/conductor/scoring/test_checkmate_rule.py asserts it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess

from conductor.scoring.base import ScoringEnv
from conductor.scoring.checkmate import ours, paper_rule, position_after
from conductor.tasks.files import TaskItem
from support import meta_prompting_dir

TASK_FILE = meta_prompting_dir() / "tasks" / "CheckmateInOne.jsonl"


@dataclass(frozen=True)
class Case:
    kind: str
    answer: str
    deserves: bool  # the verdict a careful judge gives
    line: int


def _numbered(board: chess.Board, san: str) -> str:
    number = board.fullmove_number
    return f"{number}. {san}" if board.turn == chess.WHITE else f"{number}... {san}"


def cases(item: TaskItem, line: int) -> Iterator[Case]:
    board = position_after(item.input)
    target = item.target or ""
    mate = board.parse_san(target)
    uci = mate.uci()
    san_plain = target.rstrip("#+")
    yield Case("exact target", target, True, line)
    yield Case("no # suffix", san_plain, True, line)
    yield Case("+ instead of #", san_plain + "+", True, line)
    yield Case("UCI", uci, True, line)
    yield Case(
        "long algebraic",
        f"{target[0] if target[0] in 'KQRBN' else ''}{uci[:2]}-{uci[2:4]}#",
        True,
        line,
    )
    yield Case("with its move number", _numbered(board, target), True, line)
    last = board.pop()
    last_san = board.san(last)
    repeat = f"{_numbered(board, last_san)} {target}"
    board.push(last)
    yield Case("game's last move repeated first", repeat, True, line)
    if target[0] in "KQRN":
        yield Case("lowercase piece letter", target[0].lower() + target[1:], True, line)
    others = [m for m in board.legal_moves if m != mate]
    if others:
        other = board.san(others[0])
        yield Case("hedged: target or another move", f"{target} or {other}", False, line)
        # A continuation: another move first, a reply, then the target's text.
        board.push(others[0])
        replies = list(board.legal_moves)
        reply = board.san(replies[0]) if replies else ""
        board.pop()
        if reply:
            yield Case(
                "continuation ending in the target", f"{other} {reply} {target}", False, line
            )
        board.push(mate)
        yield Case("mate, then more moves", f"{target} {last_san} {other}", False, line)
        board.pop()
        yield Case("another legal move", other, False, line)


@dataclass
class Tally:
    n: int = 0
    deserved: int = 0
    paper: int = 0
    ours: int = 0
    disagree: int = 0
    ours_right_on_disagreement: int = 0
    example: str = ""


def tally(task_file: Path = TASK_FILE) -> dict[str, Tally]:
    rows: dict[str, Tally] = {}
    env = ScoringEnv()
    for line, raw in enumerate(task_file.read_text(encoding="utf-8").splitlines(), start=1):
        data: dict[str, Any] = json.loads(raw)
        item = TaskItem(id=str(line), input=data["input"], target=data["target"], line=line)
        for case in cases(item, line):
            t = rows.setdefault(case.kind, Tally())
            mine = ours(case.answer, item, env).correct
            theirs = paper_rule(case.answer.lower(), item.target or "", item.input)
            t.n += 1
            t.deserved += case.deserves
            t.ours += mine
            t.paper += theirs
            if mine != theirs:
                t.disagree += 1
                t.ours_right_on_disagreement += mine == case.deserves
                if not t.example:
                    t.example = f"line {line}: `{case.answer}` (target {item.target})"
    return rows


def markdown(rows: dict[str, Tally]) -> str:
    out = [
        "| answer built as | answers | deserve ✓ | paper ✓ | ours ✓ | rules differ | ours right there | example |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for kind, t in rows.items():
        out.append(
            f"| {kind} | {t.n} | {t.deserved} | {t.paper} | {t.ours} | {t.disagree} | "
            f"{t.ours_right_on_disagreement} | {t.example} |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else TASK_FILE
    print(markdown(tally(path)))
