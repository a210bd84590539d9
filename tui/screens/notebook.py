"""Notebook: task types with their experience, notes with provenance; retire a note."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import Footer, Static


class NotebookScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = []

    def compose(self) -> ComposeResult:
        yield Static("The notebook store is not available in this build yet.", id="nb-missing")
        yield Footer()

    def show_note(self, note_id: str) -> None:
        self.notify(f"note {note_id}: the notebook store is not available yet")
