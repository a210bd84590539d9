"""Long inputs draw in bounded space (issue 24): a 21 KB question and 1 MB of expert
output leave the live view a screenful or two, and the run still reaches its status."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tui_helpers import make_settings, wait_for

from conductor_kernel.events import (
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    MetaTurnFinished,
    MetaTurnStarted,
    RunFinished,
    RunStarted,
)
from tui.app import ConductorApp
from tui.renderers import QUESTION_SHOWN, shown_question
from tui.screens.solve import SolveScreen

pytestmark = pytest.mark.anyio

WORDS = " ".join(f"word{n:04d}" for n in range(3000))[: 21 * 1024]  # 21 KB, ~2,400 words
MEGABYTE = ("x" * 99 + "\n") * (1024 * 1024 // 100)


def events(question: str, reply: str) -> list:
    run_id = "long-inputs"
    turn = MetaTurnStarted(run_id=run_id, round=1, user_message=question)
    call = ExpertCallStarted(
        run_id=run_id, parent_id=turn.id, round=1, name="Expert Writer", instruction="Write."
    )
    return [
        RunStarted(run_id=run_id, question=question, model="synthetic"),
        turn,
        MetaTurnFinished(run_id=run_id, parent_id=turn.id, round=1, text="Expert Writer: go"),
        call,
        ExpertCallFinished(run_id=run_id, parent_id=call.id, name="Expert Writer", text=reply),
        FinalAnswer(run_id=run_id, answer="done"),
        RunFinished(run_id=run_id, status="answered", final_answer="done", rounds=1),
    ]


@pytest.mark.parametrize(
    ("question", "reply"),
    [("Sort these words: " + WORDS, "fine"), ("1 2 3 4", MEGABYTE)],
    ids=["21kb-question", "1mb-expert-output"],
)
async def test_long_inputs_draw_in_bounded_lines(question: str, reply: str) -> None:
    app = ConductorApp(make_settings(), clock=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        for event in events(question, reply):
            screen.post_message(SolveScreen.EventArrived(event))
        await wait_for(pilot, lambda: screen.finished is not None)
        live = screen.query_one("#live")
        # Two screenfuls at most (the 21 KB question alone was about 250 lines).
        assert live.virtual_size.height <= 60, live.virtual_size.height


@settings(max_examples=200)
@given(st.text(max_size=4000))
def test_a_shown_question_is_whole_or_says_how_much_is_left(question: str) -> None:
    shown = shown_question(question)
    if len(question) <= QUESTION_SHOWN:
        assert shown == question
    else:
        assert shown.startswith(question[:QUESTION_SHOWN])
        assert f"{len(question) - QUESTION_SHOWN:,} more characters" in shown
        assert len(shown) < QUESTION_SHOWN + 200
