"""The command palette: every binding of the current screen and of the app, plus choices.

Entries are generated from the `BINDINGS` (description as the name, tooltip as the help),
so an action can never lack a palette entry; the app adds the choices that have no key
(which model, which sandbox, which notebook).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from textual.screen import Screen


@dataclass(frozen=True)
class PaletteEntry:
    name: str
    help: str
    run: Callable[[], Any]


def binding_entries(screen: Screen[Any]) -> list[PaletteEntry]:
    """An entry for each binding with an id on `screen` and on the app."""
    app = screen.app
    entries: list[PaletteEntry] = []
    for owner in (screen, app):
        for binding in owner.BINDINGS:
            if not isinstance(binding, Binding) or not binding.id or binding.system:
                continue
            run = partial(app.run_action, binding.action, owner)
            entries.append(PaletteEntry(binding.description, binding.tooltip, run))
    return entries


class ConductorCommands(Provider):
    def _entries(self) -> list[PaletteEntry]:
        entries = binding_entries(self.screen)
        extra = getattr(self.app, "palette_choices", None)
        if extra is not None:
            entries += extra()
        return entries

    async def discover(self) -> Hits:
        for entry in self._entries():
            yield DiscoveryHit(entry.name, entry.run, help=entry.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for entry in self._entries():
            score = matcher.match(entry.name)
            if score > 0:
                yield Hit(score, matcher.highlight(entry.name), entry.run, help=entry.help)
