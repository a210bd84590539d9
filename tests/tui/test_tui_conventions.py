"""The TUI's conventions, checked: bindings with ids and tooltips, a palette entry for
each, CSS only in .tcss files."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from tui_helpers import GAME24_TURNS, game24_expert, make_settings, record_run, wait_for

from record.home import home_dir
from tui.app import ConductorApp
from tui.commands import binding_entries
from tui.screens.batch import BatchScreen
from tui.screens.model import ModelScreen
from tui.screens.notebook import NotebookScreen
from tui.screens.raw_events import RawEventsScreen
from tui.screens.run_detail import RunDetailScreen
from tui.screens.runs import RunsScreen
from tui.screens.solve import SolveScreen
from tui.widgets.paged_table import PagedTable
from tui.widgets.round_list import RoundList

pytestmark = pytest.mark.anyio
TUI = Path(__file__).resolve().parents[2] / "tui"
OWNERS = (
    ConductorApp,
    SolveScreen,
    RunsScreen,
    RunDetailScreen,
    NotebookScreen,
    BatchScreen,
    RawEventsScreen,
    RoundList,
    ModelScreen,
    PagedTable,
)


@pytest.mark.parametrize("owner", OWNERS, ids=lambda o: o.__name__)
def test_every_binding_has_an_id_a_description_and_a_tooltip(owner) -> None:
    for binding in owner.BINDINGS:
        assert isinstance(binding, Binding), binding
        assert binding.id and binding.description and binding.tooltip, binding


def test_css_lives_in_tcss_files() -> None:
    for path in TUI.rglob("*.py"):
        text = path.read_text()
        assert "DEFAULT_CSS" not in text and "\n    CSS = " not in text, path
    assert (TUI / "app.tcss").is_file()


@pytest.mark.parametrize("mode", ["solve", "runs", "notebook", "batch"])
async def test_the_palette_lists_every_binding_of_the_screen_and_the_app(mode: str) -> None:
    app = ConductorApp(make_settings(), start_mode=mode)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        names = {entry.name for entry in binding_entries(app.screen)}
        wanted = {b.description for b in [*type(app.screen).BINDINGS, *ConductorApp.BINDINGS]}
        assert wanted <= names


@pytest.mark.slow
async def test_an_action_runs_from_the_palette() -> None:
    run_id = record_run("Use 4 5 6 10 to make 24", GAME24_TURNS, game24_expert)
    app = ConductorApp(make_settings(), open_run=run_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        await pilot.press("ctrl+p", *"Export")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: (home_dir() / "exports" / f"{run_id}.md").exists())
