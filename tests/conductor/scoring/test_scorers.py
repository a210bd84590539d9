"""Scorers: our rules, the paper's rules, and where they part (docs/scoring.md)."""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import pytest

from conductor.scoring import UnknownScorerError, game24, score
from conductor.scoring.numbers import find_numbers, parse_number
from conductor.tasks.files import TaskItem, read_task_file

GEOMETRY = (
    'This SVG path element <path d="M 1,1 L 2,2"/> draws a\nOptions:\n(A) circle\n'
    "(B) heptagon\n(C) hexagon\n(D) kite\n(E) line\n(F) octagon\n(G) pentagon\n"
    "(H) rectangle\n(I) sector\n(J) triangle"
)
# A position from CheckmateInOne.jsonl: black to move, Rg5# is the only mate.
CHESS_GAME = (
    "1. d4 d5 2. Nf3 Nf6 3. e3 a6 4. Nc3 e6 5. Bd3 h6 6. e4 dxe4 7. Bxe4 Nxe4 8. Nxe4 "
    "Bb4+ 9. c3 Ba5 10. Qa4+ Nc6 11. Ne5 Qd5 12. f3 O-O 13. Nxc6 bxc6 14. Bf4 Ra7 15. Qb3 "
    "Qb5 16. Qxb5 cxb5 17. a4 bxa4 18. Rxa4 Bb6 19. Kf2 Bd7 20. Ke3 Bxa4 21. Ra1 Bc2 "
    "22. c4 Bxe4 23. fxe4 c5 24. d5 exd5 25. exd5 Re8+ 26. Kf3 Rae7 27. Rxa6 Bc7 28. Bd2 "
    "Re2 29. Bc3 R8e3+ 30. Kg4 Rxg2+ 31. Kf5"
)
SONNET = """The harbour lamps grow quiet in the night,
and boats lie dreaming on the silver sea,
while far above the stars spill out their light
on sailors who have long since wandered free.
I walk the pier along the weathered stone,
past nets that smell of salt and summer grass,
and count the hours I have spent alone
to watch the patient tides of August pass.
Tomorrow brings the bustle of the day,
the gulls, the market voices and the rain,
but now the cares of living drift away
and I am young and unafraid again.
So let the little waves keep time and sing
of winters ending in a sudden spring."""
SONNET_REQUEST = (
    "Write a sonnet with strict rhyme scheme ABAB CDCD EFEF GG, containing each of the "
    'following words verbatim: "grass", "patient", and "market".'
)


def skip_or_fail(reason: str, require_var: str) -> None:
    """As tests/conftest.py's (imported by name it could be tests/tui's conftest)."""
    if os.environ.get(require_var) == "1":
        pytest.fail(f"{reason} (required because {require_var}=1)")
    pytest.skip(reason)


def item(task_input: str, target: str | None = None, **metadata: object) -> TaskItem:
    return TaskItem(id="t", input=task_input, target=target, metadata=dict(metadata))


def ours(task: str, answer: str, the_item: TaskItem) -> bool:
    return score(task, answer, the_item, with_paper=False).correct


def paper(task: str, answer: str, the_item: TaskItem) -> bool | None:
    return score(task, answer, the_item).paper_correct


# --- numbers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("70,000", 70000),
        ("70.000", 70000),
        ("276 000", 276000),
        ("7 425,00", 7425),
        ("7.425,00", 7425),
        ("$7,425.00", 7425),
        ("1,20,000", 120000),
        ("2,5", Fraction(5, 2)),
        ("106.12", Fraction(10612, 100)),
        ("0.250", Fraction(1, 4)),
        ("−50", -50),
        ("-11,520", -11520),
        ("১৮", 18),
        ("24.", 24),
    ],
)
def test_parse_number_reads_usual_notations(text: str, value: Fraction) -> None:
    assert parse_number(text) == value


def test_find_numbers_tells_hyphens_from_minus_and_reads_cjk_text() -> None:
    assert [n.value for n in find_numbers("a 4-hour trip, then -3")] == [4, -3]
    assert [n.value for n in find_numbers("每天下16颗蛋")] == [16]
    assert parse_number("24 apples") is None


