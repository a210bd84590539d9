"""`conductor replay FILE.jsonl...`: the paper's published runs through our conductor.

Prints one table row per file (records, same final answer, same expert calls, same
rounds, sandbox outputs identical to the recorded ones, retry-defect records, meta input
tokens without and with prompt caching), then each mismatch with its reason. `--json`
prints one JSON object per file instead.
"""

from __future__ import annotations

import argparse
import logging
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from conductor.cli.json_out import json_text
from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:
    from rich.console import Console

    from conductor.replay.runner import FileReport, SandboxPool
from conductor_kernel.interfaces import Sandbox, SandboxUnavailable

log = logging.getLogger("conductor")
SHOWN_PER_KIND = 10


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay",
        help="replay published meta-prompting runs through our conductor and compare",
        description=(
            "Run every record of the paper's published transcripts through our conductor: "
            "the meta model and the experts answer from the record, the code Expert Python "
            "wrote runs again in our sandbox, and each outcome is compared with the record."
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE.jsonl", help="published transcript files")
    p.add_argument(
        "--method",
        metavar="NAME",
        help="the method the files' runs used (default: from each file's folder: "
        "with-python and without-python are meta, baselines/Standard is standard, ...)",
    )
    p.add_argument("--limit", type=int, help="replay only the first N records of each file")
    p.add_argument("--json", action="store_true", help="print one JSON object per file")
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print the summary as the Markdown table README.md shows",
    )
    p.add_argument(
        "--sandbox",
        default="auto",
        help="auto (docker, else bwrap, else the unsafe subprocess), docker, bwrap, "
        "subprocess, or none (run no code)",
    )
    p.add_argument("--jobs", type=int, default=2, help="records replayed at a time (default 2)")
    p.add_argument(
        "--show-mismatches",
        action="store_true",
        help=f"list every mismatch (default: at most {SHOWN_PER_KIND} of each kind per file)",
    )
    p.add_argument(
        "--min-fidelity",
        type=float,
        help="exit 1 when a file's share of records with the same answer and calls is lower",
    )
    p.set_defaults(handler=run_replay)


def sandbox_factory(name: str) -> tuple[str, Callable[[], Sandbox | None]]:
    """The backend to use and a function opening one; `auto` falls back to subprocess."""
    from sandbox.registry import open_sandbox, probe, resolve_name

    if name == "none":
        return "none", lambda: None
    if name == "auto":
        try:
            name = resolve_name("auto")
        except UserFacingError as exc:
            log.warning("no isolated sandbox here (%s); replaying code with the unsafe one", exc)
            name = "subprocess"
    why_not = probe(name)  # fail now, with the backend's own advice, not per record
    if why_not is not None:
        raise SandboxUnavailable(f"sandbox {name!r} cannot run here: {why_not}")
    return name, lambda: open_sandbox(name)


def run_replay(args: argparse.Namespace) -> int:
    from rich.console import Console

    from conductor.replay.runner import SandboxPool

    if args.limit is not None and args.limit < 1:
        raise UserFacingError("--limit must be at least 1")
    if args.jobs < 1:
        raise UserFacingError("--jobs must be at least 1")
    backend, factory = sandbox_factory(args.sandbox)
    errors = Console(stderr=True)
    console = Console(width=max(Console().width, 160))  # the table is wide; pipes get 80
    from conductor.methods import BASELINES

    pool = SandboxPool(factory)  # shared by all files: each sandbox starts once
    try:
        reports = _replay_all(args, pool, backend, errors)
    finally:
        pool.close()
    meta = [r for r in reports if r.method not in BASELINES]
    baselines = [r for r in reports if r.method in BASELINES]
    if args.markdown:
        print("\n\n".join(
            text for text in (
                markdown_table(meta) if meta else "",
                baseline_markdown(baselines) if baselines else "",
            ) if text
        ))  # fmt: skip
    elif not args.json:
        if meta:
            console.print(summary_table(meta))
        if baselines:
            console.print(baseline_table(baselines))
        for report in reports:
            print_mismatches(console, report, show_all=args.show_mismatches)
    if args.min_fidelity is not None and any(r.fidelity < args.min_fidelity for r in reports):
        return 1
    return 0


def _method(args: argparse.Namespace, path: str) -> str:
    from conductor.methods import check_method
    from conductor.replay.baselines import method_of_path

    return check_method(args.method) if args.method else (method_of_path(path) or "meta")


def _replay_all(
    args: argparse.Namespace, pool: SandboxPool, backend: str, errors: Console
) -> list[FileReport]:
    from rich.markup import escape

    from conductor.methods import BASELINES
    from conductor.replay.baselines import replay_baseline_file
    from conductor.replay.runner import replay_file
    from conductor_kernel.text.display import visible_line

    methods = {path: _method(args, path) for path in args.files}  # refuse a bad name first
    reports = []
    for path in args.files:
        method = methods[path]
        baseline = method in BASELINES
        if not args.json:
            how = f"method {method}" if baseline else f"sandbox: {backend}"
            errors.print(
                f"[dim]replaying {escape(visible_line(path))} ({how})...[/]",
                highlight=False,
                soft_wrap=True,
            )
        if baseline:
            report = replay_baseline_file(path, method, limit=args.limit, jobs=args.jobs)
        else:
            report = replay_file(path, pool, limit=args.limit, jobs=args.jobs)
            report.method = method
        if report.read_problem:
            from rich.text import Text

            warning = Text("warning: ", style="yellow").append(
                f"{visible_line(report.read_problem)} "
                f"(replayed the {report.records} records before it)"
            )
            errors.print(warning, highlight=False, soft_wrap=True)
        if args.json:
            print(json_text(report.to_dict(), ensure_ascii=False), flush=True)
        reports.append(report)
    return reports


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
