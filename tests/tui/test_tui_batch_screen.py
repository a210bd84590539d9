"""Pilot test of the Batch screen: watch a real `conductor batch` (demo model) to its end."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from tui_helpers import make_settings, wait_for

from conductor.cli import main as conductor_main
from tui.app import ConductorApp
from tui.screens.run_detail import RunDetailScreen

pytestmark = pytest.mark.anyio

ITEMS = (
    '{"input": "4 5 6 10", "target": "24"}',
    '{"input": "1 2 3 4", "target": "24"}',
    '{"input": "2 3 4 8", "target": "24"}',
)


@pytest.mark.slow
async def test_watch_a_small_batch_to_its_end_and_open_an_item(tmp_path: Path) -> None:
    task_file = tmp_path / "game24.jsonl"
    task_file.write_text("\n".join(ITEMS) + "\n")
    argv = [
        "batch", str(task_file), "--task", "GameOf24", "--model", "demo",
        "--sandbox", "subprocess", "--concurrency", "1", "--json",
    ]  # fmt: skip
    exit_codes: list[int] = []
    app = ConductorApp(make_settings(), start_mode="batch")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert "No batch yet" in str(screen.query_one("#batch-summary").render())
        batch = threading.Thread(target=lambda: exit_codes.append(conductor_main(argv)))
        batch.start()
        await wait_for(pilot, lambda: screen.query_one("#batches").option_count == 1, timeout=30)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: screen.state == "finished", timeout=60)
        batch.join(30)
        assert exit_codes == [0]

        summary = str(screen.query_one("#batch-summary").render())
        assert "3/3 done" in summary and "accuracy so far 100.0% (3/3 scored)" in summary
        assert "ETA done" in summary
        table = screen.query_one("#items")
        assert table.row_count == 3
        assert {str(table.get_cell(k, "ok")) for k in table.rows} == {"✓"}

        table.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        assert "4 5 6 10" in str(app.screen.query_one("#run-header").render())


async def test_long_item_ids_that_share_a_prefix_are_shown_whole(tmp_path: Path) -> None:
    ids = [f"word_sorting-shared-prefix-item-{n:04d}" for n in (1, 2)]
    task_file = tmp_path / "word_sorting.jsonl"
    task_file.write_text(
        "".join(
            f'{{"id": "{i}", "input": "Sort the following words alphabetically: List: b a",'
            ' "target": "a b"}\n'
            for i in ids
        )
    )
    argv = ["batch", str(task_file), "--model", "demo", "--sandbox", "subprocess", "--json"]
    assert conductor_main(argv) == 0
    app = ConductorApp(make_settings(), start_mode="batch")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: screen.query_one("#items").row_count == 2, timeout=30)
        table = screen.query_one("#items")
        width = table.columns["item"].get_render_width(table)
        assert width >= max(len(i) for i in ids)


def test_a_resumed_enlarged_batch_counts_its_new_total_while_it_runs(tmp_path: Path) -> None:
    """The first session's report said 30; the second runs all 40 lines: 40 in scope
    while it runs, never "34/30 done · ETA done"."""
    import json

    from tui.screens.batch import batch_total

    task_file = tmp_path / "t.jsonl"
    task_file.write_text("".join(f'{{"input": "{n}"}}\n' for n in range(40)))
    (tmp_path / "report.json").write_text(json.dumps({"items": {"total": 30}}))
    first = {"started_at": 1.0, "limit": 30, "ended_at": 2.0}
    manifest = {"identity": {"task_file": str(task_file)}, "sessions": [first]}
    assert batch_total(tmp_path, manifest, 30) == 30
    manifest["sessions"] = [first, {"started_at": 3.0, "limit": None}]
    assert batch_total(tmp_path, manifest, 34) == 40
    manifest["sessions"][1]["ended_at"] = 9.0  # ended, and its own report written
    (tmp_path / "report.json").write_text(json.dumps({"items": {"total": 40}}))
    assert batch_total(tmp_path, manifest, 40) == 40
