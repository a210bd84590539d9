"""A table of any number of rows, one line each, that reads only the rows it shows.

A `DataTable` holds every row it may show: 10,000 runs took seconds to add and to
scroll. `PagedTable` asks a `RowSource` for how many rows there are and for pages of
them as lines come into view (a few pages are kept), so opening, scrolling and jumping
to the last row cost the same at any size. The header stays on the first line.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

Row = Any  # a row as its source gives it (a mapping of column to value)

PAGE = 100  # rows read at once
KEPT_PAGES = 12  # pages kept read (the view and its neighbours, at any height)


class RowSource(Protocol):
    """Where the rows come from: how many, and a page of them in order."""

    def count(self) -> int: ...

    def rows(self, offset: int, limit: int) -> Sequence[Row]: ...


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    width: int


class _Empty:
    def count(self) -> int:
        return 0

    def rows(self, offset: int, limit: int) -> Sequence[Row]:
        return []


class PagedTable(ScrollView, can_focus=True):
    """One line a row, the cursor on one of them; Enter (or a click on the cursor's
    row) posts `Selected` with the row's key."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "Up", id="table.up", tooltip="The row above.", show=False),
        Binding("down", "cursor(1)", "Down", id="table.down", tooltip="The row below.", show=False),
        Binding(
            "pageup", "page(-1)", "Page up", id="table.pageup", tooltip="A screen up.", show=False
        ),
        Binding(
            "pagedown",
            "page(1)",
            "Page down",
            id="table.pagedown",
            tooltip="A screen down.",
            show=False,
        ),
        Binding("home", "first", "First", id="table.home", tooltip="The first row.", show=False),
        Binding("end", "last", "Last", id="table.end", tooltip="The last row.", show=False),
        Binding("enter", "select", "Open", id="table.select", tooltip="Open this row.", show=False),
        Binding("left", "scroll_left", "Left", id="table.left", tooltip="Scroll left.", show=False),
        Binding(
            "right", "scroll_right", "Right", id="table.right", tooltip="Scroll right.", show=False
        ),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "paged-table--header",
        "paged-table--cursor",
        "paged-table--odd",
    }

    class Selected(Message):
        """Enter on a row, or a click on the cursor's row."""

        def __init__(self, table: PagedTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> PagedTable:
            return self.table

    def __init__(
        self,
        columns: Sequence[Column],
        cells: Callable[[Row], Mapping[str, Text | str]],
        key: Callable[[Row], str],
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.columns = list(columns)
        self._cells = cells
        self._key = key
        self.source: RowSource = _Empty()
        self.row_count = 0
        self.cursor = 0
        self._pages: OrderedDict[int, Sequence[Row]] = OrderedDict()
        self._changed: dict[tuple[str, str], Text | str] = {}  # (key, column) -> cell
        self._lines: OrderedDict[int, tuple[str, list[tuple[str, Style | None]]]] = OrderedDict()
        self.width_needed = sum(c.width + 2 for c in self.columns)

    # -- the rows -------------------------------------------------------------------------
    def show(self, source: RowSource, *, keep_cursor: bool = False) -> None:
        """Show `source`'s rows, read again; the cursor to the top unless kept. If
        counting them fails, the rows shown before stay."""
        count = source.count()
        self.source = source
        self._pages.clear()
        self._changed.clear()
        self._lines.clear()
        self.row_count = count
        self.virtual_size = Size(self.width_needed, self.row_count + 1)
        if keep_cursor:
            self.cursor = max(0, min(self.cursor, self.row_count - 1))
        else:
            self.cursor = 0
            self.scroll_to(y=0, animate=False, immediate=True)
        self._keep_cursor_in_view()
        self.refresh()

    def row(self, index: int) -> Row | None:
        """The `index`-th row (read with its page if not yet), None past the end."""
        if not 0 <= index < self.row_count:
            return None
        number = index // PAGE
        page = self._pages.get(number)
        if page is None:
            page = self.source.rows(number * PAGE, PAGE)
            self._pages[number] = page
            while len(self._pages) > KEPT_PAGES:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(number)
        at = index - number * PAGE
        return page[at] if at < len(page) else None

    def key_at(self, index: int) -> str | None:
        row = self.row(index)
        return None if row is None else self._key(row)

    @property
    def cursor_key(self) -> str | None:
        """The key of the row under the cursor."""
        return self.key_at(self.cursor)

    def row_keys(self, limit: int | None = None) -> list[str]:
        """The keys of the first `limit` rows (all of them if None), in order."""
        count = self.row_count if limit is None else min(limit, self.row_count)
        return [k for k in (self.key_at(i) for i in range(count)) if k is not None]

    def loaded(self) -> list[Row]:
        """The rows read so far (those on screen and near it)."""
        return [row for page in self._pages.values() for row in page]

    def get_cell(self, key: str, column: str) -> Text | str:
        """A shown cell of a row that has been read; KeyError if none has this key."""
        if (key, column) in self._changed:
            return self._changed[key, column]
        for row in self.loaded():
            if self._key(row) == key:
                return self._cells(row)[column]
        raise KeyError(key)

    def update_cell(self, key: str, column: str, value: Text | str) -> None:
        """Show `value` in a row's cell (until the rows are read again)."""
        self._changed[key, column] = value
        self._lines.clear()
        self.refresh()

    # -- moving ---------------------------------------------------------------------------
    @property
    def _rows_high(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)  # less the header

    def move_cursor(self, to: int) -> None:
        before, top = self.cursor, round(self.scroll_y)
        self.cursor = max(0, min(to, self.row_count - 1))
        self._keep_cursor_in_view()
        if round(self.scroll_y) == top:  # only the two rows changed (row i is line i + 1)
            self.refresh_line(before + 1)
            self.refresh_line(self.cursor + 1)
        else:
            self.refresh()

    def _keep_cursor_in_view(self) -> None:
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + self._rows_high:
            self.scroll_to(y=self.cursor - self._rows_high + 1, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor + step)

    def action_page(self, pages: int) -> None:
        self.move_cursor(self.cursor + pages * self._rows_high)

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(self.row_count - 1)

    def action_select(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(self.Selected(self, key))

    def on_click(self, event: Click) -> None:
        if event.y < 1:
            return
        index = round(self.scroll_y) + event.y - 1
        if index >= self.row_count:
            return
        if index == self.cursor:
            self.action_select()
        else:
            self.move_cursor(index)

    # -- drawing --------------------------------------------------------------------------
    # A row's cells are cut to their columns once (`_prepared`, kept with the pages); a
    # frame only adds the row's background: each key redraws a screen of rows.
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            style = base + self.get_component_rich_style("paged-table--header")
            header = [self._cell(Text(c.label), c.width) for c in self.columns]
            return self._strip(header, style, width)
        index = round(self.scroll_y) + y - 1
        cells = self._prepared(index)
        if cells is None:
            return Strip.blank(width, base)
        style = base
        if index % 2:
            style += self.get_component_rich_style("paged-table--odd")
        if index == self.cursor:
            style += self.get_component_rich_style("paged-table--cursor")
        return self._strip(cells, style, width)

    def _prepared(self, index: int) -> list[tuple[str, Style | None]] | None:
        """The `index`-th row's cells, each cut to its column, with its own style."""
        row = self.row(index)
        if row is None:
            return None
        key = self._key(row)
        found = self._lines.get(index)
        if found is not None and found[0] == key:
            return found[1]
        values = self._cells(row)
        cells = [
            self._cell(self._changed.get((key, c.key), values.get(c.key, "")), c.width)
            for c in self.columns
        ]
        self._lines[index] = (key, cells)
        while len(self._lines) > KEPT_PAGES * PAGE:
            self._lines.popitem(last=False)
        return cells

    @staticmethod
    def _cell(value: Text | str, width: int) -> tuple[str, Style | None]:
        """A cell's text cut (with …) or padded to `width`, a space either side."""
        if isinstance(value, Text):
            text, style = value.plain, value.style or None
            if isinstance(style, str):
                style = Style.parse(style)
        else:
            text, style = value, None
        # Measured only as far as can show (a cell may hold a whole question).
        cut = len(text) > 4 * width
        text = text[: 4 * width]
        if cut or cell_len(text) > width:
            text = set_cell_size(text, width - 1) + "…"
        return f" {set_cell_size(text, width)} ", style

    def _strip(self, cells: list[tuple[str, Style | None]], style: Style, width: int) -> Strip:
        segments = [Segment(text, style + own if own else style) for text, own in cells]
        line = Strip(segments, self.width_needed)
        x = round(self.scroll_x)
        if x or width < self.width_needed:
            line = line.crop(x, x + width)
        return line.extend_cell_length(width, style)
