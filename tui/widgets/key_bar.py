"""The key bar: every shown binding of the screen, wrapped onto as many lines as needed.

Textual's own footer is one row that scrolls sideways, so at 80 or 100 columns the
last keys (F3, F4, the palette) were out of sight. This bar breaks lines between keys,
never inside one, so every key is always on screen.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget


class KeyBar(Widget):
    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._show()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        if self.is_attached and screen is self.screen:
            self._show()

    def pairs(self) -> list[tuple[str, str]]:
        """(key, description) for each shown binding, one per action, palette last."""
        seen: set[str] = set()
        out: list[tuple[str, str]] = []
        palette = None
        for _node, binding, _enabled, _tooltip in self.screen.active_bindings.values():
            if binding.key == self.app.COMMAND_PALETTE_BINDING:
                palette = (self.app.get_key_display(binding), "palette")
                continue
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            out.append((self.app.get_key_display(binding), binding.description))
        if palette is not None and self.app.ENABLE_COMMAND_PALETTE:
            out.append(palette)
        return out

    def _show(self) -> None:
        self._pairs = self.pairs()
        self.refresh(layout=True)

    def lines(self, width: int) -> list[list[tuple[str, str]]]:
        """The pairs laid out in lines of at most `width` cells, broken between keys."""
        lines: list[list[tuple[str, str]]] = [[]]
        used = 0
        for key, description in getattr(self, "_pairs", []):
            size = cell_len(key) + 1 + cell_len(description)
            gap = 2 if lines[-1] else 0
            if lines[-1] and used + gap + size > width:
                lines.append([])
                used, gap = 0, 0
            lines[-1].append((key, description))
            used += gap + size
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self.lines(width)))

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="fold")
        for n, line in enumerate(self.lines(max(1, self.content_region.width))):
            if n:
                text.append("\n")
            for i, (key, description) in enumerate(line):
                if i:
                    text.append("  ")
                text.append(key, style="bold reverse")
                text.append(" " + description)
        return text
