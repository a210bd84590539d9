"""Scores of task files and batches as tables: the Table 1 layout (`conductor score
FOLDER...`), one row per file for the terminal, and the items where our scorer and the
paper's rule disagree (`--diff`). `conductor score` prints them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from record.correctness import CORRECT, MARKS, WRONG

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from conductor.scoring.files import FileScore


def suite_tables(tallies: list[FileScore], methods: dict[str, str]) -> dict[str, Any]:
    """The Table 1 layout of the tallies, by the paper's rule and by ours."""
    from conductor.export.suite import SuiteTable

    tables = {
        "paper": SuiteTable(
            "Accuracy (%) by the paper's rule",
            note="The paper's scoring rules re-implemented (docs/scoring.md).",
        ),
        "ours": SuiteTable(
            "Accuracy (%) by our scorers",
            note="Where ours and the paper's differ, `--diff` lists every item.",
        ),
    }
    for t in tallies:
        for rule, table in tables.items():
            table.add(t.task, t.method or methods.get(t.file, ""), t.correct(rule), t.n)
    return tables


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def score_table(tallies: list[FileScore], rule: str) -> Table:
    """One row per file: items, correct by each rule, the difference, no answers."""
    from rich.table import Table
    from rich.text import Text

    from conductor.methods import label
    from conductor_kernel.text.display import visible_line

    rule_named = "our rule" if rule == "ours" else "the paper's rule"
    table = Table(title="Accuracy (%)", caption=f"correct/accuracy reported by {rule_named}")
    by_method = any(t.method for t in tallies)
    named = ("file", "task", "method") if by_method else ("file", "task")
    for column in (*named, "n", "paper rule", "ours", "Δ", "no answer"):
        table.add_column(column, justify="left" if column in named else "right")
    for t in tallies:
        delta = (t.ours_correct - t.paper_correct) * 100.0 / t.n if t.n else 0.0
        table.add_row(
            Text(visible_line(_short(t.file))),
            Text(visible_line(t.task)),
            *([Text(visible_line(label(t.method)))] if by_method else []),
            str(t.n),
            f"{t.paper_correct} = {_pct(t.accuracy('paper'))}",
            f"{t.ours_correct} = {_pct(t.accuracy('ours'))}",
            f"{delta:+.1f}",
            str(t.no_answer),
        )
    return table


def _short(path: str) -> str:
    parts = Path(path).parts
    return str(Path(*parts[-2:])) if len(parts) > 1 else path


def disagreement_lines(tallies: list[FileScore]) -> list[Text]:
    """One line per item the two rules judge differently, everything from the file
    shown as text with its control characters visible."""
    from rich.text import Text

    from conductor_kernel.text.display import visible_line

    lines = []
    for t in tallies:
        for d in t.disagreements:
            answer = "(none)" if d.answer is None else " ".join(d.answer.split())[:100]
            line = Text(
                f"{visible_line(_short(t.file))}:{d.item.line} "
                f"ours={MARKS[CORRECT if d.ours else WRONG]} "
                f"paper={MARKS[CORRECT if d.paper else WRONG]} "
                f"target={visible_line(repr(d.item.target))} "
                f"answer={visible_line(repr(answer))} "
            )
            lines.append(line.append(f"({visible_line(d.detail)})", style="dim"))
    return lines