# --- Game of 24 -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("(4 + 5 * 6) - 10", True),
        ("(10 - 4) * (6 - 5) * 4", False),  # uses 4 twice, not 5
        ("4 × (5 + 6 - 10) × 6", False),  # uses 6 twice
        ("(6 × 5 − 10) + 4", True),  # unicode operators
        ("(5 + 6 - 10) * 4 * 6 = 24", False),
        ("6 * 5 - 10 + 4 = 20 + 4 = 24", True),  # a worked chain after the expression
        ("`6*5-10+4`", True),
        ("-(4 - 5) * 6 * 10", False),  # unary minus is not allowed
        ("6 ** 1 * 5 - 10 + 4", False),
        ("4 + 5 + 6 + 10", False),  # 25
        ("The answer is 6*5-10+4", False),  # only the expression is accepted
    ],
)
def test_game24_ours(answer: str, correct: bool) -> None:
    assert ours("GameOf24", answer, item("4 5 6 10", "24")) is correct


def test_game24_is_exact_not_floating() -> None:
    assert ours("GameOf24", "8 / (3 - 8 / 3)", item("3 3 8 8", "24"))
    assert score("GameOf24", "6 / 0 + 4 * 5", item("0 4 5 6")).detail == "divides by zero"


def test_game24_paper_rule_quirks() -> None:
    puzzle = item("4 5 6 10", "24")
    # The paper kept what follows the first "is": such a sentence passes ...
    assert paper("GameOf24", "the answer is 6*5-10+4", puzzle) is True
    assert not ours("GameOf24", "the answer is 6*5-10+4", puzzle)
    # ... but a word containing "is" before the expression cut it away.
    assert paper("GameOf24", "this gives 6*5-10+4", puzzle) is False
    # ... and so does the extra unary minus ours refuses, since eval() accepts it (on six
    # numbers: an item that is not a four-number puzzle is not scored at all, so the rule
    # is asked directly).
    assert game24.paper_rule("-(4 - 5) * 6 * 10 / 10 * 4", "4 5 6 10 10 4") is True
    assert paper("GameOf24", "4 + 5 + 6 + 10", puzzle) is False
    # Its harness opener needed a newline before the quotes; without, the whole turn.
    raw = '>> FINAL ANSWER: """6*5-10+4"""'
    assert score("GameOf24", "6*5-10+4", puzzle, output=raw).paper_correct is False


# --- exact match ------------------------------------------------------------------


def test_exact_words_ignore_spacing_and_edge_punctuation() -> None:
    sorting = item("Sort: it&t barn", "barn it&t")
    assert ours("word_sorting", "barn  it&t", sorting)
    assert ours("word_sorting", "barn, it&t.", sorting)
    assert not ours("word_sorting", "it&t barn", sorting)
    assert paper("word_sorting", "barn  it&t", sorting) is False  # two spaces


def test_exact_numbers_compare_values() -> None:
    sums = item("((1 + 2) * -3840) =", "-11520")
    assert ours("multistep_arithmetic_two", "-11,520", sums)
    assert ours("multistep_arithmetic_two", "−11520", sums)
    assert not ours("multistep_arithmetic_two", "-1152.0", sums)
    # The paper deleted decimal points: -1152.0 "equals" -11520, 2.5 "equals" 25.
    assert paper("multistep_arithmetic_two", "-1152.0", sums) is True
    assert paper("multistep_arithmetic_two", "2.5", item("x", "25")) is True
    assert not ours("multistep_arithmetic_two", "2.5", item("x", "25"))


# --- numeric (MGSM) ---------------------------------------------------------------


def test_numeric_takes_the_first_number_not_given_in_the_question() -> None:
    question = item("A 30% discount applies to a $100 grooming service. Cost?", "70")
    assert ours("MGSM_ES", "The cost after the 30% discount is $70.", question)
    assert not ours("MGSM_ES", "It costs $7,000 after the 30% discount.", question)
    fabric = item("A robe takes 2 bolts of blue and half that of white. Total?", "3")
    assert ours("MGSM_FR", "3 rolls in total: 2 blue and 1 white.", fabric)


def test_numeric_is_stricter_and_fairer_than_substring() -> None:
    yards = item("Kelly ran 400 yards...", "80")
    assert paper("MGSM_FR", "Kelly ran 1280 yards more than Blake.", yards) is True
    assert not ours("MGSM_FR", "Kelly ran 1280 yards more than Blake.", yards)
    comma_target = item("Johnny picks up 1,125 and 1,000 Lego blocks...", "2,125")
    assert paper("MGSM_ES", "2125 Lego blocks", comma_target) is False
    assert ours("MGSM_ES", "2125 Lego blocks", comma_target)
    assert ours("MGSM_FR", "Judy gagne 7 425,00 $ par semaine.", item("...", "7425"))
    assert ours("MGSM_BN", "উত্তর ১৮", item("...", "18"))


