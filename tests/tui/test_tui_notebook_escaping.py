"""The Notebook screen's type list and notes table show what models wrote (task type
names, note keys and texts) as text: control characters visible, markup never parsed
(a `[/x]` in a type name would crash the app)."""

from __future__ import annotations

import sqlite3

import pytest
from test_notebook_screen import seed_notebook
from tui_helpers import make_settings, wait_for

from conductor_kernel.text.display import UNSAFE
from lessons.storage.store import default_path
from tui.app import ConductorApp
from tui.screens.notebook import NotebookScreen

pytestmark = pytest.mark.anyio

HOSTILE = "[/x] [bold]b[/] \x1b]52;c;cHduZWQ=\x07\u202e"


def _screen(app: ConductorApp) -> str:
    strips = app.screen._compositor.render_strips()
    return "".join(segment.text for strip in strips for segment in strip)


@pytest.mark.slow
async def test_model_text_in_the_notebook_screen_is_shown_inert() -> None:
    seed_notebook(None)
    with sqlite3.connect(default_path()) as db:
        db.execute("update task_types set name = ? || name", (HOSTILE,))
        db.execute("update notes set key = ? || key, text = ? || text", (HOSTILE, HOSTILE))
    app = ConductorApp(make_settings(), start_mode="notebook")
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, NotebookScreen))
        await wait_for(pilot, lambda: "[/x]" in _screen(app))
        shown = _screen(app)
        assert not UNSAFE.search(shown), shown
        assert "\\x1b]52;c;cHduZWQ" in shown
