"""The diff screen's "cannot compare" line quotes the reader's error (paths, lines):
shown as text, visible, never markup."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import make_settings, wait_for

from conductor_kernel.text.display import UNSAFE
from tui.app import ConductorApp
from tui.screens.run_diff import RunDiffScreen

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_a_diff_of_a_missing_transcript_in_an_odd_path_says_so_as_text(
    tmp_path: Path,
) -> None:
    gone = tmp_path / "[" / "q]\x1b]52;c;cHduZWQ=\x07" / "run.jsonl"  # reads "[/q]..."
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(160, 40)) as pilot:
        app.push_screen(RunDiffScreen(gone, gone))
        await wait_for(pilot, lambda: isinstance(app.screen, RunDiffScreen))
        status = app.screen.query_one("#diff-status")
        await wait_for(pilot, lambda: "cannot compare" in str(status.render()))
        shown = str(status.render())
        assert "[/q]" in shown and not UNSAFE.search(shown), shown
