"""The Solve screen over the table of run endings (equipment/run_endings.py), driven by
Pilot: under the run it says the status and the reason the run's fold holds, in the
words of record/ending.py, with the verdict once the answer is scored."""

from __future__ import annotations

import pytest
from tui_helpers import make_settings, wait_for

from equipment.run_endings import CASES, EndingCase, recorded_ending, session_for
from tui.app import ConductorApp
from tui.widgets.blocks import EventLine

pytestmark = pytest.mark.anyio


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
async def test_the_solve_screen_tells_each_ending(case: EndingCase) -> None:
    app = ConductorApp(make_settings(), session_factory=session_for(case))
    async with app.run_test(size=(100, 30)) as pilot:
        box = app.screen.query_one("#question")
        box.value = case.question
        box.focus()
        await pilot.press("enter")
        screen = app.screen
        await wait_for(pilot, lambda: screen.finished is not None and not screen.running)
        told = recorded_ending(screen.last_run_id)
        await wait_for(pilot, lambda: told.line() in _shown(screen))
        assert screen.finished.status == case.status
        assert told.headline == case.headline and case.said in told.line()


def _shown(screen) -> str:
    lines = screen.query(EventLine).filter(".ending")
    return " ".join(str(line.render()) for line in lines)
