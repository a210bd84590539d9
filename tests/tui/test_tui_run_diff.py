"""Pilot tests of the two-run diff: mark two runs on the Runs screen, compare them."""

from __future__ import annotations

import pytest
from tui_helpers import GAME24_TURNS, game24_expert, make_settings, record_run, wait_for

from tui.app import ConductorApp
from tui.screens.run_diff import RunDiffScreen
from tui.screens.runs import RunsScreen

pytestmark = pytest.mark.anyio


def other_expert(name: str, instruction: str) -> str:
    if name == "Expert Python":
        return game24_expert(name, instruction)
    return "It does NOT equal 24, check again."


def screen_text(app) -> str:
    return "\n".join(
        "".join(segment.text for segment in strip)
        for strip in app.screen._compositor.render_strips()
    )


@pytest.mark.slow
async def test_mark_two_runs_and_see_the_one_changed_reply() -> None:
    first = record_run("Use 4 5 6 10 to make 24", GAME24_TURNS, game24_expert, task="GameOf24")
    second = record_run("Use 4 5 6 10 to make 24", GAME24_TURNS, other_expert, task="GameOf24")
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(140, 50)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await wait_for(pilot, lambda: screen.query_one("#runs").row_count == 2)
        await pilot.press("d")  # nothing marked: told what to do, no screen
        assert isinstance(app.screen, RunsScreen)
        await pilot.press("space", "down", "space")
        assert set(screen.marked) == {first, second}
        assert "marked for diff" in str(screen.query_one("#runs-info").render())
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, RunDiffScreen))
        diff_screen = app.screen
        await wait_for(pilot, lambda: diff_screen.diff is not None)
        await pilot.pause(0.2)
        assert [(c.name, f.name) for _, c, f in diff_screen.diff.changes] == [
            ("Expert Arithmetic Checker", "reply")
        ]
        text = screen_text(app)
        assert "1 difference ·" in text and "1 difference in" in text
        assert "Expert Arithmetic Checker: reply differs" in text
        await pilot.press("h")
        await wait_for(pilot, lambda: any((app_home() / "exports").glob("diff-*.html")))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))


def app_home():
    from record.home import home_dir

    return home_dir()