# --- multiple choice --------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("(G) pentagon", True),
        ("The SVG path element represents a pentagon (G).", True),
        ("G", True),
        ("G (pentagon)", True),
        ("pentagon", True),
        ("(J) triangle\n(G) pentagon", False),
        ("(J) triangle", False),
        ("I think it is a pentagon or a kite", False),
        ("None of the options", False),
    ],
)
def test_choice_ours(answer: str, correct: bool) -> None:
    assert ours("geometric_shapes", answer, item(GEOMETRY, "(G)")) is correct


def test_choice_paper_needs_the_answer_to_start_with_the_target() -> None:
    assert paper("geometric_shapes", "(G) pentagon", item(GEOMETRY, "(G)")) is True
    assert paper("geometric_shapes", "a pentagon (G)", item(GEOMETRY, "(G)")) is False


# --- checkmate --------------------------------------------------------------------


def test_checkmate_needs_a_legal_mating_move() -> None:
    position = item(CHESS_GAME, "Rg5#")
    assert ours("CheckmateInOne", "Rg5#", position)
    assert ours("CheckmateInOne", "31... Rg5# (the rook seals the king)", position)
    assert ours("CheckmateInOne", "g2g5", position)  # UCI notation
    assert not ours("CheckmateInOne", "Rg1", position)  # legal, no mate
    assert not ours("CheckmateInOne", "Qh5#", position)  # not legal here
    assert not ours("CheckmateInOne", "Rg5# or Rg4+", position)  # hedging


def test_checkmate_paper_accepts_a_substring() -> None:
    position = item(CHESS_GAME, "Rg5#")
    assert paper("CheckmateInOne", "xRg5#y", position) is True
    assert ours("CheckmateInOne", "xRg5#y", position) is False


@pytest.mark.shared
def test_every_published_checkmate_position_has_exactly_its_target_as_mate(
    shared_dir: Path,
) -> None:
    import chess

    from conductor.scoring.checkmate import position_after

    items = read_task_file(shared_dir / "tasks" / "CheckmateInOne.jsonl").items
    assert len(items) == 250
    for task in items[::5]:  # all 250 hold too; a fifth keeps the suite quick
        board = position_after(task.input, chess)
        mates = []
        for move in list(board.legal_moves):
            san = board.san(move)
            board.push(move)
            if board.is_checkmate():
                mates.append(san)
            board.pop()
        assert mates == [task.target], task.id
        assert ours("CheckmateInOne", f"The mate is {task.target}.", task)


# --- sonnets ----------------------------------------------------------------------


def test_sonnet_ours_checks_lines_rhymes_and_words() -> None:
    request = item(SONNET_REQUEST, "ABAB CDCD EFEF GG, grass patient market")
    assert score("Sonnets-Standard", SONNET, request).correct
    titled = "**The Harbour**\n\n" + SONNET
    assert score("Sonnets-Standard", titled, request).correct
    no_words = item(SONNET_REQUEST.replace("market", "lantern"))
    result = score("Sonnets-Standard", SONNET, no_words)
    assert not result.correct and "missing lantern" in result.detail
    broken = SONNET.replace("free.", "gone.")
    result = score("Sonnets-Standard", broken, request)
    assert not result.correct and "'sea' (line 2) / 'gone' (line 4)" in result.detail
    short = "\n".join(SONNET.splitlines()[:12])
    assert "12 lines" in score("Sonnets-Standard", short, request).detail


def test_sonnet_paper_rule_ignores_words_and_checks_syllables() -> None:
    request = item(SONNET_REQUEST.replace("market", "lantern"))
    assert score("Sonnets-Standard", SONNET, request).paper_correct is True
    lines = SONNET.splitlines()
    lines[0] = "The night"  # far too short a line for a sonnet's metre
    lines[2] = "the light"
    assert score("Sonnets-Standard", "\n".join(lines), request).paper_correct is False


