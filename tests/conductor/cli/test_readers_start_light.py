"""The commands that only read runs.db or notebook.db start without what they do not
use: no sqlite-utils (it imports click, dateutil and numpy where installed, 120 ms or
more on every start), no session, and for the runs no settings machinery. What each
imports is measured, not how long it takes (the machine's load moves seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import modules_imported_by

# Imported by none of the readers below.
NEVER = {"sqlite_utils", "numpy", "click", "dateutil", "conductor.session", "textual", "docker"}
# Nor by the runs' readers, which read no settings.
NOT_FOR_RUNS = {"pydantic_settings", "conductor.config.settings", "conductor.batch.scores"}


@pytest.fixture
def run_id(isolated_home: Path) -> str:
    """The id of one real run of the offline demo model (its transcript, runs.db and
    notebook written as a user's would be)."""
    from conductor.cli import main
    from transcripts.index import RunIndex

    question = "Sort these words: pear apple fig"
    assert main(["solve", "--no-python", "--no-recall", question]) == 0
    index = RunIndex(isolated_home / "runs.db")
    try:
        (run,) = index.list()
    finally:
        index.close()
    assert (isolated_home / "notebook.db").exists()
    return run["run_id"]


@pytest.mark.parametrize(
    "args",
    [("runs", "list"), ("runs", "show", "RUN"), ("runs", "search", "pear"), ("runs", "audit")],
    ids=" ".join,
)
def test_the_runs_readers_import_neither_sqlite_utils_nor_settings(
    run_id: str, args: tuple[str, ...]
) -> None:
    modules = modules_imported_by(*(run_id[:15] if a == "RUN" else a for a in args))
    assert "transcripts.index" in modules  # runs.db was read
    assert not (NEVER | NOT_FOR_RUNS) & modules, sorted((NEVER | NOT_FOR_RUNS) & modules)


def test_notebook_search_imports_neither_sqlite_utils_nor_the_session(run_id: str) -> None:
    modules = modules_imported_by("notebook", "search", "sort words")
    assert "lessons.read.recall" in modules  # the notebook was searched
    assert "conductor.config.settings" in modules  # the settings name the notebook...
    unneeded = NEVER | {"conductor.methods"}  # ...and name the methods without them
    assert not unneeded & modules, sorted(unneeded & modules)


def test_a_new_runs_db_is_still_migrated_by_sqlite_utils(isolated_home: Path) -> None:
    """The readers skip sqlite-utils only because nothing is pending: a new file is
    made by the migrations, which need it."""
    modules = modules_imported_by("runs", "list")
    assert (isolated_home / "runs.db").exists()
    assert "sqlite_utils" in modules


@pytest.mark.parametrize(
    "args",
    [("solve", "--help"), ("batch", "--help"), ("runs", "list", "-h"), ("notebook", "--help")],
    ids=" ".join,
)
def test_a_commands_help_imports_no_printing_settings_or_run_machinery(
    args: tuple[str, ...], isolated_home: Path
) -> None:
    modules = modules_imported_by(*args)
    heavy = {"rich.console", "pydantic_settings", "conductor_kernel.events", "regex"}
    assert not (NEVER | heavy) & modules, sorted((NEVER | heavy) & modules)


def test_a_piped_runs_list_starts_without_rich_or_the_run_events(run_id: str) -> None:
    """Piped, the list is tab-separated text: no terminal to draw, no event to fold."""
    modules = modules_imported_by("runs", "list")
    assert "transcripts.index" in modules
    unneeded = {"rich.console", "conductor_kernel.events", "record.fold", "regex"}
    assert not unneeded & modules, sorted(unneeded & modules)
