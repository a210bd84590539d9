"""Notebook: task types with their experience, notes with provenance; search, retire.

Reads the notebook (`lessons.storage.store.Notebook`, the file the settings name) through
`lessons.storage.queries`; search goes through its FTS index with the notebook's own term
functions, so the screen finds what recall would. Retiring calls the notebook package;
the screen writes no SQL and never writes by itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible
from lessons.storage.queries import (
    browse_notes,
    lookup_note,
    lookup_type,
    note_counts_by_type,
    task_types,
)
from lessons.storage.store import Notebook, NoteRecord
from record.fts import SearchSyntaxError
from tui.widgets.key_bar import KeyBar
from tui.widgets.notebook_detail import NotebookDetail
from tui.widgets.typed_input import TypedInput

if TYPE_CHECKING:
    from tui.app import ConductorApp

LIMIT = 500
ALL_TYPES = "type:*"
NO_TYPE = "type:-"
KEY_WIDTH = 18


def query_notes(
    book: Notebook, *, search: str = "", type_choice: str = ALL_TYPES
) -> list[NoteRecord]:
    """Active notes of the chosen type (all, none, or one id), matching `search` if given."""
    type_id = None if type_choice in (ALL_TYPES, NO_TYPE) else type_choice.removeprefix("type:")
    return browse_notes(book, search, type_id=type_id, untyped=type_choice == NO_TYPE, limit=LIMIT)


class NotebookScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+f",
            "focus_search",
            "Search",
            id="notebook.search",
            tooltip="Full-text search over the notes (key, text, code).",
        ),
        Binding(
            "ctrl+l",
            "clear_search",
            "Clear",
            id="notebook.clear",
            tooltip="Clear the search and show every task type's notes.",
        ),
        Binding(
            "ctrl+o",
            "open_source_run",
            "Source run",
            id="notebook.source_run",
            tooltip="Open the run the selected note came from, in the run detail view.",
        ),
        Binding(
            "delete",
            "retire_note",
            "Retire",
            id="notebook.retire",
            tooltip="Retire the selected note (press twice; it stays in the history).",
        ),
        Binding(
            "ctrl+r",
            "refresh",
            "Refresh",
            id="notebook.refresh",
            tooltip="Read the notebook again.",
        ),
    ]

    app: ConductorApp

    def __init__(self) -> None:
        super().__init__()
        self.book: Notebook | None = None
        self.problem: str | None = None
        self.notes: list[NoteRecord] = []
        self.type_names: dict[str, str] = {}
        self.type_choice = ALL_TYPES
        self.selected_note: NoteRecord | None = None
        self._retire_armed: str | None = None  # the note id a first press asked about
        self._pending_note: str | None = None  # a link followed before the screen mounted

    def compose(self) -> ComposeResult:
        yield TypedInput(placeholder="search notes (full text)", id="nb-search")
        with Horizontal(id="nb-body"):
            with Vertical(id="nb-side"):
                yield Label("Task types", classes="side-title")
                yield OptionList(id="nb-types")
            with Vertical(id="nb-main"):
                yield DataTable(id="nb-notes", cursor_type="row", zebra_stripes=True)
                with VerticalScroll(id="nb-detail-scroll"):
                    yield NotebookDetail(id="nb-detail")
        yield Static(id="nb-info")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one("#nb-notes", DataTable)
        table.add_column("kind", key="kind", width=9)
        table.add_column("key", key="key", width=KEY_WIDTH)
        table.add_column("+/-", key="votes", width=5)
        table.add_column("use", key="uses", width=3)
        table.add_column("verified", key="verification", width=9)
        self.book = self._open()
        self.refresh_all()
        table.focus()
        if self._pending_note is not None:
            # After the first layout: the table settles its cursor then, not before.
            self.call_after_refresh(self.show_note, self._pending_note)
            self._pending_note = None

    def on_screen_resume(self) -> None:
        if self.book is not None:
            self.refresh_all()

    def on_unmount(self) -> None:
        if self.book is not None:
            self.book.close()

    def _open(self) -> Notebook | None:
        settings = getattr(self.app, "settings", None)
        path = getattr(settings, "notebook", "") or None
        try:
            return Notebook(Path(path) if path else None)
        except UserFacingError as exc:
            self.problem = str(exc)
            return None

    # -- reading ----------------------------------------------------------------------
    def refresh_all(self) -> None:
        if self.book is None:
            self.query_one("#nb-detail", NotebookDetail).show_hint(
                f"The notebook cannot be opened: {self.problem}"
            )
            self.query_one("#nb-info", Static).update("no notebook")
            return
        try:
            self._fill_types()
        except UserFacingError as exc:  # locked or damaged: say so, keep the screen
            self.notify(str(exc), severity="error", title="notebook")
            return
        self.refresh_notes()

    def _fill_types(self) -> None:
        assert self.book is not None
        counts = note_counts_by_type(self.book)
        types = task_types(self.book, order="name")
        self.type_names = {r["id"]: r["name"] for r in types}
        options = [Option(f"All notes ({sum(counts.values())})", id=ALL_TYPES)]
        options += [
            Option(Text(visible(f"{r['name']} ({counts.get(r['id'], 0)})")), id=f"type:{r['id']}")
            for r in types
        ]
        if counts.get(None):
            options.append(Option(f"(no type) ({counts[None]})", id=NO_TYPE))
        type_list = self.query_one("#nb-types", OptionList)
        type_list.clear_options()
        type_list.add_options(options)
        ids = [o.id for o in options]
        if self.type_choice not in ids:
            self.type_choice = ALL_TYPES
        type_list.highlighted = ids.index(self.type_choice)

    def refresh_notes(self) -> None:
        assert self.book is not None
        search = self.query_one("#nb-search", Input).value
        try:
            self.notes = query_notes(self.book, search=search, type_choice=self.type_choice)
        except SearchSyntaxError as exc:
            self.notify(f"search failed: {exc} Try plain words.", severity="error")
            return
        except UserFacingError as exc:  # locked or damaged: say so, keep the screen
            self.notify(str(exc), severity="error", title="notebook")
            return
        table = self.query_one("#nb-notes", DataTable)
        table.clear()
        for note in self.notes:
            table.add_row(
                note["kind"],
                Text(visible(" ".join((note["key"] or note["text"] or "").split()))),  # wraps
                f"{note['helpful']}/{note['harmful']}",
                str(note["uses"]),
                Text(note["verification"] or ""),
                key=note["id"],
                height=None,
            )
        where = "all types" if self.type_choice == ALL_TYPES else self._type_label()
        found = plural(len(self.notes), "note") + (
            " (first 500)" if len(self.notes) >= LIMIT else ""
        )
        matching = f" matching {search.strip()!r}" if search.strip() else ""
        self.query_one("#nb-info", Static).update(
            f"{found}{matching} · {where} · {self.book.path.name}"
        )
        if self.notes:
            self._show_note(self.notes[min(table.cursor_row, len(self.notes) - 1)])
        else:
            self.selected_note = None
            self._show_type_or_hint()

    def _type_label(self) -> str:
        if self.type_choice == NO_TYPE:
            return "no type"
        type_id = self.type_choice.removeprefix("type:")
        return self.type_names.get(type_id, type_id)

    def _show_type_or_hint(self) -> None:
        detail = self.query_one("#nb-detail", NotebookDetail)
        if self.book is not None and self.type_choice not in (ALL_TYPES, NO_TYPE):
            try:
                row = lookup_type(self.book, self.type_choice.removeprefix("type:"))
            except UserFacingError as exc:
                self.notify(str(exc), severity="error", title="notebook")
                row = None
            if row is not None:
                detail.show_type(row, len(self.notes))
                return
        detail.show_hint(
            "No notes here yet: every finished run is distilled into the notebook "
            "(unless learning is off)."
        )

    def _show_note(self, note: NoteRecord) -> None:
        self.selected_note = note
        name = self.type_names.get(note.get("type_id") or "")
        self.query_one("#nb-detail", NotebookDetail).show_note(note, name)

    def show_note(self, note_id: str) -> None:
        """Show one note (a link from a run's detail): its row if listed, else just the note."""
        if not self.query("#nb-notes"):  # not composed yet: on_mount shows it
            self._pending_note = note_id
            return
        if self.book is None:
            self.notify(f"The notebook cannot be opened: {self.problem}", severity="error")
            return
        try:
            note = lookup_note(self.book, note_id)
        except UserFacingError as exc:
            self.notify(str(exc), severity="error", title="notebook")
            return
        if note is None:
            self.notify(f"no note matches {note_id!r} in {self.book.path}.", severity="warning")
            return
        self.query_one("#nb-search", Input).value = ""
        self.type_choice = ALL_TYPES
        self.refresh_all()
        table = self.query_one("#nb-notes", DataTable)
        ids = [n["id"] for n in self.notes]
        if note["id"] in ids:
            table.move_cursor(row=ids.index(note["id"]))
            table.focus()
        self._show_note(note)  # a retired note is not listed but still shown

    # -- events -----------------------------------------------------------------------
    @on(OptionList.OptionHighlighted, "#nb-types")
    def _type_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_id and event.option_id != self.type_choice:
            self.type_choice = event.option_id
            self.query_one("#nb-notes", DataTable).move_cursor(row=0)
            self.refresh_notes()
            if self.type_choice not in (ALL_TYPES, NO_TYPE):
                self._show_type_or_hint()  # the type's experience first; a note on choosing

    @on(DataTable.RowHighlighted, "#nb-notes")
    def _note_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.notes) and self.query_one("#nb-notes").has_focus:
            self._show_note(self.notes[event.cursor_row])

    @on(DataTable.RowSelected, "#nb-notes")
    def _note_selected(self, event: DataTable.RowSelected) -> None:
        if 0 <= event.cursor_row < len(self.notes):
            self._show_note(self.notes[event.cursor_row])

    @on(Input.Submitted, "#nb-search")
    def _search_submitted(self) -> None:
        self.refresh_notes()
        if self.notes:
            self.query_one("#nb-notes", DataTable).focus()

    # -- actions ----------------------------------------------------------------------
    def action_focus_search(self) -> None:
        self.query_one("#nb-search", Input).focus()

    def action_clear_search(self) -> None:
        self.query_one("#nb-search", Input).value = ""
        self.type_choice = ALL_TYPES
        if self.book is not None:
            self.refresh_all()

    def action_refresh(self) -> None:
        if self.book is None:
            self.book = self._open()
        self.refresh_all()

    def action_open_source_run(self) -> None:
        note = self.selected_note
        if note is None:
            self.notify("Choose a note first.")
            return
        source_run = note.get("source_run")
        if not source_run:
            self.notify(f"Note {note['id']} records no source run (written by {note['author']}).")
            return
        self.app.open_run(source_run)

    def action_retire_note(self) -> None:
        note = self.selected_note
        if self.book is None or note is None:
            self.notify("Choose a note first.")
            return
        if note.get("retired"):
            self.notify(f"Note {note['id']} is already retired.")
            return
        if self._retire_armed != note["id"]:
            self._retire_armed = note["id"]
            self.notify(
                f"Press Delete again to retire {note['id']} ({' '.join((note['key'] or '').split())}); "
                "it stays in the history.",
                title="retire?",
            )
            return
        self._retire_armed = None
        self._retire(note)

    def _retire(self, note: NoteRecord) -> None:
        assert self.book is not None
        retire = retire_function()
        if retire is None:
            self.notify(
                f"Retiring from the TUI needs the notebook's retire function, not in this "
                f"build yet: run `conductor notebook retire {note['id']}`.",
                severity="warning",
                title="cannot retire here",
            )
            return
        try:
            retire(self.book, note["id"], reason="retired in the TUI")
        except UserFacingError as exc:
            self.notify(str(exc), severity="error", title="cannot retire")
            return
        self.notify(f"{note['id']} retired (kept in the history).", title="retired")
        self.refresh_all()


def retire_function() -> Any:
    """The notebook package's retire: flags the note and writes its history row."""
    from lessons.storage.notes import retire

    return retire
