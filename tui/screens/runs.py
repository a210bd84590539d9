"""Runs: every recorded run, one line each, with full-text search, filters and sorts on
outcome, correctness (✓ correct, ✗ wrong, · unscored), finding, task, model and method.

Rows come from `runs.db` through `transcripts.index.RunIndex`, which holds the queries;
correctness and findings are columns there (recorded when a run ends or is imported).
A run indexed before runs.db had findings gets its badges computed from its transcript
in a thread, filled in as they come.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Select, Static

from conductor_kernel.errors import UserFacingError
from conductor_kernel.text.counts import plural
from record.correctness import LABELS
from record.findings import BADGES
from transcripts.index import FILTER_COLUMNS, RunFilter, RunIndex, RunRecord
from transcripts.runs_schema import SORTS
from tui.widgets.key_bar import KeyBar
from tui.widgets.paged_table import PagedTable
from tui.widgets.run_rows import (
    COLUMNS,
    RunQuery,
    badges_for,
    indexed_badges,
    one_line,
    parse_since,
    run_cells,
)
from tui.widgets.typed_input import TypedInput

if TYPE_CHECKING:
    from tui.app import ConductorApp


class RunsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+f",
            "focus_search",
            "Search",
            id="runs.search",
            tooltip="Full-text search over questions and answers.",
        ),
        Binding("ctrl+r", "refresh", "Refresh", id="runs.refresh", tooltip="Read runs.db again."),
        Binding(
            "ctrl+o",
            "open_selected",
            "Open",
            id="runs.open",
            tooltip="Open the selected run (or press Enter on it).",
        ),
        Binding(
            "space",
            "mark",
            "Mark",
            id="runs.mark",
            tooltip="Mark the selected run for a diff (two at most).",
        ),
        Binding(
            "d",
            "diff",
            "Diff",
            id="runs.diff",
            tooltip="Compare the two marked runs (or the marked one with the selected).",
        ),
        Binding(
            "ctrl+l",
            "clear_filters",
            "Clear",
            id="runs.clear",
            tooltip="Clear the search and every filter.",
        ),
    ]

    @dataclass
    class Badges(Message, bubble=False):
        run_id: str
        badges: str

    app: ConductorApp

    def __init__(self) -> None:
        super().__init__()
        self.index: RunIndex | None = None
        self.marked: list[str] = []  # run ids marked for a diff, oldest first
        self._failure: str | None = None  # the last read failure said

    def compose(self) -> ComposeResult:
        yield TypedInput(placeholder="search questions and answers (full text)", id="search")
        with Horizontal(id="filters"):
            yield Select[str]([], prompt="task", id="filter-task")
            yield Select[str]([], prompt="outcome", id="filter-status")
            yield Select[str]([(v, v) for v in LABELS], prompt="correct?", id="filter-correctness")
            yield Select[str](
                [("any finding", "any"), *((b, b) for b in BADGES)],
                prompt="finding",
                id="filter-finding",
            )
            yield Select[str]([], prompt="model", id="filter-model")
            yield Select[str]([], prompt="method", id="filter-method")
            yield TypedInput(placeholder="since YYYY-MM-DD", id="filter-since")
            yield Select[str](
                [(name, name) for name in SORTS if name != "started"],
                prompt="sort",  # newest first until one is chosen
                id="sort",
            )
        yield PagedTable(COLUMNS, run_cells, lambda row: str(row["run_id"]), id="runs")
        yield Static(id="runs-info")
        yield KeyBar()

    def on_mount(self) -> None:
        self.index = RunIndex()
        self.query_one("#runs", PagedTable).focus()

    def on_screen_resume(self) -> None:
        """Read runs.db when the screen is first shown and each time it is shown again
        (a run may have ended, or been imported, meanwhile)."""
        if self.index is not None:
            self._fill_filters()
            self.refresh_rows(keep_cursor=True)

    def _fill_filters(self) -> None:
        assert self.index is not None
        for column in FILTER_COLUMNS:
            try:
                values = self.index.distinct_values(column)
            except UserFacingError as exc:  # a locked or damaged runs.db: say so, keep the screen
                self.notify(str(exc), severity="error", title="runs.db")
                return
            select = self.query_one(f"#filter-{column}", Select)
            current = select.value
            select.set_options([(v, v) for v in values])
            if current in values:
                select.value = current

    def _filters(self) -> RunFilter | None:
        def chosen(name: str) -> str | None:
            value = self.query_one(f"#filter-{name}", Select).value
            return value if isinstance(value, str) else None

        try:
            since = parse_since(self.query_one("#filter-since", Input).value)
        except ValueError:
            self.notify(
                "Write the date as YYYY-MM-DD, e.g. 2025-01-31.", severity="error", title="since"
            )
            return None
        return RunFilter(
            task=chosen("task"),
            status=chosen("status"),
            model=chosen("model"),
            method=chosen("method"),
            since=since,
            correctness=chosen("correctness"),
            finding=chosen("finding"),
        )

    def _sort(self) -> str:
        value = self.query_one("#sort", Select).value
        return value if isinstance(value, str) else "started"

    def refresh_rows(self, *, keep_cursor: bool = False) -> None:
        """Show the runs the search, filters and sort choose (read as they come into
        view: the list is as quick with 10,000 runs as with ten)."""
        assert self.index is not None
        filters = self._filters()
        if filters is None:
            return
        query = RunQuery(
            self.index,
            self.query_one("#search", Input).value,
            filters,
            self._sort(),
            failed=self._read_failed,
            read=self._page_read,
        )
        self._failure = None
        try:
            self.query_one("#runs", PagedTable).show(query, keep_cursor=keep_cursor)
        except UserFacingError as exc:  # a locked or damaged runs.db: say so, keep the rows
            self.notify(str(exc), severity="error", title="runs.db")
            return
        self._show_info()

    def _read_failed(self, exc: UserFacingError) -> None:
        """Say once per listing that runs.db could not be read; keep the screen."""
        if self._failure != str(exc):
            self._failure = str(exc)
            self.notify(str(exc), severity="error", title="runs.db")

    def _page_read(self, rows: list[RunRecord]) -> None:
        """Audit, in a thread, the runs of a page read that runs.db has no findings for."""
        unindexed = [(r["run_id"], r["path"] or "") for r in rows if indexed_badges(r) is None]
        if any(path for _, path in unindexed):
            self.compute_badges([(run_id, path) for run_id, path in unindexed if path])

    def _show_info(self) -> None:
        shown = self.query_one("#runs", PagedTable).row_count
        info = f"{plural(shown, 'run')} · Enter opens one"
        if self.marked:
            info += " · marked for diff: " + ", ".join(self.marked) + " (d compares)"
        else:
            info += " · space marks two runs, d compares them"
        self.query_one("#runs-info", Static).update(Text(info))

    def _selected(self) -> str | None:
        return self.query_one("#runs", PagedTable).cursor_key

    def action_mark(self) -> None:
        run_id = self._selected()
        if run_id is None:
            return
        if run_id in self.marked:
            self.marked.remove(run_id)
        else:
            self.marked = [*self.marked, run_id][-2:]
        self._show_info()

    def action_diff(self) -> None:
        chosen = list(self.marked)
        selected = self._selected()
        if len(chosen) == 1 and selected and selected not in chosen:
            chosen.append(selected)
        if len(chosen) != 2:
            self.notify("Mark two runs with space (or one, and select the other), then d.")
            return
        assert self.index is not None
        paths = []
        for run_id in chosen:
            try:
                row = self.index.get(run_id)
            except UserFacingError as exc:
                self.notify(str(exc), severity="error", title="runs.db")
                return
            if row is None or not row.get("path") or not Path(row["path"]).exists():
                self.notify(f"run {run_id} has no transcript to compare.", severity="error")
                return
            paths.append(row["path"])
        from tui.screens.run_diff import RunDiffScreen

        self.app.push_screen(RunDiffScreen(paths[0], paths[1]))

    @work(thread=True, group="badges")
    def compute_badges(self, runs: list[tuple[str, str]]) -> None:
        for run_id, path in runs:
            try:
                badges = badges_for(path)
            except Exception as exc:  # one unreadable transcript must not stop the rest
                badges = f"unreadable: {exc}"[:20]
            self.post_message(self.Badges(run_id, badges))

    def on_runs_screen_badges(self, message: Badges) -> None:
        self.query_one("#runs", PagedTable).update_cell(
            message.run_id, "findings", one_line(message.badges)
        )

    @on(Input.Submitted, "#search")
    @on(Input.Submitted, "#filter-since")
    @on(Select.Changed)
    def _filters_changed(self) -> None:
        self.refresh_rows()

    @on(PagedTable.Selected, "#runs")
    def _row_selected(self, event: PagedTable.Selected) -> None:
        self.app.open_run(event.key)

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_refresh(self) -> None:
        self._fill_filters()
        self.refresh_rows()

    def action_open_selected(self) -> None:
        run_id = self._selected()
        if run_id is None:
            self.notify("No run to open.")
            return
        self.app.open_run(run_id)

    def action_clear_filters(self) -> None:
        self.query_one("#search", Input).value = ""
        self.query_one("#filter-since", Input).value = ""
        for name in (*FILTER_COLUMNS, "correctness", "finding"):
            self.query_one(f"#filter-{name}", Select).clear()
        self.query_one("#sort", Select).clear()
        self.refresh_rows()
