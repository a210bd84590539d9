"""The Runs screen as an auditor uses it (issue 24): one line a run with a correctness
column, filtered and sorted by correctness and finding; a run's findings read whole."""

from __future__ import annotations

import pytest
from published_builder import retry_defect_record, sorting_record, write_file
from textual.widgets import Select
from tui_helpers import make_settings, wait_for

from conductor.scoring.runs import score_run
from record.home import home_dir
from transcripts.importer import import_file
from transcripts.index import RunIndex
from tui.app import ConductorApp
from tui.screens.findings import FindingsScreen
from tui.screens.run_detail import RunDetailScreen

pytestmark = pytest.mark.anyio

# (record, right?) -> the retry defect's meta model wrote Expert Python's reply: `fake`
SPECS = [(sorting_record, True), (retry_defect_record, False), (retry_defect_record, True)] * 4


def imported() -> list[str]:
    records = []
    for make, right in SPECS:
        record = make()
        if not right:
            record["target"] = "zebra " + record["target"]
        records.append(record)
    source = write_file(home_dir() / "word_sorting.jsonl", *records)
    return import_file(source, index=RunIndex(), score=score_run).run_ids


def keys(screen) -> list[str]:  # type: ignore[no-untyped-def]
    return screen.query_one("#runs").row_keys()


async def test_runs_are_one_line_each_and_filter_to_wrong_runs_with_a_finding() -> None:
    ids = imported()
    wrong_fake = {i for i, (make, right) in zip(ids, SPECS, strict=True) if not right}
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(keys(screen)) == len(ids))
        table = screen.query_one("#runs")
        # The header, then one line a run (the table was three lines a run): line y
        # of the table is run y's, its mark first.
        assert table.virtual_size.height == 1 + len(ids)
        for y, run_id in enumerate(keys(screen), start=1):
            line = table.render_line(y).text
            assert line.split()[0] == str(table.get_cell(run_id, "correct")), line
        marks = {k: str(table.get_cell(k, "correct")) for k in keys(screen)}
        assert {marks[i] for i in wrong_fake} == {"✗"}
        assert {m for k, m in marks.items() if k not in wrong_fake} == {"✓"}
        screen.query_one("#filter-correctness", Select).value = "wrong"
        screen.query_one("#filter-finding", Select).value = "fake"
        await wait_for(pilot, lambda: set(keys(screen)) == wrong_fake)
        assert all("fake" in str(table.get_cell(k, "findings")) for k in keys(screen))

        screen.query_one("#filter-correctness", Select).clear()
        screen.query_one("#filter-finding", Select).clear()
        screen.query_one("#sort", Select).value = "correctness"
        await wait_for(pilot, lambda: len(keys(screen)) == len(ids))
        order = [str(table.get_cell(k, "correct")) for k in keys(screen)]
        assert order == sorted(order, key=lambda m: {"✗": 0, "✓": 1}.get(m, 2))


async def test_every_finding_of_a_run_is_readable_whole_at_80_columns() -> None:
    ids = imported()
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(keys(app.screen)) == len(ids))
        app.open_run(ids[1])  # a wrong run with the fabricated reply
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        detail = app.screen
        await wait_for(pilot, lambda: detail.report is not None)
        assert "answer wrong" in str(detail.query_one("#run-header").render())
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FindingsScreen))
        await pilot.pause()
        text = app.screen.query_one("#findings-text")
        lines = text.render_lines(text.region.reset_offset)
        shown = " ".join("".join(segment.text for segment in line) for line in lines)
        assert detail.report is not None and len(detail.report.findings) >= 2
        flat = " ".join(shown.split())
        for finding in detail.report.findings:
            assert " ".join(finding.message.split()) in flat
        assert "answer wrong" in flat
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
