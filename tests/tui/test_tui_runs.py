"""Pilot tests of the Runs screen and the run detail: search, open, step, audit, export."""

from __future__ import annotations

import json
import sqlite3

import pytest
from tui_helpers import (
    GAME24_TURNS,
    SORT_TURNS,
    game24_expert,
    make_settings,
    record_run,
    sort_expert,
    wait_for,
)

from record.home import home_dir
from tui.app import ConductorApp
from tui.screens.raw_events import RawEventsScreen
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.blocks import BoxedText, TurnBlock

pytestmark = pytest.mark.anyio


@pytest.fixture
def two_runs() -> dict[str, str]:
    return {
        "game24": record_run(
            "Use 4 5 6 10 to make 24", GAME24_TURNS, game24_expert, task="GameOf24"
        ),
        "sort": record_run(
            "Sort the words pear apple fig", SORT_TURNS, sort_expert, task="word_sorting"
        ),
    }


def table_keys(screen) -> list[str]:
    return screen.query_one("#runs").row_keys()


def cell(screen, run_id: str, column: str) -> str:
    return str(screen.query_one("#runs").get_cell(run_id, column))


async def test_search_filter_and_open_a_run(two_runs: dict[str, str]) -> None:
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(table_keys(screen)) == 2)
        # Findings badges are computed from the transcripts in the background.
        await wait_for(pilot, lambda: cell(screen, two_runs["sort"], "findings") != "…")
        assert "ctx" in cell(screen, two_runs["sort"], "findings")
        assert cell(screen, two_runs["game24"], "findings") == "-"

        search = screen.query_one("#search")
        search.focus()
        await pilot.press(*"pear", "enter")
        await wait_for(pilot, lambda: table_keys(screen) == [two_runs["sort"]])

        await pilot.press("ctrl+l")  # clear the search and filters
        await wait_for(pilot, lambda: len(table_keys(screen)) == 2)
        screen.query_one("#filter-task").value = "GameOf24"
        await wait_for(pilot, lambda: table_keys(screen) == [two_runs["game24"]])

        screen.query_one("#runs").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        assert "Use 4 5 6 10" in str(app.screen.query_one("#run-header").render())


@pytest.mark.slow
async def test_bad_date_filter_says_how_to_write_it(two_runs: dict[str, str]) -> None:
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        since = app.screen.query_one("#filter-since")
        since.focus()
        await pilot.press(*"31/01/2025", "enter")
        await pilot.pause(0.2)
        assert any("YYYY-MM-DD" in n.message for n in app._notifications)
        since.value = "2000-01-01"
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(table_keys(app.screen)) == 2)


@pytest.mark.slow
async def test_search_words_and_a_filter_narrow_together(two_runs: dict[str, str]) -> None:
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(table_keys(screen)) == 2)
        screen.query_one("#filter-task").value = "word_sorting"
        await wait_for(pilot, lambda: table_keys(screen) == [two_runs["sort"]])
        screen.query_one("#search").focus()
        await pilot.press(*"pear", "enter")
        await pilot.pause(0.2)
        assert table_keys(screen) == [two_runs["sort"]]
        screen.query_one("#filter-task").value = "GameOf24"  # the words are not in that run
        await wait_for(pilot, lambda: table_keys(screen) == [])


