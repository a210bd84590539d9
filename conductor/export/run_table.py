"""Runs as lines of a terminal: `conductor runs list` and `runs search` print them.

One line per run, never wider than the terminal: the correctness mark, the run's id,
status and findings in columns, then its question and answer cut to what is left.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING

from record.correctness import MARKS, UNSCORED, label_of

if TYPE_CHECKING:
    from rich.text import Text

    from transcripts.runs_schema import RunRecord


def run_lines(cells: Sequence[list[str]], width: int) -> list[Text]:
    """One line per run, never wider than `width`: the mark (✓ ✗ ·), the whole run id,
    status and findings in columns, then the question and answer cut to what is left
    (the time and task too where the line is wide enough)."""
    from rich.text import Text

    from conductor_kernel.text.display import visible

    def column(values: list[str], cap: int, name: str = "") -> int:
        return min(max([len(v) for v in values] + [len(name)]), cap)

    runs = column([c[0] for c in cells], 64, "run")
    status = column([c[3] for c in cells], 12, "status")
    findings = column([c[5] or "-" for c in cells], 24, "findings")
    wide = width >= runs + status + findings + 70
    task = column([c[6] or c[2] for c in cells], 20, "task") if wide else 0
    head = Text("  " + "run".ljust(runs) + " " + "status".ljust(status) + " ")
    head.append("findings".ljust(findings) + " ")
    if wide:
        head.append("when".ljust(11) + " " + "task".ljust(task) + " ")
    head.append("question → answer")
    head.stylize("bold")
    lines = [head]
    for run_id, when, method, stat, correct, found, task_name, _r, _c, q, a in cells:
        mark = MARKS.get(correct, MARKS[UNSCORED])
        style = {"correct": "green", "wrong": "red bold"}.get(correct, "dim")
        line = Text(mark + " ", style=style)
        line.append(visible(run_id).ljust(runs) + " ")
        line.append(_fit(visible(stat), status) + " ")
        line.append(_fit(visible(found) or "-", findings) + " ", style="yellow" if found else "dim")
        if wide:
            line.append(when.ljust(11) + " " + _fit(visible(task_name or method), task) + " ")
        line.append(visible(q))
        line.append(" → " + (visible(a) or "(no answer)"), style="bold")
        line.truncate(width, overflow="ellipsis")
        lines.append(line)
    return lines


def _fit(text: str, width: int) -> str:
    """`text` padded or cut (with …) to `width` cells."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= width:
        return set_cell_size(text, width)
    return set_cell_size(text, max(width - 1, 0)) + "…"


COLUMNS = (
    "run",
    "when",
    "method",
    "status",
    "correct",
    "findings",
    "task",
    "rounds",
    "cost",
    "question",
    "answer",
)


def correctness_label(row: RunRecord) -> str:
    """correct, wrong or unscored: the run's recorded verdict (runs.db `correct`)."""
    return label_of(row.get("correct"))


def run_cells(row: RunRecord) -> list[str]:
    """A run's cells, in COLUMNS' order, each on one line."""
    when = dt.datetime.fromtimestamp(row["started_at"] or 0).strftime("%m-%d %H:%M")
    return [
        str(row["run_id"]),
        when,
        str(row.get("method") or "meta"),
        str(row["status"] or ""),
        correctness_label(row),
        str(row.get("findings") or "").strip(),
        str(row.get("task") or ""),
        str(row["rounds"] or 0),
        f"${row['cost_usd'] or 0:.4f}",
        " ".join(str(row["question"] or "").split()),
        " ".join(str(row["final_answer"] or "").split()),
    ]
