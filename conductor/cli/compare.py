"""`conductor batch FILE... --methods A,B,...`: methods compared item by item, and a suite.

Each task file becomes one comparison batch (conductor/batch/compare.py): its own folder,
resumable like any batch, with report.json, report.md and the comparison printed. With
several task files the command ends with the suite's table: tasks as rows, methods as
columns, a macro-average row (conductor/export/suite.py).
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

from conductor.batch import session as batch_session
from conductor.batch.compare import (
    Comparison,
    comparison_identity,
    live_comparison,
    replay_comparison,
)
from conductor.batch.compare_report import comparison_report, render_comparison
from conductor.batch.compare_text import MethodTally, terminal_text
from conductor.batch.drive import drive
from conductor.batch.records import ItemRecord
from conductor.batch.report import write_report
from conductor.batch.runner import BatchRunner
from conductor.batch.setup import BatchSetup
from conductor.batch.store import BatchFolder, batch_id
from conductor.cli.batch_shared import task_items, task_spec
from conductor.cli.json_out import json_text
from conductor.cli.progress import Progress
from conductor.config import Settings
from conductor.config.flags import settings_from_args
from conductor.export.suite import SuiteTable, render_markdown, rich_table
from conductor.methods import parse_methods
from conductor.tasks.specs import TaskSpec
from conductor_kernel.errors import ConfigError
from conductor_kernel.text.counts import plural


def _refuse_combinations(args: argparse.Namespace, methods: list[str]) -> None:
    if getattr(args, "ray", None) is not None:
        raise ConfigError("--methods runs on this machine; drop --ray for a comparison")
    if args.ablation is not None:
        raise ConfigError("--ablation compares the notebook, --methods the methods: pick one")
    if args.replay:
        raise ConfigError(
            "--replay reads one published file; a comparison replays from the folder of "
            "published runs: --replay-dir ../shared/data/meta-prompting/transcripts"
        )
    if getattr(args, "method", None):
        raise ConfigError("--method names one method; with --methods, list them all there")
    python = getattr(args, "run.python", None)
    if python is False and "meta" in methods and not args.replay_dir:
        raise ConfigError(
            "--no-python with --methods: name meta-no-python in --methods instead of meta"
        )


def run_comparisons(args: argparse.Namespace) -> int:
    methods = parse_methods(args.methods)
    _refuse_combinations(args, methods)
    settings = settings_from_args(args)
    if args.replay_dir and not Path(args.replay_dir).is_dir():
        raise ConfigError(f"--replay-dir {args.replay_dir}: no such folder")
    files = list(args.task_file)
    reports: list[dict[str, Any]] = []
    code = 0
    for path in files:
        one = copy.copy(args)
        one.task_file = path
        report, rc = _compare(one, settings, task_spec(one), methods, quiet=len(files) > 1)
        reports.append(report)
        code = max(code, rc)
    if len(files) > 1:
        table = suite_table(reports)
        if args.json:
            print(json_text({"suite": table.to_dict(), "comparisons": reports}))
        else:
            from rich.console import Console

            console = Console()
            if console.is_terminal:
                console.print(rich_table(table))
            else:
                print(render_markdown(table))
    return code


def suite_table(reports: list[dict[str, Any]]) -> SuiteTable:
    """Each comparison's accuracies as one row of the suite."""
    table = SuiteTable(
        "Accuracy (%) by method",
        note="Each cell: correct over scored items of that task; the macro average weighs "
        "every task the same.",
    )
    for report in reports:
        for method in report["methods"]:
            acc = report["by_method"][method]["accuracy"]
            table.add(report["task"], method, acc["correct"], acc["scored"])
    return table


