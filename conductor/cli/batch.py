"""`conductor batch TASKFILE`: every item of a task file through the conductor.

Builds the batch from flags (spec, items, models, notebook, sandbox), hands it to
`BatchRunner`, shows a progress bar on a terminal, and writes and prints the report.
`--replay` reads a published transcript file instead and answers each item from its
own record (offline). See docs/batch.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from conductor.cli.batch_shared import print_report, task_items, task_spec, warn
from conductor.cli.progress import Progress
from conductor.config.flags import add_setting_flags, settings_from_args
from conductor_kernel.errors import ConfigError
from conductor_kernel.text.counts import plural

if TYPE_CHECKING:  # what a batch needs is imported when it runs: `--help` stays quick
    from conductor.batch.setup import BatchSetup
    from conductor.batch.store import BatchFolder
    from conductor.config import Settings
    from conductor.tasks.files import TaskItem
    from conductor.tasks.specs import TaskSpec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "batch",
        help="run every item of a task file (concurrent, resumable, scored)",
        description="Run a task file's items through the conductor. Re-running the same "
        "command resumes: finished items are skipped.",
    )
    p.add_argument(
        "task_file",
        metavar="TASKFILE",
        nargs="+",
        help="JSONL or CSV task file (several, with --methods: a suite of comparisons)",
    )
    p.add_argument("--task", help="built-in task name (default: from the file's name)")
    p.add_argument("--spec", help="task spec file (TOML or JSON: name, description, scorer)")
    p.add_argument("--description", help="rules put before each input (with --scorer)")
    p.add_argument("--scorer", help="scorer name for a task that is not built in")
    p.add_argument("--concurrency", type=int, default=4, help="items at once (default 4)")
    p.add_argument("--limit", type=int, help="only the first N items of the file")
    p.add_argument(
        "--learn-order",
        choices=("sequential", "concurrent"),
        default="concurrent",
        help="sequential: one item at a time in file order, each seeing the notes of all "
        "earlier items; concurrent (default): items learn as they finish",
    )
    p.add_argument(
        "--on-error",
        "--on-bad-line",
        dest="on_error",
        choices=("skip", "stop"),
        default="stop",
        help="a malformed task line stops the batch (default) or is skipped with a warning",
    )
    p.add_argument(
        "--retry-errors", action="store_true", help="re-run items that ended in a system error"
    )
    p.add_argument(
        "--replay",
        action="store_true",
        help="TASKFILE is a published transcript file: replay each record offline",
    )
    p.add_argument(
        "--ablation", nargs="?", type=int, const=0, metavar="SEED",
        help="A/B the notebook: learn on one split, test the other with recall on and off "
        "(same order; SEED picks the split, default 0); see docs/notebook.md",
    )  # fmt: skip
    p.add_argument(
        "--methods",
        metavar="A,B,...",
        help="compare methods: every item under each (same model, items and order), "
        "reported side by side against meta; `all` for the seven of Table 1 "
        "(see docs/methods.md)",
    )
    p.add_argument(
        "--with-notebook",
        action="store_true",
        help="with --methods: every method recalls and learns as configured "
        "(default: none does, so the comparison measures the methods)",
    )
    p.add_argument(
        "--replay-dir",
        metavar="DIR",
        help="with --methods: answer every run from the paper's published runs under DIR "
        "(with-python, without-python, baselines/METHOD), offline",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    # A batch learns into a notebook of its own unless told otherwise (conductor/batch/setup.py).
    add_setting_flags(p, notes={"notebook": "In a batch, empty means notebooks/batch-TASK.db."})
    from conductor.cli.ray import add_ray_options

    add_ray_options(p)
    p.set_defaults(handler=run_batch)


def run_batch(args: argparse.Namespace) -> int:
    if args.methods is not None:
        from conductor.cli.compare import run_comparisons

        return run_comparisons(args)
    for flag, given in (("--with-notebook", args.with_notebook), ("--replay-dir", args.replay_dir)):
        if given:
            raise ConfigError(f"{flag} goes with --methods (a comparison of methods)")
    if len(args.task_file) > 1:
        raise ConfigError(
            "several task files run as a suite of comparisons: add --methods (e.g. "
            "--methods all), or give one task file"
        )
    args.task_file = args.task_file[0]
    settings = settings_from_args(args)
    if settings.method not in ("meta", "meta-no-python"):
        if getattr(args, "ray", None) is not None:
            raise ConfigError("--ray runs meta-prompting only; choose --method meta")
        if args.replay or args.ablation is not None:
            raise ConfigError("--replay and --ablation run meta-prompting only; drop --method")
    if getattr(args, "ray", None) is not None:
        from conductor.cli.ray import run_ray_batch

        return run_ray_batch(args)
    from conductor.batch import session as batch_session
    from conductor.batch.setup import live_setup, replay_setup
    from conductor.batch.store import BatchFolder, batch_id

    if args.replay:
        settings = settings.model_copy(update={"recall": False, "learn": False})
    spec = task_spec(args)
    items = task_items(args)
    if args.ablation is not None:
        from conductor.batch.ablation import ablate_batch

        return ablate_batch(settings, spec, items, seed=args.ablation, as_json=args.json)
    folder_box: list[BatchFolder] = []

    def runs() -> Path:
        return folder_box[0].path / "runs"

    if args.replay:
        setup, items = replay_setup(settings, spec, items, runs, on_error=args.on_error, warn=warn)
    else:
        setup = live_setup(settings, spec, runs)
    concurrency = args.concurrency
    if settings.learn and args.learn_order == "sequential" and concurrency != 1:
        print("note: --learn-order sequential runs one item at a time", file=sys.stderr)
        concurrency = 1
    identity = batch_session.batch_identity(
        args, settings, spec, setup, learn_order=args.learn_order
    )
    folder = BatchFolder(batch_id(spec.name, identity), identity)
    folder_box.append(folder)
    folder.acquire()
    try:
        return _run(args, settings, spec, items, setup, folder, concurrency)
    finally:
        folder.release()


def _run(
    args: argparse.Namespace,
    settings: Settings,
    spec: TaskSpec,
    items: list[TaskItem],
    setup: BatchSetup,
    folder: BatchFolder,
    concurrency: int,
) -> int:
    from conductor.batch import session as batch_session
    from conductor.batch.drive import Driven, drive
    from conductor.batch.report import write_report
    from conductor.batch.runner import BatchRunner

    progress = Progress(enabled=not args.json and sys.stdout.isatty())
    driven: Driven[BatchRunner] = drive(
        folder, args, settings, spec, items, setup,
        concurrency=concurrency,
        progress=progress,
        announce=lambda runner, todo: (
            f"batch {folder.batch_id}: {plural(len(items), 'item')}, {runner.tally.done} finished "
            f"before, {len(todo)} to run at concurrency {concurrency} ({folder.path})"
        ),
    )  # fmt: skip
    report = batch_session.session_report(driven.session, args, spec, items, driven.runner.log)
    write_report(folder.path, report)
    print_report(report, as_json=args.json)
    return batch_session.exit_code(driven.outcome, report)
