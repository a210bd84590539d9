"""Audit findings as tables: one row per run (its verdict and each finding), and the
runs flagged per task. `conductor runs audit` prints them; everything from a run is
shown as text, its control characters visible (findings quote the model's words).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from record.audit import FINDING_KINDS, AuditReport
from record.correctness import Correctness

if TYPE_CHECKING:
    from rich.table import Table

_VERDICT_STYLE = {"correct": "green", "wrong": "red"}

COLUMNS_NOTE = "columns: " + "; ".join(
    f"{badge} = {what}" for badge, what in FINDING_KINDS.values()
)


def findings_table(reports: list[tuple[AuditReport, Correctness]]) -> Table:
    from rich.table import Table
    from rich.text import Text

    from conductor_kernel.text.display import visible, visible_line

    runs = Table(title="findings per run", expand=True)
    for name in ("run", "task", "answer and findings"):
        runs.add_column(name, no_wrap=name != "answer and findings")
    for report, verdict in reports:
        text = "\n".join(f"[{f.badge}] {f.message}" for f in report.findings) or "-"
        # As text ("[ctx]" is not markup), visible: findings quote the model's words.
        cell = Text("answer " + visible(verdict.describe()) + "\n")
        cell.stylize(_VERDICT_STYLE.get(verdict.label, "dim"))
        runs.add_row(
            Text(visible_line(report.run_id)),
            Text(visible_line(report.task)),
            cell.append(visible(text)),
        )
    return runs


def summary_table(table: dict[str, dict[str, int]]) -> Table:
    """Runs audited and runs with each finding, per task."""
    from rich.table import Table
    from rich.text import Text

    from conductor_kernel.text.display import visible_line

    summary = Table(title="runs flagged, per task (of runs audited)")
    summary.add_column("task")
    summary.add_column("runs", justify="right")
    for kind in FINDING_KINDS:
        summary.add_column(FINDING_KINDS[kind][0], justify="right")
    for task, row in sorted(table.items()):
        summary.add_row(
            Text(visible_line(task)), str(row["runs"]), *(str(row.get(k, 0)) for k in FINDING_KINDS)
        )
    return summary
