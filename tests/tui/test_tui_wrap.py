"""Long text wraps inside the width: quoted expert instructions in a meta turn."""

from __future__ import annotations

import pytest
from textual.widgets.markdown import MarkdownFence
from tui_helpers import game24_expert, make_settings, scripted_factory, wait_for

from tui.app import ConductorApp

pytestmark = pytest.mark.anyio

LONG = " ".join(f"word{i}" for i in range(60)) + " THE-END"
TURNS = (
    f'Expert Mathematician:\n"""\n{LONG}\n"""',
    '>> FINAL ANSWER:\n"""\n24\n"""',
)


@pytest.mark.slow
async def test_a_long_instruction_wraps_inside_the_turn() -> None:
    app = ConductorApp(make_settings(), session_factory=scripted_factory(TURNS, game24_expert))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.query_one("#question").value = "Use 4 5 6 10 to make 24"
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.finished is not None)
        await pilot.pause(0.3)
        fence = screen.query(MarkdownFence).first()
        label = fence.query_one("#code-content")
        assert label.region.right <= fence.region.right  # nothing past the edge
        assert label.region.height >= 3  # the words wrapped onto several lines
        assert fence.max_scroll_x == 0