class _LockedConnection:
    """Every statement finds runs.db locked, as SQLite says once its busy wait runs out."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, *args: object) -> sqlite3.Cursor:
        raise sqlite3.OperationalError("database is locked")

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


async def test_a_locked_runs_db_is_a_notification_and_the_screen_stays(
    two_runs: dict[str, str],
) -> None:
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(table_keys(screen)) == 2)
        real = screen.index.conn
        screen.index.conn = _LockedConnection(real)
        await pilot.press("ctrl+r")
        await wait_for(
            pilot, lambda: any("locked by another program" in n.message for n in app._notifications)
        )
        assert len(table_keys(screen)) == 2  # the rows shown before stay
        screen.index.conn = real
        await pilot.press("ctrl+r")
        await pilot.pause(0.2)
        assert len(table_keys(screen)) == 2


@pytest.mark.slow
async def test_step_through_rounds_raw_json_findings_and_export(two_runs: dict[str, str]) -> None:
    app = ConductorApp(make_settings(), open_run=two_runs["sort"])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        detail = app.screen
        page = detail.query_one("#page")

        def shown_round() -> int | None:
            turns = page.query(TurnBlock)
            return turns.first().round_no if turns else None

        assert [p.label for p in detail.pages.pages] == [
            "start",
            "round 1 · 1 exp",
            "round 2 · 1 exp",
            "round 3 · answer",
        ]
        await pilot.press("n")
        await wait_for(pilot, lambda: shown_round() == 1)
        await pilot.press("n")
        await wait_for(pilot, lambda: shown_round() == 2)
        await pilot.press("p")
        await wait_for(pilot, lambda: shown_round() == 1)
        await pilot.press("end")
        await wait_for(pilot, lambda: shown_round() == 3)
        assert "apple fig pear" in str(page.query_one(".final", BoxedText).render())
        assert len(page.query(TurnBlock)) == 1  # only the shown round is drawn
        await pilot.press("home")
        await wait_for(pilot, lambda: shown_round() is None and detail.current == 0)
        await pilot.press("p")  # already at the start: stays there
        assert detail.current == 0

        # Findings: the instruction leaning on "the above"; choosing it shows its round.
        await wait_for(pilot, lambda: detail.report is not None)
        kinds = [f.kind for f in detail.report.findings]
        assert "hidden_context" in kinds
        findings = detail.query_one("#findings")
        findings.focus()
        findings.highlighted = kinds.index("hidden_context")
        await pilot.press("enter")
        await wait_for(pilot, lambda: shown_round() == 2)

        # Raw JSON of any event of the shown round.
        await pilot.press("j")
        await wait_for(pilot, lambda: isinstance(app.screen, RawEventsScreen))
        raw = app.screen
        await wait_for(pilot, lambda: hasattr(raw, "shown"))
        assert raw.shown["kind"] == "meta_turn_started" and raw.shown["round"] == 2
        raw.query_one("#raw-list").highlighted = 2
        await pilot.pause(0.1)
        assert raw.shown["kind"] == "expert_call_started"
        assert json.loads(json.dumps(raw.shown))["instruction"] == "Check the above list once more."
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is detail)

        await pilot.press("e")
        await wait_for(pilot, lambda: detail.exported is not None)
        assert detail.exported == home_dir() / "exports" / f"{two_runs['sort']}.md"
        text = detail.exported.read_text()
        assert "## Final answer" in text and "apple fig pear" in text
        assert "Check the above list once more." in text

        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is not detail)
        assert app.current_mode == "runs"


async def test_opening_an_unknown_run_says_so() -> None:
    app = ConductorApp(make_settings(), open_run="no-such-run")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        assert not isinstance(app.screen, RunDetailScreen)
        assert any("no run matches" in n.message for n in app._notifications)


async def test_imported_published_runs_open_and_show_their_findings(shared_dir) -> None:
    from transcripts.importer import import_file

    report = import_file(shared_dir / "transcripts/with-python/word_sorting.jsonl", limit=3)
    assert report.imported == 3
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(table_keys(screen)) == 3)
        run_id = report.run_ids[0]
        await wait_for(pilot, lambda: cell(screen, run_id, "findings") != "…")
        assert cell(screen, run_id, "task") == "word_sorting"
        app.open_run(run_id)
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        detail = app.screen
        await pilot.press("end")
        await wait_for(pilot, lambda: detail.query_one("#page").query(".final"))
        await wait_for(pilot, lambda: detail.report is not None)
        assert detail.report.run_id == run_id
