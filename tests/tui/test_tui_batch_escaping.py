"""The Batch screen's items table shows item ids (from a task file) and answers (from a
model) as text: a `[/x]` cannot crash it, an escape cannot reach the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tui_helpers import make_settings, wait_for

from conductor.cli import main as conductor_main
from conductor_kernel.text.display import UNSAFE
from tui.app import ConductorApp

pytestmark = pytest.mark.anyio


def _screen(app: ConductorApp) -> str:
    strips = app.screen._compositor.render_strips()
    return "".join(segment.text for strip in strips for segment in strip)


@pytest.mark.slow
async def test_item_ids_and_answers_are_shown_inert(tmp_path: Path) -> None:
    task_file = tmp_path / "game24.jsonl"
    items = [
        {"id": "[/x]\x1b]52;c;cHduZWQ=\x07a", "input": "4 5 6 10", "target": "24"},
        {"id": "[bold]b\u202e", "input": "1 2 3 4", "target": "24"},
    ]
    task_file.write_text("".join(json.dumps(item) + "\n" for item in items))
    argv = ["batch", str(task_file), "--task", "GameOf24", "--model", "demo"]
    argv += ["--sandbox", "subprocess", "--concurrency", "1", "--json"]
    assert conductor_main(argv) == 0
    app = ConductorApp(make_settings(), start_mode="batch")
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: app.screen.query_one("#batches").option_count == 1)
        await wait_for(pilot, lambda: app.screen.query_one("#items").row_count == 2, timeout=30)
        await pilot.pause(0.3)
        shown = _screen(app)
        assert not UNSAFE.search(shown), shown
        assert "[/x]" in shown and "[bold]b" in shown
