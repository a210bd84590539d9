"""A replay of the published runs, as tables: the terminal's (rich) and README.md's
(Markdown), for meta-prompting's files and the baselines', and each file's mismatches.
`conductor replay` prints them; the figures come from conductor/replay/runner.py.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from conductor.replay.runner import FileReport

SHOWN_PER_KIND = 10  # mismatches listed of each kind unless all are asked for


def summary_table(reports: list[FileReport]) -> object:
    from rich.table import Table
    from rich.text import Text

    from conductor_kernel.text.display import visible_line

    table = Table(
        title="Replay of published runs through our conductor",
        caption="uncached: meta input tokens not served from a prompt cache (estimates)",
    )
    columns: tuple[str, ...] = (
        "file",
        "records",
        "same answer",
        "same calls",
        "answer+calls",
        "same rounds",
    )
    columns += ("sandbox same", "quoted same", "retry defect", "input tokens", "uncached", "s")
    for column in columns:
        table.add_column(column, justify="left" if column == "file" else "right")
    for r in reports:
        table.add_row(
            Text(visible_line(_task(r))),
            str(r.records),
            str(r.same_final_answer),
            str(r.same_expert_calls),
            f"{r.same_answer_and_calls} ({100 * r.fidelity:.1f}%)",
            str(r.same_rounds),
            f"{r.sandbox_outputs_identical}/{r.sandbox_compared}",
            f"{r.quoted_identical}/{r.quoted_rounds}",
            f"{r.retry_defect_records} ({r.retry_defect_faithful} same)",
            f"{r.input_tokens:,}",
            f"{r.input_tokens_cached:,}",
            f"{r.duration_s:.0f}",
        )
    return table


MARKDOWN_COLUMNS = (
    "file",
    "records",
    "same answer",
    "same calls",
    "same answer + calls",
    "same rounds",
    "sandbox identical / runs",
    "quoted expert outputs identical / rounds",
    "retry-defect records (of them faithful)",
    "meta input tokens, no caching",
    "with caching (uncached part)",
    "ratio",
)


def markdown_table(reports: list[FileReport]) -> str:
    """The summary as README.md's replay table (`conductor replay ... --markdown`)."""
    lines = [
        "| " + " | ".join(MARKDOWN_COLUMNS) + " |",
        "| --- |" + " ---: |" * (len(MARKDOWN_COLUMNS) - 1),
    ]
    for r in reports:
        defect = (
            f"{r.retry_defect_records} ({r.retry_defect_faithful})"
            if r.retry_defect_records
            else "0"
        )
        ratio = r.input_tokens_cached / r.input_tokens if r.input_tokens else 0.0
        cells = [
            r.file.rsplit("/", 1)[-1].removesuffix(".jsonl"),
            str(r.records),
            str(r.same_final_answer),
            str(r.same_expert_calls),
            f"{r.same_answer_and_calls} ({100 * r.fidelity:.1f}%)",
            str(r.same_rounds),
            f"{r.sandbox_outputs_identical}/{r.sandbox_runs}",
            f"{r.quoted_identical}/{r.quoted_rounds}",
            defect,
            f"{r.input_tokens:,}",
            f"{r.input_tokens_cached:,}",
            f"{ratio:.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _task(report: FileReport) -> str:
    return report.file.rsplit("/", 1)[-1].removesuffix(".jsonl")


def baseline_table(reports: list[FileReport]) -> object:
    from rich.table import Table
    from rich.text import Text

    from conductor.methods import label
    from conductor_kernel.text.display import visible_line

    table = Table(
        title="Replay of published baseline runs through our methods",
        caption="same answer: the final answer our method took from the recorded turns",
    )
    for column in ("method", "task", "records", "same answer", "same turns", "s"):
        table.add_column(column, justify="left" if column in ("method", "task") else "right")
    for r in reports:
        table.add_row(
            label(r.method),
            Text(visible_line(_task(r))),
            str(r.records),
            f"{r.same_final_answer} ({_share(r.same_final_answer, r.records)})",
            str(r.same_rounds),
            f"{r.duration_s:.1f}",
        )
    return table


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def baseline_markdown(reports: list[FileReport]) -> str:
    """Methods as rows, tasks as columns: records whose final answer and number of
    turns are the record's, of all (README.md's baseline parity table)."""
    from conductor.methods import METHODS, label

    tasks = list(dict.fromkeys(_task(r) for r in reports))
    methods = [m for m in METHODS if any(r.method == m for r in reports)]
    cells = {(r.method, _task(r)): r for r in reports}
    lines = [
        "| method | " + " | ".join(tasks) + " | all |",
        "| --- |" + " ---: |" * (len(tasks) + 1),
    ]
    for method in methods:
        row = [label(method)]
        same = total = 0
        for task in tasks:
            r = cells.get((method, task))
            if r is None:
                row.append("-")
                continue
            both = r.records - len(_differing(r))
            same, total = same + both, total + r.records
            row.append(f"{both}/{r.records}")
        row.append(f"{same:,}/{total:,} ({_share(same, total)})")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _differing(report: FileReport) -> set[int]:
    """Lines whose answer or number of turns differs (or that did not replay)."""
    kinds = ("final_answer", "rounds", "replay_error")
    return {m.line for m in report.mismatches if m.kind in kinds}


def print_mismatches(console: Console, report: FileReport, *, show_all: bool) -> None:
    if not report.mismatches:
        return
    from rich.text import Text

    from conductor_kernel.text.display import visible_line

    name = report.file.rsplit("/", 1)[-1]
    kinds = Counter(m.kind for m in report.mismatches)
    counts = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    console.print(Text("\n").append(visible_line(name), style="bold").append(f": {counts}"))
    shown: Counter[str] = Counter()
    for m in report.mismatches:
        shown[m.kind] += 1
        if show_all or shown[m.kind] <= SHOWN_PER_KIND:
            # The detail quotes the model's and the record's text: shown as text, visible.
            line = Text(f"  line {m.line} ").append(m.kind, style="cyan")
            console.print(
                line.append(f": {visible_line(m.detail)}"), highlight=False, soft_wrap=True
            )
    hidden = sum(max(0, n - SHOWN_PER_KIND) for n in kinds.values())
    if hidden and not show_all:
        console.print(f"  ... {hidden} more (--show-mismatches lists them all)")
