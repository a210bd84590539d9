"""Timing text that arrives as keystrokes, for bench/typed_keys.py (textual stays in tui/).

The events are posted as the terminal driver posts them (all of a burst before the first
is handled) into a headless app holding one field: the TUI's `TypedInput`, or Textual's
own `Input` as the baseline; or the text arrives as one bracketed paste.
"""

from __future__ import annotations

import asyncio
import time

from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Input

from tui.widgets.typed_input import TypedInput

FIELDS: dict[str, type[Input]] = {"typed": TypedInput, "textual": Input}


class _OneField(App[None]):
    def __init__(self, kind: type[Input]) -> None:
        super().__init__()
        self.kind = kind

    def compose(self) -> ComposeResult:
        yield self.kind()


async def seconds_to_arrive(field: str, text: str, *, paste: bool = False) -> float:
    """Seconds from the first event posted until the whole `text` is in the field."""
    app = _OneField(FIELDS[field])
    async with app.run_test() as pilot:
        box = app.query_one(Input)
        box.focus()
        await pilot.pause()
        started = time.perf_counter()
        if paste:
            app.post_message(events.Paste(text))
        else:
            for char in text:
                app.post_message(events.Key(char, char))
        while len(box.value) < len(text):
            await asyncio.sleep(0.005)
        took = time.perf_counter() - started
        if box.value != text:
            raise AssertionError("the field's text differs from what was typed")
        return took
