"""A scrolling view of one run (or one page of a run), drawn by the shared renderers."""

from __future__ import annotations

from textual.containers import VerticalScroll

from conductor_kernel.events import Event
from tui.renderers import RunRenderer


class RunView(VerticalScroll):
    """Feed it events in order; it draws them. `clear` starts over for another run."""

    def __init__(self, *, follow: bool = False, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.follow = follow
        self.renderer = RunRenderer(self)

    def on_mount(self) -> None:
        if self.follow:
            self.anchor()  # stay at the bottom while a live run grows

    async def add(self, event: Event) -> None:
        await self.renderer.add(event)

    async def show(self, events: list[Event]) -> None:
        with self.app.batch_update():  # one repaint for the whole page, not one per block
            await self.clear()
            for event in events:
                await self.renderer.add(event)

    async def clear(self) -> None:
        await self.remove_children()
        self.renderer = RunRenderer(self)
        if self.follow:
            self.anchor()