def _compare(
    args: argparse.Namespace,
    settings: Settings,
    spec: TaskSpec,
    methods: list[str],
    *,
    quiet: bool,
) -> tuple[dict[str, Any], int]:
    comparison = Comparison.of(task_items(args), methods)
    folder_box: list[BatchFolder] = []

    def runs() -> Path:
        return folder_box[0].path / "runs"

    if args.replay_dir:
        setup = replay_comparison(settings, spec, comparison, runs, Path(args.replay_dir))
    else:
        setup = live_comparison(settings, spec, comparison, runs, with_notebook=args.with_notebook)
    concurrency = args.concurrency
    if setup.notebook and settings.learn and args.learn_order == "sequential":
        concurrency = 1
    identity = comparison_identity(args, settings, spec, setup)
    folder = BatchFolder(batch_id(f"{spec.name}-compare", identity), identity)
    folder_box.append(folder)
    folder.acquire()
    try:
        return _run(args, settings, spec, comparison, setup, folder, concurrency, quiet=quiet)
    finally:
        folder.release()


def _run(
    args: argparse.Namespace,
    settings: Settings,
    spec: TaskSpec,
    comparison: Comparison,
    setup: BatchSetup,
    folder: BatchFolder,
    concurrency: int,
    *,
    quiet: bool,
) -> tuple[dict[str, Any], int]:
    so_far = MethodTally(comparison.methods)

    def by_method(record: ItemRecord | None) -> str:
        if record is not None:
            so_far.add(record)
        return so_far.text()

    def announce(runner: BatchRunner, todo: list[Any]) -> str:
        so_far.seed(r for key, r in runner.log.read().items() if key in comparison.pairs)
        return (
            f"comparison {folder.batch_id}: {plural(len(comparison.items), 'item')} x "
            f"{plural(len(comparison.methods), 'method')}, "
            f"{plural(runner.tally.done, 'run')} finished before, "
            f"{len(todo)} to run at concurrency {concurrency} ({folder.path})"
        )

    progress = Progress(enabled=not args.json and sys.stdout.isatty(), by_method=by_method)
    driven = drive(
        folder, args, settings, spec, comparison.run_items, setup,
        concurrency=concurrency,
        progress=progress,
        announce=announce,
        describe=comparison.describe,
        recorded={"methods": comparison.methods},
    )  # fmt: skip
    session, runner, outcome = driven.session, driven.runner, driven.outcome
    notebook = None
    if setup.notebook:
        notebook = {**session.notebook, "policy": "on for every method, as configured"}
    report = comparison_report(
        comparison,
        runner.log.read(),
        header={
            "batch_id": folder.batch_id,
            "folder": str(folder.path),
            "task": spec.name,
            "scorer": spec.scorer,
            "task_file": str(Path(args.task_file).resolve()),
            "model": setup.model_name,
            "replay": bool(args.replay_dir),
        },
        notebook=notebook,
        session=session.info,
    )
    write_report(folder.path, report, render=render_comparison)
    if args.json and not quiet:
        print(json_text(report, ensure_ascii=False))
    elif not args.json:
        print(terminal_text(report, width=_width()), end="")
    if outcome.user_interrupt:
        raise KeyboardInterrupt
    if outcome.stopped:
        from conductor.batch.runner import BatchStopped

        raise BatchStopped(
            f"comparison stopped: {outcome.stopped}. Fix that, then re-run the same command: "
            f"the {report['items']['pairs_finished']} finished runs are kept and skipped."
        )
    return report, exit_code(report)


def exit_code(report: dict[str, Any]) -> int:
    """0 when every run finished, 1 when some remain, 3 (as a plain batch's) when every
    run finished but some method had no answer graded: its figures measure nothing."""
    if report["items"]["pairs_finished"] != report["items"]["pairs"]:
        return 1
    empty = any(f.get("not_measured") for f in report["by_method"].values())
    return batch_session.NOTHING_SCORED if empty else 0


def _width() -> int:
    """The terminal's columns (80 when piped: a table that fits anywhere)."""
    import shutil

    return max(40, shutil.get_terminal_size((80, 24)).columns)
