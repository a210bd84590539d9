"""The HTML diff says why a run is wrong, as the terminal's diff does (issue 36, item 13):
the page showed `wrong` alone."""

from __future__ import annotations

from conductor.export.diff import score_line
from conductor.export.html.diff_page import diff_html
from conductor_kernel.events import FinalAnswer, RunFinished, RunScored, RunStarted
from record.fold import outline
from transcripts.run_diff import diff_runs


def scored_run(run_id: str, answer: str, correct: bool, detail: str) -> list:
    return [
        RunStarted(run_id=run_id, question="Use 1 2 3 4 to make 24", task="GameOf24"),
        FinalAnswer(run_id=run_id, answer=answer),
        RunFinished(run_id=run_id, status="answered", duration_s=1.0),
        RunScored(run_id=run_id, correct=correct, scorer="game24", detail=detail),
    ]


def test_the_diff_page_gives_the_reason_beside_the_verdict() -> None:
    wrong = outline(scored_run("left", "1+2+3+4", False, "equals 10, not 24"))
    right = outline(scored_run("right", "1*2*3*4", True, "equals 24, uses each number once"))
    page = diff_html(diff_runs(wrong, right))
    assert "wrong (game24: equals 10, not 24)" in page
    assert "correct (game24: equals 24, uses each number once)" in page
    assert score_line(wrong) == "wrong (game24: equals 10, not 24)"
