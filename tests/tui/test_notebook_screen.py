"""The Notebook screen over a real notebook.db and a real recorded run.

The notebook is the notebook package's own schema (via `Notebook`), rows written with
`Notebook.write`; the source run is a real scripted session indexed in runs.db.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest
from rich.console import Console
from textual.widgets import DataTable, Input, OptionList
from tui_helpers import GAME24_TURNS, game24_expert, make_settings, record_run, wait_for

from lessons.forms.terms import content_terms, index_text
from lessons.storage.store import Notebook, default_path
from tui.app import ConductorApp
from tui.screens import notebook as notebook_screen
from tui.screens.notebook import NotebookScreen, query_notes
from tui.screens.run_detail import RunDetailScreen
from tui.widgets.notebook_detail import note_renderable

pytestmark = pytest.mark.anyio
WHEN = 1_735_732_800.0  # 2025-01-01 12:00 UTC: fixed for snapshots

GAME24_TYPE = {
    "id": "tt-game24",
    "name": "Game of 24",
    "description": "Combine four numbers with + - * / to make 24.",
    "suggestions": ["Search every expression by program.", "Check each number is used once."],
    "procedure": ["Expert Python enumerates", "a checker confirms", "answer"],
}
SORT_TYPE = {
    "id": "tt-sort",
    "name": "Word sorting",
    "description": "Sort a list of words alphabetically.",
    "suggestions": ["Let sorted() do it."],
    "procedure": [],
}


def _type_row(conn: sqlite3.Connection, spec: dict) -> None:
    conn.execute(
        "insert into task_types (id, name, description, suggestions, procedure, members, runs,"
        " correct, created_at, updated_at) values (?, ?, ?, ?, ?, 3, 3, 2, ?, ?)",
        (
            spec["id"],
            spec["name"],
            spec["description"],
            json.dumps(spec["suggestions"]),
            json.dumps(spec["procedure"]),
            WHEN,
            WHEN,
        ),
    )


def _note_row(conn: sqlite3.Connection, note: dict) -> None:
    body = note["key"] + "\n" + note["text"] + "\n" + note.get("code", "")
    digest = hashlib.sha256(body.encode()).hexdigest()
    note = {
        "code": "",
        "answer": None,
        "source_question": "",
        "source_task": "",
        "verification": "none",
        "outcome": "unverified",
        "confidence": 0.5,
        "helpful": 0,
        "harmful": 0,
        "uses": 0,
        "content_hash": digest,
        "near_hash": digest[:16],
        "terms": index_text(content_terms(body)),
        "created_at": WHEN,
        "updated_at": WHEN,
        **note,
    }
    columns = ", ".join(note)
    conn.execute(
        f"insert into notes ({columns}) values ({', '.join('?' for _ in note)})",
        list(note.values()),
    )


def seed_notebook(source_run: str | None) -> dict[str, str]:
    """Two task types and three notes in the default notebook; returns the note ids."""
    notes = [
        {
            "id": "n-code24",
            "type_id": "tt-game24",
            "kind": "code",
            "key": "game of 24 search",
            "text": "Enumerate every expression over the four numbers and print one equal to 24.",
            "code": "print('(4 + 5 * 6) - 10')",
            "answer": "(4 + 5 * 6) - 10",
            "source_run": source_run,
            "source_question": "Use 4 5 6 10 to make 24",
            "source_task": "GameOf24",
            "verification": "sandbox",
            "outcome": "correct",
            "confidence": 0.9,
            "helpful": 3,
            "harmful": 1,
            "uses": 4,
        },
        {
            "id": "n-pit24",
            "type_id": "tt-game24",
            "kind": "pitfall",
            "key": "division order",
            "text": "Fractions matter: 8 / (3 - 8 / 3) is 24, integer division misses it.",
            "source_run": source_run,
            "source_question": "Use 3 3 8 8 to make 24",
            "confidence": 0.7,
        },
        {
            "id": "n-sort",
            "type_id": "tt-sort",
            "kind": "insight",
            "key": "alphabetical words",
            "text": "Sort case-insensitively and keep duplicates.",
            "confidence": 0.6,
        },
    ]

    def write(conn: sqlite3.Connection) -> None:
        for spec in (GAME24_TYPE, SORT_TYPE):
            _type_row(conn, spec)
        for note in notes:
            _note_row(conn, note)

    with Notebook(default_path()) as book:
        book.write(write)
    return {n["key"]: n["id"] for n in notes}


@pytest.fixture
def source_run() -> str:
    return record_run("Use 4 5 6 10 to make 24", GAME24_TURNS, game24_expert, task="GameOf24")


def _table(app: ConductorApp) -> DataTable:
    return app.screen.query_one("#nb-notes", DataTable)


def _listed(app: ConductorApp) -> list[str]:
    return [n["id"] for n in app.screen.notes]


def _plain(widget) -> str:
    """What a Static shows, as plain text (wide, so lines are not wrapped)."""
    console = Console(width=400, record=True)
    console.print(widget.content)
    return console.export_text()


def _detail_text(app: ConductorApp) -> str:
    return _plain(app.screen.query_one("#nb-detail"))


@pytest.mark.slow
async def test_types_list_and_a_type_shows_its_experience(source_run: str) -> None:
    seed_notebook(source_run)
    app = ConductorApp(make_settings(), start_mode="notebook")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, NotebookScreen))
        types = app.screen.query_one("#nb-types", OptionList)
        labels = [str(types.get_option_at_index(i).prompt) for i in range(types.option_count)]
        assert labels == ["All notes (3)", "Game of 24 (2)", "Word sorting (1)"]
        assert sorted(_listed(app)) == ["n-code24", "n-pit24", "n-sort"]
        types.focus()
        await pilot.press("down")
        await wait_for(pilot, lambda: _listed(app) == ["n-code24", "n-pit24"])
        text = _detail_text(app)
        assert "Game of 24" in text and "Search every expression by program." in text
        assert "1. Expert Python enumerates" in text
        await pilot.press("down")
        await wait_for(pilot, lambda: _listed(app) == ["n-sort"])
        assert "Let sorted() do it." in _detail_text(app)


async def test_selecting_a_note_shows_counters_verification_and_provenance(
    source_run: str,
) -> None:
    seed_notebook(source_run)
    app = ConductorApp(make_settings(), start_mode="notebook")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: _table(app).row_count == 3)
        _table(app).focus()
        assert _listed(app)[0] == "n-code24"  # highest confidence first
        await pilot.press("down")
        await wait_for(pilot, lambda: app.screen.selected_note["id"] == "n-pit24")
        await pilot.press("up")
        await wait_for(pilot, lambda: app.screen.selected_note["id"] == "n-code24")
        text = _detail_text(app)
        assert "[code] game of 24 search" in text
        assert "helpful 3 · harmful 1 · used 4" in text
        assert "verified: sandbox (correct)" in text
        assert f"source run: {source_run} · GameOf24" in text
        assert "question: Use 4 5 6 10 to make 24" in text


@pytest.mark.slow
async def test_search_finds_notes_through_the_full_text_index(source_run: str) -> None:
    seed_notebook(source_run)
    app = ConductorApp(make_settings(), start_mode="notebook")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: _table(app).row_count == 3)
        await pilot.press("ctrl+f")
        assert isinstance(app.focused, Input)
        await pilot.press(*"integer division", "enter")
        await wait_for(pilot, lambda: _listed(app) == ["n-pit24"])
        assert "matching 'integer division'" in _plain(app.screen.query_one("#nb-info"))
        await pilot.press("ctrl+l")
        await wait_for(pilot, lambda: len(_listed(app)) == 3)
        await pilot.press("ctrl+f", *"nothingmatchesthis", "enter")
        await wait_for(pilot, lambda: _listed(app) == [])


@pytest.mark.slow
async def test_opening_a_notes_source_run_shows_that_run(source_run: str) -> None:
    seed_notebook(source_run)
    app = ConductorApp(make_settings(), start_mode="notebook")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: _table(app).row_count == 3)
        _table(app).focus()
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: isinstance(app.screen, RunDetailScreen))
        screen = app.screen
        assert (
            screen.pages is not None
            and screen.pages.run.started is not None
            and screen.pages.run.started.run_id == source_run
        )
        header = _plain(screen.query_one("#run-header"))
        assert source_run in header and "Use 4 5 6 10 to make 24" in header


@pytest.mark.slow
async def test_a_note_without_a_source_run_says_so(source_run: str) -> None:
    seed_notebook(source_run)
    app = ConductorApp(make_settings(), start_mode="notebook")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: _table(app).row_count == 3)
        app.screen.show_note("n-sort")
        await pilot.press("ctrl+o")
        await pilot.pause(0.2)
        assert isinstance(app.screen, NotebookScreen)
        assert any("records no source run" in str(n.message) for n in app._notifications)


@pytest.mark.slow
async def test_a_note_link_from_a_run_opens_that_note(source_run: str) -> None:
    seed_notebook(source_run)
    app = ConductorApp(make_settings())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.open_note("n-pit")  # a prefix, as listings show
        await wait_for(pilot, lambda: isinstance(app.screen, NotebookScreen))
        await wait_for(pilot, lambda: (app.screen.selected_note or {}).get("id") == "n-pit24")
        assert _table(app).cursor_row == _listed(app).index("n-pit24")


@pytest.mark.slow
async def test_retire_asks_once_then_retires_and_keeps_history(
    source_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = seed_notebook(source_run)
    app = ConductorApp(make_settings(), start_mode="notebook")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: _table(app).row_count == 3)
        _table(app).focus()
        await pilot.press("delete")
        await pilot.pause(0.1)
        with Notebook(default_path()) as book:
            assert book.find_note(ids["game of 24 search"])["retired"] == 0  # asked only
        await pilot.press("delete")
        await wait_for(pilot, lambda: "n-code24" not in _listed(app))
        assert sorted(_listed(app)) == ["n-pit24", "n-sort"]
    with Notebook(default_path()) as book:
        note = book.find_note("n-code24")
        assert note is not None and note["retired"] == 1
        history = book.read("select action from note_history where note_id = 'n-code24'")
        assert [h["action"] for h in history] == ["retired"]


@pytest.mark.slow
async def test_retire_without_the_notebooks_function_points_to_the_cli(
    source_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_notebook(source_run)
    monkeypatch.setattr(notebook_screen, "retire_function", lambda: None)
    app = ConductorApp(make_settings(), start_mode="notebook")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: _table(app).row_count == 3)
        _table(app).focus()
        await pilot.press("delete", "delete")
        await pilot.pause(0.1)
        messages = [str(n.message) for n in app._notifications]
        assert any("conductor notebook retire n-code24" in m for m in messages)
    with Notebook(default_path()) as book:
        assert book.find_note("n-code24")["retired"] == 0


async def test_an_empty_notebook_says_how_notes_arrive() -> None:
    app = ConductorApp(make_settings(), start_mode="notebook")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, NotebookScreen))
        await pilot.pause()
        assert _table(app).row_count == 0
        assert "every finished run is distilled" in _detail_text(app)


async def test_a_file_that_is_not_a_notebook_is_reported(tmp_path) -> None:
    foreign = tmp_path / "other.db"
    conn = sqlite3.connect(foreign)
    conn.execute("create table stuff (x)")
    conn.commit()
    conn.close()
    app = ConductorApp(make_settings(notebook=str(foreign)), start_mode="notebook")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, NotebookScreen))
        await pilot.pause()
        assert app.screen.book is None
        assert "cannot be opened" in _detail_text(app)


def test_query_notes_filters_by_type_and_search() -> None:
    seed_notebook(None)
    with Notebook(default_path()) as book:
        assert [n["id"] for n in query_notes(book, type_choice="type:tt-sort")] == ["n-sort"]
        found = query_notes(book, search="expression", type_choice="type:tt-game24")
        assert [n["id"] for n in found] == ["n-code24"]
        assert query_notes(book, search="expression", type_choice="type:tt-sort") == []
        assert query_notes(book, search="  ") != []  # blank search lists everything


def test_a_note_renders_without_optional_fields() -> None:
    row = {
        "id": "n1",
        "kind": "insight",
        "key": "",
        "type_id": None,
        "confidence": 0.5,
        "helpful": 0,
        "harmful": 0,
        "uses": 0,
        "support": 1,
        "verification": "none",
        "outcome": "unverified",
        "author": "reflect",
        "source_run": None,
        "created_at": WHEN,
    }
    console = Console(width=80, record=True)
    console.print(note_renderable(row, None))
    text = console.export_text()
    assert "(no key)" in text and "source run: none recorded" in text
