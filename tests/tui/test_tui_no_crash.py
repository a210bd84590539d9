"""No screen may crash on any run: odd runs we generate and every published transcript.

Each run is opened in the run detail (as Enter on the Runs screen, ctrl+o or `--run`
do), stepped through, its raw JSON and export used, and each of its notes opened in
the Notebook screen. The Runs, Notebook and Batch screens are shown over all of them.
A crash fails the test: `run_test` re-raises what the app did not handle.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from odd_runs import write_odd_runs
from textual.app import App, ComposeResult
from tui_helpers import make_settings, wait_for

from record.home import runs_dir
from record.pages import TranscriptPages
from tui.app import ConductorApp
from tui.screens.run_detail import RunDetailScreen, header_text, note_rows
from tui.screens.runs import RunsScreen
from tui.widgets.run_view import RunView

pytestmark = pytest.mark.anyio


def _audit_done(screen: RunDetailScreen) -> bool:
    return screen.pages is None or screen.audit_finished


async def walk_run(app: ConductorApp, pilot, run: str) -> None:
    """Open `run` and use every part of the detail view, then come back."""
    app.open_run(run)
    await pilot.pause()
    screen = app.screen
    if not isinstance(screen, RunDetailScreen):
        return  # the run could not be opened: the app said so in a notification
    await wait_for(pilot, lambda: _audit_done(screen))
    for key in ("end", "home", "n", "p", "G", "g"):
        await pilot.press(key)
    await pilot.press("j")
    await pilot.pause()
    if app.screen is not screen:
        await pilot.press("escape")
    await pilot.press("e")
    notes = screen.query_one("#notes")
    for index in range(notes.option_count):
        option = notes.get_option_at_index(index)
        if option.disabled:
            continue
        notes.focus()
        notes.highlighted = index
        await pilot.press("enter")
        await pilot.pause()
        app.switch_mode("runs")
        await pilot.pause()
    while len(app.screen_stack) > 1:
        app.pop_screen()
    await pilot.pause()


@pytest.mark.slow
async def test_every_screen_survives_odd_runs() -> None:
    ids = write_odd_runs()
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        for run in ids:
            await walk_run(app, pilot, run)
        for mode in ("notebook", "batch", "solve", "runs"):
            app.switch_mode(mode)
            await pilot.pause(0.2)
    assert app.return_code in (None, 0)


@pytest.mark.slow
async def test_a_note_shown_and_merged_is_listed_once() -> None:
    write_odd_runs()
    app = ConductorApp(make_settings(), start_mode="runs", open_run="odd-shown-and-merged")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        notes = app.screen.query_one("#notes")
        labels = [str(notes.get_option_at_index(i).prompt) for i in range(notes.option_count)]
    assert len([label for label in labels if "n1" in label or "shared key" in label]) == 1
    assert any("shown" in label and "merged" in label for label in labels), labels
    assert len(labels) == 3  # n1, n2, n3


@pytest.mark.slow
async def test_every_published_transcript_opens_in_every_view(shared_dir: Path) -> None:
    """Every record of every published file, imported, and each raw file opened as is.

    Every page of every run is parsed and its header and notes built; every page of
    every tenth run (and of each raw file) is drawn in a view (drawing all 2,700 takes
    minutes here); the full detail-screen walk runs on a sample in the next test.
    """
    from transcripts.importer import import_file
    from transcripts.index import RunIndex

    index = RunIndex()
    raw: list[Path] = sorted((shared_dir / "transcripts").glob("*/*.jsonl"))
    app = ViewApp()
    pages_read = pages_drawn = runs_seen = 0
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(RunView)
        # with-python and without-python records share run ids: one folder at a time.
        for folder in sorted({p.parent for p in raw}):
            for path in sorted(folder.glob("*.jsonl")):
                import_file(path, index=index)
            paths = [*sorted(folder.glob("*.jsonl")), *sorted(runs_dir().glob("*.jsonl"))]
            runs_seen += len(paths)
            for number, path in enumerate(paths):
                pages = TranscriptPages.open(path)
                header_text(pages)
                note_rows(pages.run.recalls, pages.run.notes_written)
                for i in range(len(pages.pages)):
                    events = pages.events(i)
                    pages_read += 1
                    if number < 6 or number % 10 == 0:
                        await view.show(events)
                        pages_drawn += 1
        await pilot.pause()
    assert runs_seen >= 2712 and pages_read > 2700 and pages_drawn > 270


@pytest.mark.slow
async def test_a_sample_of_published_runs_walks_through_the_detail_screen(
    shared_dir: Path,
) -> None:
    from transcripts.importer import import_file
    from transcripts.index import RunIndex

    files = sorted((shared_dir / "transcripts").glob("*/*.jsonl"))
    index = RunIndex()
    sample: list[str] = []
    for path in files:
        ids = import_file(path, index=index).run_ids
        sample.append(ids[len(ids) // 2])
    app = ConductorApp(make_settings(), start_mode="runs")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen), timeout=60)
        for run in [str(files[0]), *sample]:
            await walk_run(app, pilot, run)
    assert app.return_code in (None, 0)


class ViewApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RunView()


class _Crashing(ConductorApp):
    def on_mount(self) -> None:
        raise RuntimeError("a bug in a screen")


def test_an_unhandled_error_exits_non_zero_with_a_short_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tui.cli import run_app

    assert run_app(_Crashing(make_settings()), headless=True) == 1
    err = capsys.readouterr().err
    assert "stopped on an unexpected error" in err
    assert "runs list" in err


def test_a_clean_quit_exits_zero() -> None:
    from tui.cli import run_app

    class Quitting(ConductorApp):
        def on_mount(self) -> None:
            self.exit()

    assert run_app(Quitting(make_settings()), headless=True) == 0
