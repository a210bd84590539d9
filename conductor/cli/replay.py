"""`conductor replay FILE.jsonl...`: the paper's published runs through our conductor.

Prints one table row per file (records, same final answer, same expert calls, same
rounds, sandbox outputs identical to the recorded ones, retry-defect records, meta input
tokens without and with prompt caching), then each mismatch with its reason. `--json`
prints one JSON object per file instead.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from conductor.cli.json_out import json_text
from conductor.export.replay_tables import SHOWN_PER_KIND
from conductor_kernel.errors import UserFacingError

if TYPE_CHECKING:
    from rich.console import Console

    from conductor.replay.runner import FileReport, SandboxPool
    from conductor_kernel.interfaces import Sandbox

log = logging.getLogger("conductor")


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
        from conductor_kernel.interfaces import SandboxUnavailable

        raise SandboxUnavailable(f"sandbox {name!r} cannot run here: {why_not}")
    return name, lambda: open_sandbox(name)


def run_replay(args: argparse.Namespace) -> int:
    from rich.console import Console

    from conductor.export.replay_tables import (
        baseline_markdown,
        baseline_table,
        markdown_table,
        print_mismatches,
        summary_table,
    )
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
