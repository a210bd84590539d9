"""Help: every key of the screen underneath and of the whole app, with what it does.

Opened with F1 or `?` (when not typing) and from the palette ("Help"). It lists every
binding, also those the key bar leaves out, with its tooltip as the explanation.
"""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from tui.widgets.key_bar import KeyBar


def binding_rows(owner: object, app: object) -> list[tuple[str, str, str]]:
    """(keys, name, what it does) for each binding with an id of `owner`."""
    rows = []
    for binding in getattr(owner, "BINDINGS", []):
        if not isinstance(binding, Binding) or not binding.id:
            continue
        keys = ", ".join(app.get_key_display(Binding(k, "")) for k in binding.key.split(","))  # type: ignore[attr-defined]
        rows.append((keys, binding.description, binding.tooltip))
    return rows


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,q", "dismiss", "Close", id="help.close", tooltip="Close the help."),
    ]

    def __init__(self, under: Screen) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(self._text(), id="help-text")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#help").border_title = "keys (Esc closes)"

    def _text(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True, style="bold")
        table.add_column(no_wrap=True)
        table.add_column(ratio=1)  # wraps: nothing is cut
        sections = [
            (f"On this screen ({type(self.under).__name__.removesuffix('Screen')})", self.under),
            ("Everywhere", self.app),
        ]
        for title, owner in sections:
            table.add_row(Text(title, style="bold underline"), "", "")
            for keys, name, what in binding_rows(owner, self.app):
                table.add_row(keys, name, what)
            table.add_row("", "", "")
        table.add_row(
            "ctrl+p",
            "Palette",
            "Search every action above, and choose the model, sandbox and notebook.",
        )
        return table