def test_spelling_fallback_rhymes_unknown_words() -> None:
    from conductor.scoring.rhyme import rhyme, spelling_key

    assert spelling_key("thrive") == spelling_key("zalive") == "ive"
    assert rhyme("florbday", "away")
    assert not rhyme("night", "night")


# --- P3 programming puzzles ---------------------------------------------------------


@pytest.fixture(scope="module")
def puzzle_sandbox():
    """bubblewrap or Docker; skip without either (fail under CONDUCTOR_REQUIRE_DOCKER=1)."""
    from conductor_kernel.interfaces import SandboxUnavailable
    from sandbox.registry import open_sandbox

    reasons = []
    for name in ("bwrap", "docker"):
        try:
            box = open_sandbox(name)
        except (SandboxUnavailable, ImportError) as exc:
            reasons.append(f"{name}: {exc}")
            continue
        if box.run("print(1)", timeout=20).stdout.strip() == "1":
            yield box
            box.close()
            return
        box.close()
        reasons.append(f"{name}: cannot run code")
    skip_or_fail("no sandbox: " + "; ".join(reasons), "CONDUCTOR_REQUIRE_DOCKER")


PUZZLE = item("def sat(li: List[int]):\n    return len(li) == 10 and li.count(li[3]) == 2")


def test_p3_without_a_sandbox_says_how_to_get_one() -> None:
    from conductor_kernel.errors import UserFacingError

    with pytest.raises(UserFacingError, match="--sandbox"):
        score("P3_Test", "def solution():\n    return [1]", PUZZLE)


@pytest.mark.slow
def test_p3_runs_answers_in_the_sandbox(puzzle_sandbox) -> None:
    good = "def solution():\n    return list(range(5)) * 2"
    result = score("P3_Test", good, PUZZLE, sandbox=puzzle_sandbox)
    assert result.correct and result.paper_correct
    fenced = f"Here it is:\n```python\n{good}\n```"
    assert score("P3_Test", fenced, PUZZLE, sandbox=puzzle_sandbox).correct
    wrong = "def solution():\n    return [0] * 10"
    result = score("P3_Test", wrong, PUZZLE, sandbox=puzzle_sandbox)
    assert not result.correct and result.detail == "sat returned no True"
    looping = "def solution():\n    while True: pass"
    result = score(
        "P3_Test", looping, PUZZLE, sandbox=puzzle_sandbox, timeout_s=1, with_paper=False
    )
    assert not result.correct and "timed out" in result.detail


@pytest.mark.slow
def test_p3_paper_rule_was_fooled_where_ours_is_not(puzzle_sandbox) -> None:
    own_sat = "def sat(li):\n    return True\n\ndef solution():\n    return []"
    result = score("P3_Test", own_sat, PUZZLE, sandbox=puzzle_sandbox)
    assert result.paper_correct is True and result.correct is False
    prints_true = "def solution():\n    print(True)\n    return []"
    result = score("P3_Test", prints_true, PUZZLE, sandbox=puzzle_sandbox)
    assert result.paper_correct is True and result.correct is False


@pytest.mark.slow
@pytest.mark.shared
def test_p3_reference_solutions_pass(shared_dir: Path, puzzle_sandbox) -> None:
    items = read_task_file(shared_dir / "tasks" / "P3_Test.jsonl").items
    sample = [t for t in items[::200] if t.metadata["sol_bodies"]]
    assert len(sample) >= 4
    for task in sample:
        header = task.metadata["sol_header"].replace("def sol(", "def solution(")
        answer = f"{header}\n{task.metadata['sol_bodies'][0]}"
        result = score("P3_Test", answer, task, sandbox=puzzle_sandbox)
        assert result.correct and result.paper_correct, (task.metadata["name"], result)


# --- the entry point ----------------------------------------------------------------


def test_score_without_target_is_unscored_and_no_answer_is_wrong() -> None:
    result = score("word_sorting", "a b", item("Sort: b a"))
    assert (result.scored, result.correct, result.paper_correct) == (False, False, None)
    result = score("word_sorting", None, item("Sort: b a", "a b"))
    assert result.scored and not result.correct and result.detail == "no final answer"


def test_score_accepts_a_scorer_name_and_rejects_unknown_ones() -> None:
    assert score("exact", "a b", item("Sort: b a", "a b")).correct
    with pytest.raises(UnknownScorerError, match="known scorers: game24"):
        score("fuzzy", "a", item("x", "a"))
