"""A virtual list of a run's rounds: only the visible lines are ever drawn.

An `OptionList` lays out every option up front (it measures each one), which is
seconds for thousands of rounds; this list draws one line per visible row on demand,
so its cost does not grow with the length of the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


class RoundList(ScrollView, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False, id="rounds.up", tooltip="Previous round."),
        Binding("down", "move(1)", "Down", show=False, id="rounds.down", tooltip="Next round."),
        Binding(
            "pageup",
            "page(-1)",
            "Page up",
            show=False,
            id="rounds.page_up",
            tooltip="A page of rounds back.",
        ),
        Binding(
            "pagedown",
            "page(1)",
            "Page down",
            show=False,
            id="rounds.page_down",
            tooltip="A page of rounds on.",
        ),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"round-list--highlight"}

    highlighted: reactive[int] = reactive(0, always_update=True)

    @dataclass
    class Highlighted(Message):
        round_list: RoundList
        index: int

        @property
        def control(self) -> RoundList:
            return self.round_list

    def __init__(self, labels: list[str] | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.labels: list[str] = labels or []

    def set_labels(self, labels: list[str]) -> None:
        self.labels = labels
        self.virtual_size = Size(max((len(s) for s in labels[:200]), default=0), len(labels))
        self.refresh()

    @property
    def count(self) -> int:
        return len(self.labels)

    def validate_highlighted(self, value: int) -> int:
        return max(0, min(value, len(self.labels) - 1)) if self.labels else 0

    def watch_highlighted(self, old: int, new: int) -> None:
        if not self.labels:
            return
        self.scroll_to_region_line(new)
        self.refresh()
        self.post_message(self.Highlighted(self, new))

    def scroll_to_region_line(self, line: int) -> None:
        top, height = round(self.scroll_offset.y), self.scrollable_content_region.height
        if line < top:
            self.scroll_to(y=line, animate=False)
        elif height and line >= top + height:
            self.scroll_to(y=line - height + 1, animate=False)

    def render_line(self, y: int) -> Strip:
        index = round(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        if index >= len(self.labels):
            return Strip.blank(width, self.rich_style)
        style: Style = self.rich_style
        if index == self.highlighted:
            style = self.get_component_rich_style("round-list--highlight")
        text = f" {self.labels[index]}"[:width].ljust(width)
        return Strip([Segment(text, style)], width)

    def action_move(self, delta: int) -> None:
        self.highlighted += delta

    def action_page(self, delta: int) -> None:
        self.highlighted += delta * max(1, self.scrollable_content_region.height - 1)

    def action_edge(self, last: int) -> None:
        self.highlighted = len(self.labels) - 1 if last else 0

    def on_click(self, event: Click) -> None:
        index = round(self.scroll_offset.y) + event.y
        if 0 <= index < len(self.labels):
            self.highlighted = index
