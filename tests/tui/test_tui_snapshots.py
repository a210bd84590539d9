"""Snapshots of each screen at 100x30 with fixed ids, times and durations.

Update with `make test-snapshot-update` after a deliberate change, and look at the
report (snapshot_report.html) before committing the new pictures.
"""

from __future__ import annotations

import pytest
from tui_helpers import (
    GAME24_TURNS,
    SORT_TURNS,
    fixed,
    game24_expert,
    make_settings,
    scripted_factory,
    sort_expert,
    wait_for,
)

from conductor_kernel.events import Event
from record.home import runs_dir
from record.reader import read_transcript
from record.writer import TranscriptWriter
from transcripts.index import RunIndex
from tui.app import ConductorApp
from tui.screens.solve import SolveScreen

SIZE = (100, 30)


def recorded(question: str, turns, experts, run_id: str, task: str) -> list[Event]:
    """A real scripted run, made deterministic and saved as a transcript in runs.db."""
    session = scripted_factory(turns, experts)(make_settings())
    session.index, session.runs_path = None, runs_dir() / "live"  # keep only the fixed copy
    try:
        live = [e for e in session.solve(question, task=task) if not e.transient]
    finally:
        session.sandbox.close()
    events = fixed(live, run_id=run_id)
    path = runs_dir() / f"{run_id}.jsonl"
    with TranscriptWriter(path) as writer:
        for event in events:
            writer.handle(event)
    RunIndex().add_transcript(path)
    return events


@pytest.fixture
def fixed_runs() -> dict[str, list[Event]]:
    return {
        "game24": recorded(
            "Use 4 5 6 10 to make 24",
            GAME24_TURNS,
            game24_expert,
            "20250101-120000-aaa111",
            "GameOf24",
        ),
        "sort": recorded(
            "Sort the words pear apple fig",
            SORT_TURNS,
            sort_expert,
            "20250101-120500-bbb222",
            "word_sorting",
        ),
    }


def test_solve_screen(snap_compare, fixed_runs) -> None:
    async def feed(pilot) -> None:
        screen = pilot.app.screen
        for event in fixed_runs["game24"]:
            screen.post_message(SolveScreen.EventArrived(event))
        await wait_for(pilot, lambda: screen.finished is not None)
        screen.query_one("#question").value = "Use 4 5 6 10 to make 24"
        screen.query_one("#live").focus()
        screen.query_one("#live").scroll_home(animate=False)
        await pilot.pause(0.2)

    app = ConductorApp(make_settings(), clock=lambda: 0.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=feed)


@pytest.mark.slow
def test_runs_screen(snap_compare, fixed_runs) -> None:
    async def loaded(pilot) -> None:
        screen = pilot.app.screen
        table = screen.query_one("#runs")
        await wait_for(pilot, lambda: table.row_count == 2)
        await wait_for(
            pilot, lambda: all(str(table.get_cell(k, "findings")) != "…" for k in table.row_keys())
        )

    app = ConductorApp(make_settings(), start_mode="runs")
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_run_detail_screen(snap_compare, fixed_runs) -> None:
    async def opened(pilot) -> None:
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "report", None) is not None)
        await pilot.press("n", "n")
        await pilot.pause(0.3)

    app = ConductorApp(make_settings(), open_run="20250101-120500-bbb222")
    assert snap_compare(app, terminal_size=SIZE, run_before=opened)


@pytest.mark.slow
def test_run_detail_at_80x24(snap_compare, fixed_runs) -> None:
    async def opened(pilot) -> None:
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "report", None) is not None)
        await pilot.press("end")
        await pilot.pause(0.3)

    app = ConductorApp(make_settings(), open_run="20250101-120000-aaa111")
    assert snap_compare(app, terminal_size=(80, 24), run_before=opened)


def test_fixed_runs_are_what_the_snapshots_show(fixed_runs) -> None:
    transcript = read_transcript(runs_dir() / "20250101-120000-aaa111.jsonl")
    assert transcript.finished.final_answer == "(4 + 5 * 6) - 10"
    assert all(e.ts >= 1_735_732_800.0 for e in transcript.events)


def test_batch_screen_before_any_batch(snap_compare) -> None:
    app = ConductorApp(make_settings(), start_mode="batch")
    assert snap_compare(app, terminal_size=SIZE)


def test_notebook_screen(snap_compare) -> None:
    from test_notebook_screen import seed_notebook

    seed_notebook("20250101-120000-aaa111")

    async def loaded(pilot) -> None:
        await wait_for(pilot, lambda: pilot.app.screen.query_one("#nb-notes").row_count == 3)
        await pilot.pause(0.2)

    app = ConductorApp(make_settings(), start_mode="notebook")
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


@pytest.mark.slow
def test_solve_screen_with_recall_and_experts_expanded(snap_compare, fixed_runs) -> None:
    from conductor_kernel.events import Recall
    from tui.widgets.blocks import SandboxBlock

    events = list(fixed_runs["game24"])
    note = {"id": "n0001", "key": "game of 24 search", "kind": "code", "score": 0.92, "rank": 1}
    events.insert(
        1,
        Recall(
            id="e9999",
            run_id=events[0].run_id,
            ts=events[0].ts,
            task_type="Game of 24",
            notes=[note],
        ),
    )

    async def feed(pilot) -> None:
        screen = pilot.app.screen
        for event in events:
            screen.post_message(SolveScreen.EventArrived(event))
        await wait_for(pilot, lambda: screen.finished is not None)
        screen.query_one("#live").focus()
        await pilot.press("ctrl+t")
        await pilot.pause(0.2)
        screen.query_one("#live").scroll_to_widget(
            screen.query_one(SandboxBlock), animate=False, top=True
        )
        await pilot.pause(0.2)

    app = ConductorApp(make_settings(), clock=lambda: 0.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=feed)
