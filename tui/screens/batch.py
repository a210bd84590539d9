"""Batch: a running or finished batch, per-item status, accuracy so far, tokens, cost, ETA.

It reads the batch's folder (conductor/batch/store.py lays it out: batch.json, results.jsonl,
runs/) and polls it twice a second, so it watches a batch run by `conductor batch` in
another terminal as well as one that has ended. Enter on an item opens its run.

A comparison of methods (`conductor batch --methods`) shows one row per task item and
one column per method (✓ right, ✗ wrong, … running or to run again, - unscored), with
each method's accuracy so far above; Enter on a cell opens that method's run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.option_list import Option

from conductor.batch.records import ItemRecord, Tally
from conductor.batch.store import MANIFEST_FILE, RESULTS_FILE, ResultsLog, batches_dir
from conductor.methods import METHODS, label
from conductor_kernel.text.counts import plural
from conductor_kernel.text.display import visible_line
from record.correctness import CORRECT, MARKS, WRONG
from tui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from tui.app import ConductorApp


def batch_total(folder: Path, manifest: dict[str, Any], records: int) -> int:
    """Runs in scope: from the final report of a batch whose last session ended, else
    the task file (and the last session's --limit), times the methods of a comparison.
    A resumed batch's report is the earlier session's (a resumed, enlarged batch read
    it as "34/30 done · ETA done" while it ran on)."""
    sessions = manifest.get("sessions") or [{}]
    report = folder / "report.json"
    ended = bool(sessions[-1].get("ended_at"))
    if report.exists() and ended:
        try:
            items = json.loads(report.read_text(encoding="utf-8"))["items"]
            return max(int(items.get("pairs", items["total"])), records)
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    limit = sessions[-1].get("limit")
    methods = len(sessions[-1].get("methods") or [None])
    task_file = Path((manifest.get("identity") or {}).get("task_file") or "")
    total = records
    if task_file.is_file() and not (manifest.get("identity") or {}).get("replay"):
        with task_file.open(encoding="utf-8", errors="replace") as fh:
            lines = sum(1 for line in fh if line.strip())
            if task_file.suffix.lower() == ".csv":
                lines -= 1  # the header
        total = (min(lines, int(limit)) if limit else lines) * methods
    elif limit:
        total = min(total, int(limit) * methods)
    return max(total, records)


ITEM_COLUMNS = (
    ("item", None),  # as wide as the longest id: ids often share a prefix
    ("status", 10),
    ("ok", 2),
    ("rnd", 3),
    ("tokens", 7),
    ("cost", 7),
    ("time", 6),
    ("answer", 30),
)


def methods_of(records: dict[str, ItemRecord]) -> list[str]:
    """A comparison's methods, in Table 1's order (empty for a batch of one method)."""
    seen = {str(r["method"]) for r in records.values() if r.get("method")}
    return [m for m in METHODS if m in seen] + sorted(seen - set(METHODS))


def by_item(records: dict[str, ItemRecord]) -> dict[str, dict[str, ItemRecord]]:
    """A comparison's records as task item -> method -> record, in the order they came."""
    table: dict[str, dict[str, ItemRecord]] = {}
    for record in records.values():
        item = str(record.get("task_item_id") or record.get("item_id", ""))
        table.setdefault(item, {})[str(record.get("method", ""))] = record
    return table


def _mark(record: ItemRecord) -> str:
    score = record.get("score") or {}
    if not record.get("final"):
        return "…"
    if "error" in score or not score.get("scored"):
        return "-"
    return MARKS[CORRECT] if score.get("correct") else MARKS[WRONG]


class BatchScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+o",
            "open_item",
            "Open run",
            id="batch.open",
            tooltip="Open the selected item's run (or press Enter on it).",
        ),
        Binding(
            "ctrl+r",
            "refresh",
            "Refresh",
            id="batch.refresh",
            tooltip="Look for batches and results again.",
        ),
    ]

    app: ConductorApp

    def __init__(self) -> None:
        super().__init__()
        self.folder: Path | None = None
        self.records: dict[str, ItemRecord] = {}
        self.tally = Tally()
        self.state = ""
        self._seen: tuple[float, int] | None = None
        self.methods: list[str] = []  # a comparison's methods; empty for one method
        self._columns: tuple[str, ...] = ()

    def compose(self) -> ComposeResult:
        with Horizontal(id="batch-body"):
            yield OptionList(id="batches")
            with Vertical(id="batch-main"):
                yield Static(
                    "No batch yet: run `conductor batch TASKFILE --task NAME`.", id="batch-summary"
                )
                yield DataTable(id="items", cursor_type="row", zebra_stripes=True)
        yield KeyBar()

    def on_mount(self) -> None:
        self._set_columns([])
        self.action_refresh()
        if self.app.batch_dir is not None:
            self.watch_folder(self.app.batch_dir)
        self.set_interval(0.5, self.poll)
        self.set_interval(1.0, self._discover)

    # -- which batch -----------------------------------------------------------------
    def action_refresh(self) -> None:
        self._discover()
        self._seen = None
        self.poll()

    def _discover(self) -> None:
        """List the batch folders (newest first); watch the newest if none is chosen."""
        root = batches_dir()
        folders = (
            sorted(
                (
                    p
                    for p in root.glob("*")
                    if (p / MANIFEST_FILE).exists() or (p / RESULTS_FILE).exists()
                ),
                key=lambda p: p.stat().st_mtime,
                reverse=True,
            )
            if root.is_dir()
            else []
        )
        batches = self.query_one("#batches", OptionList)
        names = [p.name for p in folders]
        if names != [
            str(batches.get_option_at_index(i).prompt) for i in range(batches.option_count)
        ]:
            batches.clear_options()
            batches.add_options([Option(p.name, id=str(p)) for p in folders])
        if folders and self.folder is None:
            self.watch_folder(folders[0])

    @on(OptionList.OptionSelected, "#batches")
    def _batch_chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option_id:
            self.watch_folder(Path(event.option_id))

    def watch_folder(self, folder: Path) -> None:
        self.folder, self.records, self._seen = folder, {}, None
        self.query_one("#items", DataTable).clear()
        self.poll()

    def _set_columns(self, methods: list[str]) -> None:
        """The item columns of one method's batch, or an item and a column per method."""
        columns = ("item", *methods) if methods else tuple(name for name, _ in ITEM_COLUMNS)
        if columns == self._columns:
            return
        table = self.query_one("#items", DataTable)
        table.clear(columns=True)
        if methods:
            table.cursor_type = "cell"
            table.add_column("item", key="item")
            for method in methods:
                table.add_column(label(method), key=method, width=max(4, len(label(method))))
        else:
            table.cursor_type = "row"
            for name, width in ITEM_COLUMNS:
                table.add_column(name, key=name, width=width)
        self.methods, self._columns = methods, columns

    # -- reading it ---------------------------------------------------------------------
    def poll(self) -> None:
        if self.folder is None:
            return
        results = self.folder / RESULTS_FILE
        stat = results.stat() if results.exists() else None
        seen = (stat.st_mtime, stat.st_size) if stat else (0.0, 0)
        manifest = self._manifest()
        state = self._state(manifest)
        if seen == self._seen and state == self.state:
            return
        self._seen, self.state = seen, state
        self.records = ResultsLog(results).read()
        self.tally = Tally(total=batch_total(self.folder, manifest, len(self.records)))
        for record in self.records.values():
            self.tally.add(record)
        self._fill_items()
        self._fill_summary(manifest)

    def _manifest(self) -> dict[str, Any]:
        assert self.folder is not None
        try:
            data = json.loads((self.folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @staticmethod
    def _state(manifest: dict[str, Any]) -> str:
        sessions = manifest.get("sessions") or []
        if not sessions:
            return "unknown"
        last = sessions[-1]
        if "ended_at" not in last:
            return "running"
        return f"stopped: {last['stopped']}" if last.get("stopped") else "finished"

    def _fill_items(self) -> None:
        self._set_columns(methods_of(self.records))
        if self.methods:
            self._fill_comparison()
            return
        table = self.query_one("#items", DataTable)
        existing = {key.value for key in table.rows}
        for item_id, record in self.records.items():
            usage = record.get("usage") or {}
            cells = (
                # From a task file: text, never markup. Its line and first words, where
                # the id is a hash.
                Text(visible_line(str(record.get("label") or item_id))),
                record.get("status", ""),
                _mark(record),
                str(record.get("rounds", 0)),
                f"{int(usage.get('input_tokens', 0)) + int(usage.get('output_tokens', 0)):,}",
                f"${float(usage.get('cost_usd', 0.0)):.3f}",
                f"{float(record.get('duration_s', 0.0)):.1f}s",
                Text(visible_line(" ".join(str(record.get("answer") or "").split())[:60])),
            )
            if item_id in existing:
                for column, value in zip(
                    ("status", "ok", "rnd", "tokens", "cost", "time", "answer"),
                    cells[1:],
                    strict=True,
                ):
                    table.update_cell(item_id, column, value)
            else:
                table.add_row(*cells, key=item_id)

    def _fill_comparison(self) -> None:
        table = self.query_one("#items", DataTable)
        existing = {key.value for key in table.rows}
        for item_id, runs in by_item(self.records).items():
            cells = [_mark(runs[m]) if m in runs else "" for m in self.methods]
            if item_id in existing:
                for method, value in zip(self.methods, cells, strict=True):
                    table.update_cell(item_id, method, value)
            else:
                name = next((str(r["label"]) for r in runs.values() if r.get("label")), item_id)
                table.add_row(Text(visible_line(name)), *cells, key=item_id)

    def _method_line(self) -> str:
        """Each method's accuracy so far: correct of scored."""
        parts = []
        for method in self.methods:
            tally = Tally()
            for record in self.records.values():
                if record.get("method") == method:
                    tally.add(record)
            acc = f"{tally.accuracy:.1f}%" if tally.accuracy is not None else "n/a"
            parts.append(f"{label(method)} {acc} ({tally.correct}/{tally.scored})")
        return " · ".join(parts)

    def _fill_summary(self, manifest: dict[str, Any]) -> None:
        assert self.folder is not None
        t = self.tally
        accuracy = f"{t.accuracy:.1f}%" if t.accuracy is not None else "n/a"
        text = Text()
        text.append(f"{self.folder.name}", "bold")
        text.append(f"  {self.state}\n", "green" if self.state == "finished" else "yellow")
        text.append(
            f"{t.done}/{t.total} done · accuracy so far {accuracy} ({t.correct}/{t.scored} scored)"
            f" · {t.tokens:,} tokens · ${t.cost_usd:.4f} · {plural(t.errors, 'error')} · ETA {self._eta(manifest)}"
        )
        if self.methods:
            text.append("\n" + self._method_line())
        self.query_one("#batch-summary", Static).update(text)

    def _eta(self, manifest: dict[str, Any]) -> str:
        remaining = self.tally.total - self.tally.done
        if remaining <= 0:
            return "done"
        if self.state != "running":
            return "-"
        session = (manifest.get("sessions") or [{}])[-1]
        number, started = session.get("number"), session.get("started_at")
        finished_now = sum(
            1 for r in self.records.values() if r.get("session") == number and r.get("final")
        )
        if not started or not finished_now:
            return "…"
        rate = finished_now / max(1e-6, time.time() - float(started))
        return f"{remaining / rate:.0f} s"

    # -- opening an item ---------------------------------------------------------------------
    @on(DataTable.RowSelected, "#items")
    def _item_selected(self, event: DataTable.RowSelected) -> None:
        self._open(event.row_key.value)

    @on(DataTable.CellSelected, "#items")
    def _cell_selected(self, event: DataTable.CellSelected) -> None:
        self._open_cell(event.cell_key.row_key.value, event.cell_key.column_key.value)

    def action_open_item(self) -> None:
        table = self.query_one("#items", DataTable)
        if not table.row_count:
            self.notify("No item to open yet.")
            return
        row_key, column_key = table.coordinate_to_cell_key(table.cursor_coordinate)
        if self.methods:
            self._open_cell(row_key.value, column_key.value)
        else:
            self._open(row_key.value)

    def _open_cell(self, item_id: str | None, column: str | None) -> None:
        """A comparison's cell: that method's run of that item (the first method's on
        the item's own column)."""
        runs = by_item(self.records).get(item_id or "", {})
        method = (
            column if column in runs else next(iter(m for m in self.methods if m in runs), None)
        )
        record = runs.get(method or "")
        if record is not None:
            self._open(str(record.get("item_id", "")))

    def _open(self, item_id: str | None) -> None:
        record = self.records.get(item_id or "")
        if record is None or self.folder is None:
            return
        transcript = record.get("transcript")
        if not transcript or not (self.folder / transcript).exists():
            self.notify(f"item {item_id} has no transcript (it failed before its run began).")
            return
        self.app.open_run(str(self.folder / transcript))
