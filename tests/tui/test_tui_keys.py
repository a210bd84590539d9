"""Keys a new user needs: all of them visible at 80 columns, a help screen, PageUp."""

from __future__ import annotations

import pytest
from textual.binding import Binding
from tui_helpers import GAME24_TURNS, game24_expert, make_settings, scripted_factory, wait_for

from tui.app import ConductorApp
from tui.screens.help import HelpScreen
from tui.widgets.key_bar import KeyBar

pytestmark = pytest.mark.anyio


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
@pytest.mark.parametrize("mode", ["solve", "runs", "notebook", "batch"])
async def test_every_shown_key_is_on_screen(mode: str, size: tuple[int, int]) -> None:
    app = ConductorApp(make_settings(), start_mode=mode)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.2)
        bar = app.screen.query_one(KeyBar)
        text = str(bar.render())
        lines = text.splitlines()
        assert all(len(line) <= bar.content_region.width for line in lines)
        assert bar.region.height == len(lines)  # every line of the bar is shown
        wanted = [b for b in [*type(app.screen).BINDINGS, *ConductorApp.BINDINGS] if b.show]
        for binding in wanted:
            assert binding.description in text, (binding.description, text)
        assert "palette" in text


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["solve", "runs", "notebook", "batch"])
async def test_help_lists_every_binding_of_the_screen_and_the_app(mode: str) -> None:
    app = ConductorApp(make_settings(), start_mode=mode)
    async with app.run_test(size=(80, 24)) as pilot:
        under = app.screen
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        table = app.screen._text()
        cells = " ".join(str(c) for column in table.columns for c in column._cells)
        for binding in [*type(under).BINDINGS, *ConductorApp.BINDINGS]:
            assert isinstance(binding, Binding)
            assert binding.description in cells and binding.tooltip in cells
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is under)


@pytest.mark.slow
async def test_help_is_in_the_palette() -> None:
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+p", *"Help")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))


@pytest.mark.slow
async def test_page_up_scrolls_the_run_while_the_question_has_focus() -> None:
    long_answer = "\n".join(f"line {i}" for i in range(200))
    turns = (GAME24_TURNS[0], f'>> FINAL ANSWER:\n"""\n{long_answer}\n"""')
    app = ConductorApp(make_settings(), session_factory=scripted_factory(turns, game24_expert))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        box = screen.query_one("#question")
        box.value = "Use 4 5 6 10 to make 24"
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.finished is not None)
        live = screen.query_one("#live")
        await wait_for(pilot, lambda: live.max_scroll_y > 0)
        live.scroll_end(animate=False)
        await pilot.pause()
        box.focus()
        bottom = live.scroll_y
        await pilot.press("pageup")
        await pilot.pause()
        assert live.scroll_y < bottom
        assert box.has_focus
