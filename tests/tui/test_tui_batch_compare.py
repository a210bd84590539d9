"""The Batch screen on a comparison of methods: one row per task item, one column per
method, each method's accuracy so far, and Enter on a cell opens that method's run."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import make_settings, wait_for

from conductor.cli import main as conductor_main
from conductor.methods import METHODS, label
from tui.app import ConductorApp
from tui.screens.run_detail import RunDetailScreen

pytestmark = pytest.mark.anyio


async def test_a_comparison_shows_a_column_per_method(shared_dir: Path) -> None:
    argv = [
        "batch", str(shared_dir / "tasks" / "GameOf24.jsonl"), "--methods", "all",
        "--replay-dir", str(shared_dir / "transcripts"), "--no-python", "--limit", "3", "--json",
    ]  # fmt: skip
    assert conductor_main(argv) == 0
    app = ConductorApp(make_settings(), start_mode="batch")
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: screen.query_one("#items").row_count == 3, timeout=30)
        table = screen.query_one("#items")
        assert [str(c.label) for c in table.columns.values()] == [
            "item",
            *(label(m) for m in METHODS),
        ]
        marks = {str(table.get_cell(row, m)) for row in table.rows for m in METHODS}
        assert marks <= {"✓", "✗"} and "✓" in marks
        summary = str(screen.query_one("#batch-summary").render())
        assert "21/21 done" in summary
        for method in METHODS:
            assert f"{label(method)} " in summary
        # The first item under meta-prompting with Python: that run opens.
        table.focus()
        table.move_cursor(row=0, column=len(METHODS))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        header = str(app.screen.query_one("#run-header").render())
        assert " · meta · " in header
