"""A modal listing a round's events; the highlighted one is shown as raw JSON."""

from __future__ import annotations

import json
from typing import ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from conductor_kernel.events import Event
from conductor_kernel.text.display import visible
from tui.widgets.key_bar import KeyBar


class RawEventsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close", id="raw.close", tooltip="Close the raw events view."),
    ]

    def __init__(self, events: list[Event]) -> None:
        super().__init__()
        self.events = events

    def compose(self) -> ComposeResult:
        with Vertical(id="raw-box"):
            yield OptionList(
                *[
                    Option(Text(visible(f"{e.kind} · {e.id}")), id=str(i))
                    for i, e in enumerate(self.events)
                ],
                id="raw-list",
            )
            with VerticalScroll(id="raw-json-scroll"):
                yield Static(id="raw-json")
        yield KeyBar()

    def on_mount(self) -> None:
        self.query_one("#raw-box").border_title = "raw events of this round"
        if self.events:
            self.query_one("#raw-list", OptionList).highlighted = 0

    @on(OptionList.OptionHighlighted, "#raw-list")
    def _show(self, event: OptionList.OptionHighlighted) -> None:
        data = self.events[event.option_index].to_dict()
        text = json.dumps(data, indent=2, ensure_ascii=False)
        self.query_one("#raw-json", Static).update(Syntax(text, "json", word_wrap=True))
        self.shown = data

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
