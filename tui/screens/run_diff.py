"""Two runs side by side: the terminal diff (conductor/export/diff.py), in a screen.

Opened from the Runs screen (mark two runs with space, then press d). The diff is
computed in a thread; the screen shows the totals, then one line per same round and
a panel per changed one. `h` writes the HTML page of the same diff.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from conductor.export.diff import diff_renderables
from conductor_kernel.text.display import visible
from record.fold import outline_file
from record.home import home_dir
from transcripts.run_diff import RunDiff, diff_runs


class RunDiffScreen(Screen[None]):
    CSS_PATH = "run_diff.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="diff.back", tooltip="Back to the list of runs."),
        Binding(
            "h",
            "export_html",
            "HTML",
            id="diff.html",
            tooltip="Write this diff as one HTML page under the data directory.",
        ),
    ]

    def __init__(self, left: Path | str, right: Path | str) -> None:
        super().__init__()
        self.paths = (Path(left), Path(right))
        self.diff: RunDiff | None = None

    def compose(self) -> ComposeResult:
        yield Static("comparing…", id="diff-status")
        yield VerticalScroll(id="diff-body")
        yield Footer()

    def on_mount(self) -> None:
        self.compute()

    @work(thread=True, exclusive=True, group="diff")
    def compute(self) -> None:
        try:
            diff = diff_runs(outline_file(self.paths[0]), outline_file(self.paths[1]))
        except Exception as exc:  # an unreadable transcript: say so, keep the app
            self.app.call_from_thread(self._failed, str(exc))
            return
        # textual's parameter type with its result fixed to None: from an async method
        # alone, mypy cannot tell which side of `R | Awaitable[R]` to solve.
        show: Callable[..., Awaitable[None] | None] = self._show
        self.app.call_from_thread(show, diff)

    def _failed(self, message: str) -> None:
        # As text: the message quotes paths and transcript lines (a "[/q]" is no markup).
        self.query_one("#diff-status", Static).update(Text(f"cannot compare: {visible(message)}"))

    async def _show(self, diff: RunDiff) -> None:
        self.diff = diff
        changes = len(diff.changes)
        plural = "" if changes == 1 else "s"
        status = "the runs are the same" if diff.identical else f"{changes} difference{plural}"
        self.query_one("#diff-status", Static).update(
            f"{status} · h writes the HTML page · escape goes back"
        )
        body = self.query_one("#diff-body", VerticalScroll)
        await body.remove_children()
        await body.mount_all([Static(part, classes="diff-part") for part in diff_renderables(diff)])
        body.focus()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_export_html(self) -> None:
        if self.diff is None:
            self.notify("The diff is not ready yet.")
            return
        from conductor.export.html.diff_page import diff_html

        folder = home_dir() / "exports"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"diff-{self.diff.left.run_id}-{self.diff.right.run_id}.html"
        target.write_text(diff_html(self.diff), encoding="utf-8")
        self.notify(f"written to {target}", title="exported HTML")
