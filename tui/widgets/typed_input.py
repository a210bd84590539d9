"""An `Input` that takes text typed as keystrokes in one piece, as a paste would.

A terminal without bracketed paste, or a tool that types into the terminal, delivers
long text as one key event per character. Textual's `Input` inserts each one on its
own, rebuilding its value and moving its cursor every time, so 8,000 typed characters
took 13 s to appear and 21 KB about two minutes (a paste of the same text, one event,
about a second). Here, printable keys that are already queued are collected and
inserted together once the queue reaches the end of them; any other key (Enter,
Backspace, an arrow, a binding) first inserts what was collected, so the order of
edits is the order of keys.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class TypedInput(Input):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._typed: list[str] = []

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable and event.character is not None:
            event.stop()
            event.prevent_default()
            if not self._typed:
                # Runs after every message queued so far: the rest of a burst of keys.
                self.call_later(self.insert_typed)
            self._typed.append(event.character)
            return
        self.insert_typed()
        await super()._on_key(event)

    def insert_typed(self) -> None:
        """Insert the characters collected since the last insert, at the cursor."""
        if not self._typed:
            return
        text = "".join(self._typed)
        self._typed.clear()
        self._restart_blink()
        selection = self.selection
        if selection.is_empty:
            self.insert_text_at_cursor(text)
        else:
            self.replace(text, *selection)
