"""The method from the palette: the next run asks the model that way, is recorded under
that method, and the notice says so."""

from __future__ import annotations

import pytest
from tui_helpers import make_settings, wait_for

from conductor_kernel.events import RunStarted
from record.reader import read_transcript
from transcripts.index import RunIndex
from tui.app import ConductorApp

pytestmark = pytest.mark.anyio


async def test_a_method_picked_in_the_palette_runs_and_is_recorded() -> None:
    app = ConductorApp(make_settings(recall=False, learn=False))  # the real build_session
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+p", *"Method: zero-shot-cot")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.settings.method == "zero-shot-cot")
        notice = app.screen.query_one("#notice")
        await wait_for(pilot, lambda: "Method: zero-shot-cot" in str(notice.render()))

        box = app.screen.query_one("#question")
        box.value = "Use 4 5 6 10 to make 24"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen.finished is not None, timeout=30)
        run_id = app.screen.finished.run_id
    row = RunIndex().get(run_id)
    assert row is not None and row["method"] == "zero-shot-cot"
    started = read_transcript(row["path"]).started
    assert isinstance(started, RunStarted) and started.method == "zero-shot-cot"
