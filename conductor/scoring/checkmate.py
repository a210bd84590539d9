"""Checkmate in one: the answer's move must be legal in the given game and mate.

The input is the game so far in SAN with move numbers (`1. d4 d5 2. Nf3 ...`).
With python-chess (the `chess` package, extra `scorers`) our rule replays it, reads
every move written in the answer (SAN like `Rg5#`, `Qxe7+`, `O-O`, or UCI like
`g2g5`), keeps those legal in the position, and requires exactly one distinct legal
move that checkmates. A different mating move than the target also counts: the task
asks for a mate, and on the published file every position has exactly one (checked
in the tests). Without python-chess we fall back to the target move as a whole token
of the answer (not a substring: `Re8#` is not found in `Ree8#`).

The paper accepted the target as a substring of the answer, cut before the next move
number when the answer contained it (to skip a continuation written after the mate).
"""

from __future__ import annotations

import re
from typing import Any

from conductor.scoring.base import ScoringEnv, Verdict, paper_answer
from conductor.taskfile import TaskItem

NEEDS_TARGET = False  # legality and mate decide; the target is only a fallback
_MOVE_NUMBER = re.compile(r"^\d+\.(?:\.\.)?$")
_SAN = re.compile(
    r"(?<![\w-])(?:O-O(?:-O)?|0-0(?:-0)?|[KQRBN][a-h]?[1-8]?x?[a-h][1-8]"
    r"|[a-h](?:x[a-h])?[1-8](?:=?[QRBN])?|[a-h][1-8][a-h][1-8][qrbn]?)[+#]?(?![\w-])"
)


def _chess() -> Any | None:
    try:
        import chess
    except ImportError:
        return None
    return chess


def position_after(moves: str, chess: Any) -> Any:
    """The board after the game in `moves`; ValueError naming the bad move."""
    board = chess.Board()
    for token in moves.split():
        if _MOVE_NUMBER.match(token) or token in ("*", "1-0", "0-1", "1/2-1/2"):
            continue
        token = re.sub(r"^\d+\.(?:\.\.)?", "", token)  # "15.Qxe7" written without a space
        board.push_san(token)
    return board


def moves_in(answer: str) -> list[str]:
    return [m.group(0) for m in _SAN.finditer(answer)]


def _legal(board: Any, text: str, chess: Any) -> Any | None:
    text = text.replace("0", "O") if text.startswith("0-0") else text
    try:
        return board.parse_san(text)
    except ValueError:
        pass
    try:
        move = chess.Move.from_uci(text.rstrip("+#"))
    except ValueError:
        return None
    return move if move in board.legal_moves else None


def _token_match(answer: str, target: str) -> Verdict:
    if target and target in moves_in(answer):
        return Verdict(True, f"names {target} (python-chess absent: legality not checked)")
    return Verdict(False, f"does not name {target} (python-chess absent: install `chess`)")


def ours(answer: str, item: TaskItem, env: ScoringEnv) -> Verdict:
    target = (item.target or "").strip()
    chess = _chess()
    if chess is None:
        return _token_match(answer, target)
    try:
        board = position_after(item.input, chess)
    except ValueError as exc:
        return Verdict(False, f"the input is not a playable game: {exc}")
    legal = {}
    for text in moves_in(answer):
        move = _legal(board, text, chess)
        if move is not None:
            legal[move] = text
    if not legal:
        return Verdict(False, f"names no legal move: {answer[:60]!r}")
    if len(legal) > 1:
        return Verdict(False, f"names several legal moves: {', '.join(legal.values())}")
    (move,) = legal
    san = board.san(move)
    board.push(move)
    if not board.is_checkmate():
        return Verdict(False, f"{san} is legal but does not mate")
    alternative = "" if not target or san == target else f" (target {target}; also mates)"
    return Verdict(True, f"{san} mates{alternative}")


def paper_rule(answer: str, target: str, game: str) -> bool:
    """The published check on an already extracted (lowercased) answer."""
    target = target.lower()
    pieces = game.split(".")
    if len(pieces) < 2:
        return target in answer
    try:
        next_number = str(int(pieces[-2].split(" ")[-1].strip()) + 1)
    except ValueError:
        return False  # the published code raised here; it never happened on its data
    if next_number in answer:
        answer = answer.split(next_number)[0].strip()
    return target in answer


def paper(output: str, item: TaskItem, env: ScoringEnv) -> bool:
    return paper_rule(paper_answer(output), item.target or "", item.input)
