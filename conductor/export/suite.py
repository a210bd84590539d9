"""A suite's table, laid out as the paper's Table 1: tasks as rows, methods as columns,
and a macro-average row (each task weighing the same).

`conductor batch A.jsonl B.jsonl --methods ...` fills it from its comparisons, and
`conductor score DIR...` from published outputs (a folder per method, a file per task).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conductor.methods import METHODS, label
from conductor_kernel.text.display import visible_line

# The data README's row order for the development tasks; other tasks follow as they come.
TASK_ORDER = (
    "GameOf24",
    "geometric_shapes",
    "multistep_arithmetic_two",
    "word_sorting",
    "MGSM_ES",
    "MGSM_FR",
)


@dataclass(frozen=True)
class Cell:
    correct: int
    scored: int

    @property
    def percent(self) -> float | None:
        return 100.0 * self.correct / self.scored if self.scored else None


@dataclass
class SuiteTable:
    title: str
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)  # (task, method)
    note: str = ""

    def add(self, task: str, method: str, correct: int, scored: int) -> None:
        self.cells[(task, method)] = Cell(correct, scored)

    @property
    def tasks(self) -> list[str]:
        seen = list(dict.fromkeys(task for task, _ in self.cells))
        known = [t for t in TASK_ORDER if t in seen]
        return known + [t for t in seen if t not in known]

    @property
    def methods(self) -> list[str]:
        seen = list(dict.fromkeys(method for _, method in self.cells))
        known = [m for m in METHODS if m in seen]
        return known + [m for m in seen if m not in known]

    def macro(self, method: str) -> float | None:
        """The mean of the tasks' accuracies, when the method has one for every task."""
        values = [self.cells.get((task, method)) for task in self.tasks]
        percents = [c.percent for c in values if c is not None]
        if len(percents) != len(values) or any(p is None for p in percents):
            return None
        return sum(p for p in percents if p is not None) / len(percents)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "tasks": self.tasks,
            "methods": self.methods,
            "cells": {
                task: {
                    m: {"correct": c.correct, "scored": c.scored, "percent": _round(c.percent)}
                    for m in self.methods
                    if (c := self.cells.get((task, m))) is not None
                }
                for task in self.tasks
            },
            "macro_average": {m: _round(self.macro(m)) for m in self.methods},
            "note": self.note,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _cell(cell: Cell | None) -> str:
    if cell is None or cell.percent is None:
        return "-"
    return f"{cell.percent:.1f}"


def rows(table: SuiteTable) -> list[list[str]]:
    """The table's body as text cells: a row per task, then the macro average."""
    body = [
        [visible_line(task)] + [_cell(table.cells.get((task, m))) for m in table.methods]
        for task in table.tasks
    ]
    macro = [f"{v:.1f}" if (v := table.macro(m)) is not None else "-" for m in table.methods]
    body.append([f"macro average ({len(table.tasks)} tasks)", *macro])
    return body


def headings(table: SuiteTable) -> list[str]:
    return ["task", *(label(m) for m in table.methods)]


def render_markdown(table: SuiteTable) -> str:
    heads = headings(table)
    lines = [
        f"**{table.title}**",
        "",
        "| " + " | ".join(heads) + " |",
        "| --- |" + " ---: |" * (len(heads) - 1),
    ]
    body = rows(table)
    lines += ["| " + " | ".join(row) + " |" for row in body[:-1]]
    lines.append("| " + " | ".join(f"**{c}**" for c in body[-1]) + " |")
    if table.note:
        lines += ["", table.note]
    return "\n".join(lines)


def rich_table(table: SuiteTable) -> Any:
    from rich.table import Table

    out = Table(title=table.title, caption=table.note or None)
    for i, head in enumerate(headings(table)):
        out.add_column(head, justify="left" if i == 0 else "right")
    body = rows(table)
    for row in body[:-1]:
        out.add_row(*row)
    out.add_row(*body[-1], style="bold")
    return out
