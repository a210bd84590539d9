"""Checkmate in one: the answer names one move, legal in the given game, that mates.

The input is the game so far in SAN with move numbers (`1. d4 d5 2. Nf3 ...`). Our rule
(python-chess, a dependency; without it the scorer refuses, see deps.py):

1. Replay the game. Read every move the answer writes, in order: SAN (`Rg5#`, `Qxe7+`,
   `O-O`, `e8=Q`; a lowercase piece letter other than `b` is read as the piece), UCI
   (`g2g5`) or long algebraic (`Rg1-g5`). Move numbers and results are not moves.
2. A bare square (`f7`) counts as a move only when it is a legal pawn move now and
   does not follow "to", "on", "from", "at", "the"... : otherwise it is a square named
   in prose ("the rook from g2 to g5").
3. The first of several moves named may repeat the game's last move
   (`31. Kf5 Rg5#`): it is dropped. Then the answer must name exactly one move (repeating it is fine): a
   continuation (`22. Rh1+ Bh3 23. Rxh3#`) or a list of candidates is not a mate in one.
4. That move must be legal now and checkmate. A mate other than the target counts too
   (on the published file every position has exactly one mating move: tested).

The paper accepted the target as a substring of the lowercased answer, cut before the
next move number when the answer contained it. docs/scoring.md lists where the two
rules part, case by case, on answers built from every position of the task file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from conductor.scoring import deps
from conductor.scoring.base import ScoringEnv, Verdict, paper_answer
from conductor.tasks.files import TaskItem

NEEDS_TARGET = False  # legality and mate decide
REQUIRES = ("chess",)
_MOVE_NUMBER = re.compile(r"^\d+\.(?:\.\.)?$")
_RESULTS = ("*", "1-0", "0-1", "1/2-1/2")
_MOVE = re.compile(
    r"(?<![\w-])(?:"
    r"[Oo0]-[Oo0](?:-[Oo0])?"  # castling
    r"|[KQRBNkqrn]?[a-h][1-8][-x][a-h][1-8](?:=?[QRBNqrbn])?"  # long algebraic
    r"|[a-h][1-8][a-h][1-8][qrbn]?"  # UCI
    r"|[KQRBNkqrn][a-h]?[1-8]?x?[a-h][1-8]"  # piece moves
    r"|[a-h](?:x[a-h])?[1-8](?:=?[QRBNqrbn])?"  # pawn moves and bare squares
    r")[+#]?[!?]*(?![\w-])"
)
_SQUARE = re.compile(r"^[a-h][1-8][+#]?$")
_PROSE_BEFORE = re.compile(r"\b(?:from|to|on|at|onto|square|the|of|via)\s+$", re.I)
_CASTLING = re.compile(r"^[oO0]-[oO0](?:-[oO0])?[+#]?$")


def _chess() -> Any:
    return deps.load("checkmate", "chess")


def position_after(moves: str, chess: Any | None = None) -> Any:
    """The board after the game in `moves`; ValueError naming the bad move."""
    chess = chess or _chess()
    board = chess.Board()
    for token in moves.split():
        if _MOVE_NUMBER.match(token) or token in _RESULTS:
            continue
        token = re.sub(r"^\d+\.(?:\.\.)?", "", token)  # "15.Qxe7" written without a space
        board.push_san(token)
    return board


def moves_in(answer: str) -> list[str]:
    """Every move-like token of the answer, in order (squares after "to", "on"... left out)."""
    found = []
    for m in _MOVE.finditer(answer):
        text = m.group(0).rstrip("!?")
        if _SQUARE.match(text) and _PROSE_BEFORE.search(answer[: m.start()]):
            continue
        found.append(text)
    return found


def _read(board: Any, text: str) -> Any | None:
    """The legal move `text` denotes in `board`, or None."""
    if _CASTLING.match(text):
        text = text.upper().replace("0", "O")
    elif text[:1] in "kqrn":
        text = text[0].upper() + text[1:]
    try:
        return board.parse_san(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class NamedMoves:
    """What an answer names: its distinct moves after the rules 1-3 (legal ones as moves)."""

    moves: list[Any]  # chess.Move for a legal move, the token's text for an illegal one
    texts: list[str]


def named_moves(answer: str, board: Any) -> NamedMoves:
    last_written: set[str] = set()  # the game's last move as SAN or UCI, +/# dropped
    if board.move_stack:
        before = board.copy()
        last = before.pop()
        last_written = {before.san(last).rstrip("+#"), last.uci()}
    texts = moves_in(answer)
    if len(texts) > 1 and texts[0].rstrip("+#").replace("0", "O") in last_written:
        texts = texts[1:]  # the game's last move, repeated before the answer
    seen: dict[Any, str] = {}
    for text in texts:
        move = _read(board, text)
        if move is None and _SQUARE.match(text):
            continue  # a square named in prose, not a move
        key = move if move is not None else text.rstrip("+#")
        seen.setdefault(key, text)
    return NamedMoves(list(seen), list(seen.values()))


def ours(answer: str, item: TaskItem, env: ScoringEnv) -> Verdict:
    chess = _chess()
    target = (item.target or "").strip()
    try:
        board = position_after(item.input, chess)
    except ValueError as exc:
        return Verdict(False, f"the input is not a playable game: {exc}")
    named = named_moves(answer, board)
    if not named.moves:
        return Verdict(False, f"names no move: {answer[:60]!r}")
    if len(named.moves) > 1:
        return Verdict(
            False,
            f"names {len(named.moves)} moves ({', '.join(named.texts)}); a mate in one is one",
        )
    (move,) = named.moves
    if not isinstance(move, chess.Move):
        return Verdict(False, f"{named.texts[0]} is not a legal move here")
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
