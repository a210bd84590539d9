"""The progress of a batch on a terminal, shared by every batch command (local,
comparison, Ray): a rich bar with done/total, accuracy so far, tokens, cost and ETA,
and one line per finished item above it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich and the batch's records are imported when a batch shows them
    from collections.abc import Callable

    from conductor.batch.records import ItemRecord, Tally


class Progress:
    """A rich progress bar: done/total, accuracy so far, tokens, cost, ETA."""

    def __init__(
        self,
        *,
        enabled: bool,
        console: Any = None,
        by_method: Callable[[ItemRecord | None], str] | None = None,
    ) -> None:
        self.enabled = enabled
        self.console = console  # None: rich's own (stdout)
        # A comparison: a line under the bar with each method's accuracy so far, given
        # each record (None: before the first); a pooled accuracy would mean nothing.
        self.by_method = by_method
        self._line = ""
        self._bar: Any = None
        self._task: Any = None

    def shown(self, tally: Tally) -> Any:
        from contextlib import nullcontext

        if not self.enabled:
            return nullcontext()
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        owner = self
        self._line = self.by_method(None) if self.by_method is not None else ""

        class _WithLine(Bar):
            def get_renderables(self) -> Any:
                yield from super().get_renderables()
                if owner._line:
                    from rich.text import Text

                    yield Text(owner._line)

        self._bar = _WithLine(
            TextColumn("[bold]batch"),
            BarColumn(),
            MofNCompleteColumn(),
            *([] if self.by_method else [TextColumn("acc {task.fields[acc]}")]),
            TextColumn("{task.fields[tokens]} tok"),
            TextColumn("${task.fields[cost]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self._task = self._bar.add_task("batch", total=tally.total, completed=tally.done)
        self._fields(tally)
        return self._bar

    def _fields(self, tally: Tally) -> None:
        acc = "-" if tally.accuracy is None else f"{tally.accuracy:.1f}%"
        self._bar.update(
            self._task,
            completed=tally.done,
            acc=acc,
            tokens=f"{tally.tokens:,}",
            cost=f"{tally.cost_usd:.4f}",
        )

    def update(self, record: ItemRecord, tally: Tally) -> None:
        from conductor.batch.store import is_finished

        if self.by_method is not None:
            self._line = self.by_method(record)
        if self._bar is not None and is_finished(record):
            self._fields(tally)
        if self._bar is not None:
            # One line per finished item, above the bar: what the bar's totals are made of.
            from rich.text import Text

            self._bar.console.print(Text(item_line(record)), soft_wrap=True)


def item_line(record: ItemRecord) -> str:
    """How one item ended, on one line: id, status, verdict or cause, seconds."""
    from conductor.batch.records import is_scored

    status = str(record.get("status"))
    if not record.get("final"):
        how = "interrupted (runs again)"
    elif status == "error":
        error = record.get("error") or {}
        how = f"error ({error.get('cause', 'runner')}): {error.get('message', '')}"
    elif is_scored(record):
        right = (record.get("score") or {}).get("correct")
        how = f"{status}, {'correct' if right else 'wrong'}"
    else:
        how = status + (f": {record['reason']}" if record.get("reason") else "")
    name = record.get("label") or record.get("item_id")
    line = f"{name} {how} ({float(record.get('duration_s') or 0):.1f} s)"
    from conductor_kernel.text.display import visible_line

    return visible_line(" ".join(line.split()))[:300]
